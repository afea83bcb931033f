"""Every stop_reason is handled as the API docs say, end to end against the fake API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_interrupt_and_queue import assert_valid_history
from test_turn_basics import text, tool_use

MODEL = "claude-sonnet-4-5"  # a 200K window and 64K max output, in the catalog and the fake
MAX_OUTPUT = 64_000


def notices(tiller: Tiller, turn_id: str) -> list[str]:
    return [e["text"] for e in tiller.events_of("notice", turn_id)]


def cut_write(path: str) -> dict[str, Any]:
    """A response whose write_file call is cut off by max_tokens in the middle of its input."""
    call = tool_use("write_file", "toolu_w", path=path, content="x" * 400)
    return {"content": [text("Writing it now."), call], "cutOff": {"block": 1, "chars": 30}}


async def test_cut_off_tool_call_never_runs_is_retried_with_max_output_then_fails(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(model=MODEL, maxTokens=1024, permissionMode="acceptEdits")
    api.enqueue(cut_write("big.txt"), cut_write("big.txt"), {"content": [text("ok")]})
    ended = await tiller.run("write big.txt")
    assert ended["outcome"] == "failed" and ended["error"]["kind"] == "output_limit"
    assert not (workspace / "big.txt").exists()
    assert [r.body["max_tokens"] for r in api.message_requests()] == [1024, MAX_OUTPUT]
    restarts = tiller.events_of("stepRestarted", ended["turnId"])
    assert [r["reason"] for r in restarts] == ["output_limit"]
    finished = tiller.events_of("toolFinished", ended["turnId"])
    assert [f["status"] for f in finished] == ["error"]
    await tiller.run("try in parts")
    assert_valid_history(api)
    answered = api.message_requests()[-1].body["messages"][2]["content"][0]
    assert answered["tool_use_id"] == "toolu_w" and answered["is_error"] is True


async def test_cut_off_text_continues_once_then_ends_with_a_truncated_notice(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(model=MODEL)
    long = {"content": [text("A long answer " * 20)], "cutOff": {"block": 0, "chars": 100}}
    api.enqueue(long, long)
    ended = await tiller.run("tell me everything")
    assert ended["outcome"] == "completed"
    second = api.message_requests()[1].body["messages"]
    assert second[-2]["role"] == "assistant"
    assert "Continue exactly where you stopped" in second[-1]["content"][-1]["text"]
    assert any("truncated" in n for n in notices(tiller, ended["turnId"]))


async def test_refusal_ends_refused_and_the_refused_exchange_is_not_sent_again(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(model=MODEL)
    api.enqueue(
        {"content": [text("first answer")]},
        {
            "content": [text("I can't help with")],
            "stop_reason": "refusal",
            "stop_details": {"type": "refusal", "category": "cyber", "explanation": "Not this."},
        },
        {"content": [text("sure")]},
    )
    await tiller.run("a fine question")
    ended = await tiller.run("a refused question")
    assert ended["outcome"] == "refused"
    assert ended["refusal"] == {"category": "cyber", "explanation": "Not this."}
    await tiller.run("another question")
    messages = api.message_requests()[-1].body["messages"]
    assert "refused question" not in str(messages) and "I can't help" not in str(messages)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    entries = await tiller.request("tiller/session/transcript", {})
    assert "a refused question" in str(entries)  # the transcript keeps it


async def test_pause_turn_sends_the_content_back_and_continues(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"content": [text("Searching the web")], "stop_reason": "pause_turn"},
        {"content": [text("found it")]},
    )
    ended = await tiller.run("search")
    assert ended["outcome"] == "completed" and ended["final"] == "found it"
    continued = api.message_requests()[1].body["messages"]
    assert continued[-1]["role"] == "assistant"
    assert continued[-1]["content"][0]["text"] == "Searching the web"


async def test_unknown_stop_reason_completes_with_a_notice_naming_it(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue({"content": [text("hm")], "stop_reason": "something_new"})
    ended = await tiller.run("hi")
    assert ended["outcome"] == "completed"
    assert any("something_new" in n for n in notices(tiller, ended["turnId"]))


async def test_oversized_prompt_fails_clearly_and_the_session_stays_usable(
    start: Any, api: FakeMessagesAPI
) -> None:
    """Regression (issue 7.9): a 1 MB prompt made every later turn fail context_too_long."""
    tiller: Tiller = await start(model=MODEL)
    api.enqueue({"content": [text("first answer")]})
    await tiller.run("a normal question")
    huge = "word " * 200_000  # 1 MB: far over a 200K-token window
    ended = await tiller.run(huge, timeout=60)
    assert ended["outcome"] == "failed" and ended["error"]["kind"] == "context_too_long"
    assert "not kept" in ended["error"]["message"]
    api.enqueue({"content": [text("fine again")]})
    again = await tiller.run("a short question")
    assert again["outcome"] == "completed" and again["final"] == "fine again"
    messages = api.message_requests()[-1].body["messages"]
    assert len(str(messages)) < 10_000
    assert messages[-1]["content"][-1]["text"] == "a short question"
