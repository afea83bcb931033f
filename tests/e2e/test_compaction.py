"""Context compaction: /compact on demand, on "prompt is too long", and between steps when the
last step filled most of the window."""

from __future__ import annotations

from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use

SUMMARY = "The user asked three questions about numbers; all were answered."


def is_summary_request(body: dict[str, Any]) -> bool:
    return "working memory" in str(body.get("system"))


def summary_or(answer: str) -> Any:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return {"content": [text(SUMMARY if is_summary_request(body) else answer)]}

    return respond


async def three_turns(tiller: Tiller, api: FakeMessagesAPI) -> None:
    for n in ("one", "two", "three"):
        api.enqueue({"content": [text(f"answer {n}")]})
        await tiller.run(f"question {n}")


async def test_compact_command_summarizes_older_turns_and_keeps_recent_ones(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    await three_turns(tiller, api)
    api.enqueue(summary_or("unused"))
    answer = await tiller.prompt("/compact")
    assert answer == {"status": "handled", "message": "Compacted the conversation."}
    summary_request = api.message_requests()[-1].body
    assert is_summary_request(summary_request)
    assert "question one" in str(summary_request["messages"])
    api.enqueue({"content": [text("answer four")]})
    await tiller.run("question four")
    messages = api.message_requests()[-1].body["messages"]
    first = messages[0]["content"]
    assert first[0]["text"].startswith("Summary of the earlier conversation")
    assert SUMMARY in first[0]["text"]
    assert "question one" not in str(messages) and "question two" in str(messages)
    assert messages[-1]["content"][-1]["text"] == "question four"


async def test_prompt_too_long_compacts_once_and_retries(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    await three_turns(tiller, api)
    too_long = {
        "error": {
            "status": 400,
            "type": "invalid_request_error",
            "message": "prompt is too long: 201000 tokens > 200000 maximum",
        }
    }
    api.enqueue(too_long, summary_or("unused"), {"content": [text("fits now")]})
    ended = await tiller.run("question four")
    assert ended["outcome"] == "completed" and ended["final"] == "fits now"
    notices = [e["text"] for e in tiller.events_of("notice", ended["turnId"])]
    assert any("Compacting" in n for n in notices)
    retried = api.message_requests()[-1].body["messages"]
    assert retried[0]["content"][0]["text"].startswith("Summary of the earlier conversation")


async def test_still_too_long_after_compaction_fails_as_context_too_long(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    await three_turns(tiller, api)
    too_long = {
        "error": {"status": 400, "type": "invalid_request_error", "message": "prompt is too long"}
    }
    api.enqueue(too_long, summary_or("unused"), too_long)
    ended = await tiller.run("question four")
    assert ended["outcome"] == "failed" and ended["error"]["kind"] == "context_too_long"


async def test_threshold_compaction_between_steps_counts_cache_reads_and_answers_once(
    start: Any, api: FakeMessagesAPI
) -> None:
    """Regression (issue 8.4): compaction after a committed tool_use sent two results for it
    (a 400), and the trigger ignored cache reads so it almost never fired."""
    tiller = await start(model="claude-sonnet-4-5")  # a 200K window: compaction from 160K
    await three_turns(tiller, api)
    full = {"input_tokens": 500, "output_tokens": 50, "cache_read_input_tokens": 170_000}
    api.enqueue(
        {"content": [text("Listing."), tool_use("list_files", "t1")], "usage": full},
        summary_or("unused"),
        {"content": [text("all done")]},
    )
    ended = await tiller.run("question four")
    assert ended["outcome"] == "completed" and ended["final"] == "all done"
    notices = [e["text"] for e in tiller.events_of("notice", ended["turnId"])]
    assert any("Compacting the conversation" in n for n in notices)
    requests = api.message_requests()
    assert is_summary_request(requests[-2].body)
    messages = requests[-1].body["messages"]
    assert messages[0]["content"][0]["text"].startswith("Summary of the earlier conversation")
    results = [b for m in messages for b in m["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["t1"] and "is_error" not in results[0]
    assert all(r.status != 400 for r in api.requests)
