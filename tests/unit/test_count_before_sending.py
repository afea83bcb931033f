"""Counting before sending (issue 18.5): the rule that decides when to count, the count_tokens
call (through the real SDK against the fake, docs: build-with-claude/token-counting), and the
loop compacting on a count before the request instead of after a 400."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from fakeapi import FakeMessagesAPI, prompt_tokens
from loop_harness import SPEC, Host, Provider, run_turn
from tiller.core.turn import compaction
from tiller.core.turn.outcomes import Completed
from tiller.core.turn.step_stream import COUNT_SHARE, may_not_fit
from tiller.model.anthropic_provider import AnthropicClient
from tiller.model.history import Message, text_block
from tiller.model.models import resolve
from tiller.model.provider import (
    CountUnsupported,
    ModelRequest,
    ScriptedProvider,
    api_params,
    count_params,
)
from tiller.model.usage import NO_USAGE, ContextUse
from tiller.protocol import Thinking

MODEL = "claude-sonnet-4-5"
THRESHOLD = 160_000


# --- the rule ---------------------------------------------------------------------------------


def test_a_small_addition_to_a_known_context_is_not_counted() -> None:
    assert not may_not_fit(10_000, 3_500, 10**9, THRESHOLD)


def test_a_known_context_near_the_threshold_is_counted() -> None:
    near = int(COUNT_SHARE * THRESHOLD)
    assert may_not_fit(near, 0, 0, THRESHOLD)
    assert not may_not_fit(near - 1_000, 3_500 - 1, 0, THRESHOLD)
    assert may_not_fit(near - 1_000, 3_500, 0, THRESHOLD)


def test_an_unknown_context_is_estimated_from_the_whole_prompt() -> None:
    assert not may_not_fit(None, 0, 35_000, THRESHOLD)
    assert may_not_fit(None, 0, int(COUNT_SHARE * THRESHOLD * 3.5), THRESHOLD)


# --- the provider call ------------------------------------------------------------------------


def request() -> ModelRequest:
    tool = {"name": "probe", "description": "Probe.", "input_schema": {"type": "object"}}
    return ModelRequest(
        model=MODEL,
        system="You are a test.",
        tools=(tool,),
        messages=(Message("user", (text_block("hello " * 500),)),),
        max_tokens=None,
        thinking=Thinking(True, 2048),
    )


def test_count_params_are_the_request_params_the_endpoint_takes() -> None:
    params = count_params(request(), resolve(MODEL))
    full = api_params(request(), resolve(MODEL))
    assert "max_tokens" not in params and "stream" not in params
    assert params == {k: full[k] for k in ("model", "system", "messages", "tools", "thinking")}


@pytest_asyncio.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI(api_key="k") as fake:
        yield fake


async def test_the_client_counts_with_the_sdk_against_the_endpoint(api: FakeMessagesAPI) -> None:
    client = AnthropicClient(api.base_url, "k")
    counted = await client.count_tokens(request(), resolve(MODEL))
    (sent,) = api.count_requests()
    assert sent.path == "/v1/messages/count_tokens"
    assert "max_tokens" not in sent.body and "stream" not in sent.body
    assert counted == prompt_tokens(sent.body) > 500
    assert api.message_requests() == []


async def test_the_scripted_provider_cannot_count() -> None:
    with pytest.raises(CountUnsupported):
        await ScriptedProvider([]).count_tokens(request())


# --- the loop ---------------------------------------------------------------------------------


def earlier_turns() -> Host:
    host = Host()
    for n in ("one", "two"):
        host.append("user", [text_block(f"question {n}")])
        host.append("assistant", [text_block(f"answer {n}")])
    return host


async def test_a_count_over_the_threshold_compacts_before_the_request() -> None:
    window = SPEC.context_window
    host, provider = earlier_turns(), Provider(["text"], count=int(window * 0.95))
    _, outcome = await run_turn(host, provider, "question three", context_before=window * 85 // 100)
    assert isinstance(outcome, Completed)
    assert len(provider.counted) == 2  # the prompt, then the compacted one (for the meter)
    summary, answer = provider.requests
    assert summary.system == compaction.SUMMARY_SYSTEM
    assert answer.messages[0].content[0]["text"].startswith("Summary of the earlier")
    assert host.rewrites == 1
    # The meter: the count, before the step's usage (then the recount after compaction).
    assert host.usage[0] == (NO_USAGE, ContextUse(int(window * 0.95), window))
    metered = [context for usage, context in host.usage if usage == NO_USAGE]
    assert len(metered) == 2 and host.usage[-1][1] is not None


async def test_a_count_that_fits_sets_the_meter_and_sends() -> None:
    window = SPEC.context_window
    host, provider = earlier_turns(), Provider(["text"], count=int(window * 0.75))
    _, outcome = await run_turn(host, provider, "question three", context_before=window * 75 // 100)
    assert isinstance(outcome, Completed)
    assert len(provider.counted) == 1 and host.rewrites == 0
    assert [r.system for r in provider.requests] == ["You are a test."]
    assert host.usage[0] == (NO_USAGE, ContextUse(int(window * 0.75), window))


async def test_a_small_context_is_not_counted() -> None:
    host, provider = earlier_turns(), Provider(["text"], count=10**9)
    _, outcome = await run_turn(host, provider, "question three", context_before=2_000)
    assert isinstance(outcome, Completed)
    assert provider.counted == [] and host.rewrites == 0


async def test_a_provider_that_cannot_count_leaves_the_400_path() -> None:
    window = SPEC.context_window
    host, provider = earlier_turns(), Provider(["too_long", "text"])
    _, outcome = await run_turn(host, provider, "question three", context_before=window)
    assert isinstance(outcome, Completed)
    assert host.rewrites == 1  # compacted after the 400, as before


async def test_a_step_over_the_threshold_compacts_on_its_usage_without_counting() -> None:
    host, provider = earlier_turns(), Provider(["big", "text"], count=1_000)
    _, outcome = await run_turn(host, provider, "question three")
    assert isinstance(outcome, Completed)
    assert provider.counted == [] and host.rewrites == 1
