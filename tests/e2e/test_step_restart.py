"""Faults in the middle of a response restart the step (stepRestarted); failed prompts are
never merged; after an interrupt the next prompt follows the tool results as the user's own
text, led by a marker, and no other text ever does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_interrupt_and_queue import assert_valid_history
from test_turn_basics import text, tool_use
from tiller.model.history import UNANSWERED_RESULTS


@pytest_asyncio.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    """The fake, also refusing text right after a tool_result (the docs' warning), but for
    the marker that leads a prompt after results the model never answered."""
    async with FakeMessagesAPI(
        api_key="test-key",
        reject_text_after_tool_result=True,
        text_after_results_led_by=UNANSWERED_RESULTS,
    ) as fake:
        yield fake


async def test_mid_stream_overload_restarts_the_step_and_the_turn_completes(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {
            "content": [text("A first attempt that breaks off")],
            "midStreamError": {"afterEvents": 5, "type": "overloaded_error"},
        },
        {"content": [text("the whole answer")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed" and ended["final"] == "the whole answer"
    turn = [e for e in tiller.events if e["turnId"] == ended["turnId"]]
    kinds = [e["type"] for e in turn]
    restart = kinds.index("stepRestarted")
    assert turn[restart]["reason"] == "overloaded"
    assert "textDelta" in kinds[:restart] and "textDelta" in kinds[restart:]
    assert any("retrying this step" in e.get("text", "") for e in turn[:restart])
    first, second = api.message_requests()
    assert first.body["messages"] == second.body["messages"]  # the partial output is gone
    next_turn = await tiller.run("and then?")
    assert next_turn["outcome"] == "completed"
    history = api.message_requests()[-1].body["messages"]
    assert "breaks off" not in str(history)


async def test_dropped_stream_restarts_the_step(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue(
        {"content": [text("Words before the line goes dead")], "dropAfterEvents": 4},
        {"content": [text("back")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed" and ended["final"] == "back"
    reasons = [e["reason"] for e in tiller.events_of("stepRestarted", ended["turnId"])]
    assert reasons == ["connection"]


async def test_overload_the_api_says_not_to_retry_is_not_retried(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"error": {"status": 529, "type": "overloaded_error", "shouldRetry": False}},
        {"content": [text("never asked")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "failed" and ended["error"]["kind"] == "overloaded"
    assert ended["error"]["retryable"] is False
    assert tiller.events_of("stepRestarted", ended["turnId"]) == []
    assert len([r for r in api.requests if r.path == "/v1/messages"]) == 1


async def test_a_failed_prompt_is_not_merged_with_the_next_one(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"error": {"status": 400, "type": "invalid_request_error", "message": "bad thing"}},
        {"content": [text("answer")]},
    )
    failed = await tiller.run("first prompt")
    assert failed["outcome"] == "failed"
    await tiller.run("second prompt")
    messages = api.message_requests()[-1].body["messages"]
    assert messages == [{"role": "user", "content": [
        {"type": "text", "text": "second prompt", "cache_control": {"type": "ephemeral"}}
    ]}]  # fmt: skip


async def test_prompt_after_an_interrupted_tool_call_follows_the_results_as_the_users_text(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="acceptEdits")

    async def allow(params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    tiller.on_confirm = allow
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch started; sleep 30")]},
        {"content": [text("understood")]},
    )
    started = await tiller.prompt("run it")
    await tiller.wait_for(lambda: (workspace / "started").exists())
    await tiller.request("tiller/interrupt")
    ended = await tiller.turn_end(started["turnId"], timeout=10)
    assert ended["outcome"] == "interrupted"
    again = await tiller.run("never mind, explain instead")
    assert again["outcome"] == "completed"  # the fake refuses any other text after results
    assert_valid_history(api)
    last = api.message_requests()[-1].body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text", "text"]
    assert "never mind" not in str(last[0]["content"])  # not taken for the command's output
    assert [b["text"] for b in last[1:]] == [UNANSWERED_RESULTS, "never mind, explain instead"]
