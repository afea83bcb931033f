"""Counting before sending (issue 18.5), through the real server and SDK against the fake: a
prompt that would not fit is counted (POST /v1/messages/count_tokens, docs:
build-with-claude/token-counting), compacted before the first request (no 400), and the
context meter shows the count before the response arrives."""

from __future__ import annotations

from typing import Any

from fakeapi import FakeMessagesAPI, prompt_tokens
from harness import Tiller
from test_compaction import is_summary_request, summary_or
from test_turn_basics import text

MODEL = "claude-sonnet-4-5"  # a 200K window in the fake: compaction from 160K
WINDOW = 200_000
THRESHOLD = 160_000


async def three_long_turns(tiller: Tiller, api: FakeMessagesAPI) -> None:
    for n in ("one", "two", "three"):  # ~40K tokens each in the fake's count
        api.enqueue({"content": [text(f"answer {n}")]})
        await tiller.run(f"question {n} " + "x" * 160_000)


def no_message_refused(api: FakeMessagesAPI) -> bool:
    return all(r.status != 400 for r in api.requests if r.path == "/v1/messages")


async def test_a_count_over_the_threshold_compacts_before_sending_and_sets_the_meter(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller = await start(model=MODEL)
    await three_long_turns(tiller, api)
    assert api.count_requests() == []  # far from full: not counted
    sent_before = len(api.message_requests())
    api.enqueue(summary_or("unused"), summary_or("it fits"))
    ended = await tiller.run("question four " + "y" * 200_000)  # ~172K: over the threshold
    assert ended["outcome"] == "completed" and ended["final"] == "it fits"
    assert all(r.status != 400 for r in api.requests)

    first_count, recount = api.count_requests()
    assert THRESHOLD < prompt_tokens(first_count.body) < WINDOW
    summary, answer = api.message_requests()[sent_before:]
    assert is_summary_request(summary.body)  # compacted before the turn's first request
    assert answer.body["messages"][0]["content"][0]["text"].startswith("Summary of the earlier")
    assert "question three" not in str(answer.body["messages"])

    # The meter: both counts were published, in order, before the response's usage was.
    contexts = [s.get("context") for s in tiller.states]
    counted = {"usedTokens": prompt_tokens(first_count.body), "windowTokens": WINDOW}
    compacted = {"usedTokens": prompt_tokens(recount.body), "windowTokens": WINDOW}
    assert contexts.index(counted) < contexts.index(compacted) < len(contexts) - 1
    assert contexts[-1]["usedTokens"] > compacted["usedTokens"]


async def test_a_prompt_over_the_window_is_compacted_before_the_first_request(
    start: Any, api: FakeMessagesAPI
) -> None:
    """The fake refuses to count a prompt over the window ("prompt is too long"): that refusal
    compacts too, and the messages request never sees a 400."""
    tiller = await start(model=MODEL)
    await three_long_turns(tiller, api)
    sent_before = len(api.message_requests())
    api.enqueue(summary_or("unused"), summary_or("it fits"))
    ended = await tiller.run("question four " + "y" * 360_000)  # ~212K: over the window
    assert ended["outcome"] == "completed" and ended["final"] == "it fits"
    assert no_message_refused(api)
    refused = [r for r in api.requests if r.status == 400]
    assert [r.path for r in refused] == ["/v1/messages/count_tokens"]
    summary, answer = api.message_requests()[sent_before:]
    assert is_summary_request(summary.body)
    assert answer.body["messages"][0]["content"][0]["text"].startswith("Summary of the earlier")
    (recount,) = api.count_requests()
    compacted = {"usedTokens": prompt_tokens(recount.body), "windowTokens": WINDOW}
    assert compacted in [s.get("context") for s in tiller.states]
