"""Model API failures end as the right outcome and leave a valid history."""

from __future__ import annotations

from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_interrupt_and_queue import assert_valid_history
from test_turn_basics import text, tool_use


async def test_mid_stream_overloaded_error_after_two_step_retries_fails_and_keeps_streamed_text(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    overloaded = {
        "content": [text("Half of an answer that will be cut off here")],
        "midStreamError": {"afterEvents": 5, "type": "overloaded_error", "message": "Overloaded"},
    }
    api.enqueue(overloaded, overloaded, overloaded, {"content": [text("recovered")]})
    ended = await tiller.run("go")
    restarts = tiller.events_of("stepRestarted", ended["turnId"])
    assert [r["reason"] for r in restarts] == ["overloaded", "overloaded"]
    assert ended["outcome"] == "failed"
    assert ended["error"]["kind"] == "overloaded" and ended["error"]["retryable"] is True
    assert "Overloaded" in ended["error"]["message"]
    again = await tiller.run("continue")
    assert again["outcome"] == "completed"
    assert_valid_history(api)
    messages = api.message_requests()[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0]["text"].startswith("Half of an answer")


async def test_rate_limit_then_success_retries_with_a_notice(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {
            "error": {
                "status": 429,
                "type": "rate_limit_error",
                "message": "slow down",
                "retryAfter": "1",
            }
        },
        {"content": [text("made it")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed" and ended["final"] == "made it"
    notices = [e["text"] for e in tiller.events_of("notice", ended["turnId"])]
    assert any("retrying in" in n for n in notices)


async def test_bad_api_key_fails_as_auth_without_retrying(start: Any, api: FakeMessagesAPI) -> None:
    tiller: Tiller = await start(
        provider={"kind": "anthropic", "baseUrl": api.base_url, "apiKey": "wrong-key"}
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "failed"
    assert ended["error"]["kind"] == "auth" and ended["error"]["retryable"] is False
    assert [r.status for r in api.requests if r.path == "/v1/messages"] == [401]


async def test_dropped_connection_after_a_tool_call_fails_as_connection_with_valid_history(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    dropped = {"content": [text("Partial words before the line goes dead")], "dropAfterEvents": 4}
    api.enqueue(
        {"content": [text("Let me look."), tool_use("list_files", "t1")]},
        dropped,
        dropped,
        dropped,  # the step is retried twice, then the turn fails
        {"content": [text("back")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "failed" and ended["error"]["kind"] == "connection"
    assert ended["trail"] == [{"name": "list_files", "status": "ok"}]
    again = await tiller.run("continue")
    assert again["outcome"] == "completed"
    assert_valid_history(api)


async def test_invalid_request_is_not_retryable(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue({"error": {"status": 400, "type": "invalid_request_error", "message": "bad thing"}})
    ended = await tiller.run("go")
    assert ended["error"]["kind"] == "invalid_request" and ended["error"]["retryable"] is False


async def test_prompt_too_long_is_context_too_long(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue(
        {
            "error": {
                "status": 400,
                "type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum",
            }
        }
    )
    ended = await tiller.run("go")
    assert ended["error"]["kind"] == "context_too_long"
