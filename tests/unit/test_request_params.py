"""Requests are shaped per model: thinking form, effort, max_tokens, no sampling parameters,
and cache breakpoints (at most 4, placed so a long step still reads the earlier prefix)."""

from __future__ import annotations

from typing import Any

import pytest

from tiller.model.history import Message, text_block, tool_result_block
from tiller.model.models import resolve
from tiller.model.provider import CACHE_LOOKBACK_BLOCKS, ModelRequest, api_params
from tiller.protocol import Thinking

SAMPLING = {"temperature", "top_p", "top_k"}


def request(
    model: str,
    thinking: Thinking,
    messages: tuple[Message, ...] = (),
    max_tokens: int | None = None,
) -> ModelRequest:
    return ModelRequest(
        model=model,
        system="system",
        tools=({"name": "read_file", "input_schema": {"type": "object"}},),
        messages=messages or (Message("user", (text_block("hi"),)),),
        max_tokens=max_tokens,
        thinking=thinking,
    )


def params(model: str, thinking: Thinking, max_tokens: int | None = None) -> dict[str, Any]:
    return api_params(request(model, thinking, max_tokens=max_tokens), resolve(model))


def test_claude_5_gets_adaptive_thinking_with_effort_and_no_budget() -> None:
    sent = params("claude-sonnet-5-5", Thinking(True, None, "high"))
    assert sent["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert sent["output_config"] == {"effort": "high"}
    assert sent["max_tokens"] == 128_000  # the model's max output by default
    assert not SAMPLING & sent.keys()


def test_a_budget_on_an_adaptive_model_becomes_an_effort() -> None:
    sent = params("claude-opus-5-5", Thinking(True, 2000))
    assert sent["thinking"]["type"] == "adaptive" and "budget_tokens" not in sent["thinking"]
    assert sent["output_config"] == {"effort": "low"}
    assert "output_config" not in params("claude-opus-5-5", Thinking(True))  # model default


def test_4_6_models_get_the_adaptive_form_without_display() -> None:
    sent = params("claude-sonnet-4-6", Thinking(True, None, "medium"))
    assert sent["thinking"] == {"type": "adaptive"}
    assert sent["output_config"] == {"effort": "medium"}


def test_4_5_models_get_the_budget_form_within_max_tokens() -> None:
    sent = params("claude-sonnet-4-5", Thinking(True, 2048), max_tokens=8192)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert sent["max_tokens"] == 8192 and "output_config" not in sent
    # an effort alone maps to a budget, clamped below max_tokens
    assert params("claude-haiku-4-5", Thinking(True, None, "max"), max_tokens=8192)["thinking"] == {
        "type": "enabled",
        "budget_tokens": 8191,
    }
    assert params("claude-haiku-4-5", Thinking(True, None, "low"))["thinking"] == {
        "type": "enabled",
        "budget_tokens": 2048,
    }
    # no room for the minimum budget: thinking is left out rather than refused
    assert "thinking" not in params("claude-haiku-4-5", Thinking(True), max_tokens=1024)


def test_max_tokens_never_exceeds_the_models_max_output() -> None:
    assert params("claude-haiku-4-5", Thinking(), max_tokens=200_000)["max_tokens"] == 64_000
    assert params("my-proxy-model", Thinking())["max_tokens"] == 8192


@pytest.mark.parametrize(
    ("model", "off"),
    [
        ("claude-sonnet-5-5", {"thinking": {"type": "between_tools"}}),
        ("claude-sonnet-5", {"thinking": {"type": "disabled"}}),
        ("claude-opus-5-5", {}),  # always thinks: nothing to send
        ("claude-sonnet-4-5", {}),
        ("claude-sonnet-4-6", {}),
    ],
)
def test_thinking_off_is_said_the_way_each_model_takes_it(model: str, off: dict[str, Any]) -> None:
    sent = params(model, Thinking(False, 4096, "high"))
    assert {k: v for k, v in sent.items() if k in ("thinking", "output_config")} == off


def test_a_model_without_thinking_gets_none() -> None:
    sent = params("claude-3-5-haiku", Thinking(True, 2048))
    assert "thinking" not in sent and "output_config" not in sent


# --- cache breakpoints ----------------------------------------------------------------------


def breakpoints(sent: dict[str, Any]) -> list[str]:
    """Where cache_control sits: 'tools', 'system', or 'm<i>.<j>' (message i, block j)."""
    found = ["tools" for t in sent["tools"] if "cache_control" in t]
    found += ["system" for b in sent["system"] if "cache_control" in b]
    for i, message in enumerate(sent["messages"]):
        found += [f"m{i}.{j}" for j, b in enumerate(message["content"]) if "cache_control" in b]
    return found


def step(calls: int, n: int) -> tuple[Message, Message]:
    ids = [f"toolu_{n}_{k}" for k in range(calls)]
    uses = tuple({"type": "tool_use", "id": i, "name": "read_file", "input": {}} for i in ids)
    results = tuple(tool_result_block(i, "ok", is_error=False) for i in ids)
    return Message("assistant", uses), Message("user", results)


def history(*calls_per_step: int) -> tuple[Message, ...]:
    messages = [Message("user", (text_block("go"),))]
    for n, calls in enumerate(calls_per_step):
        messages.extend(step(calls, n))
    return tuple(messages)


def test_short_steps_use_three_breakpoints_prefix_and_tail() -> None:
    messages = history(2, 3)
    sent = api_params(request("claude-sonnet-5-5", Thinking(), messages))
    assert breakpoints(sent) == ["tools", "system", "m4.2"]


def test_a_step_of_more_than_20_blocks_keeps_the_previous_tail_as_a_breakpoint() -> None:
    many = CACHE_LOOKBACK_BLOCKS // 2 + 1  # tool_use + tool_result blocks: over 20
    messages = history(2, many)
    sent = api_params(request("claude-sonnet-5-5", Thinking(), messages))
    last = len(messages) - 1
    # the previous request ended with message 2 (its last block was that request's tail)
    assert breakpoints(sent) == ["tools", "system", "m2.1", f"m{last}.{many - 1}"]
    assert len(breakpoints(sent)) <= 4


def test_breakpoints_never_exceed_four_and_never_touch_the_history() -> None:
    for shape in [(), (1,), (30,), (30, 30), (1, 30, 1)]:
        messages = history(*shape)
        sent = api_params(request("claude-opus-5-5", Thinking(True), messages))
        assert len(breakpoints(sent)) <= 4
    assert all("cache_control" not in b for m in messages for b in m.content)


def test_the_one_hour_cache_ttl_marks_every_breakpoint() -> None:
    messages = history(1, 2)
    five = api_params(request("claude-sonnet-5-5", Thinking(), messages))
    hour = api_params(request("claude-sonnet-5-5", Thinking(), messages), None, "1h")

    def marks(sent: dict[str, Any]) -> list[Any]:
        blocks = [*sent["tools"], *sent["system"]]
        blocks += [b for m in sent["messages"] for b in m["content"] if isinstance(b, dict)]
        return [b["cache_control"] for b in blocks if "cache_control" in b]

    assert marks(five) and all(m == {"type": "ephemeral"} for m in marks(five))
    assert len(marks(hour)) == len(marks(five))
    assert all(m == {"type": "ephemeral", "ttl": "1h"} for m in marks(hour))
