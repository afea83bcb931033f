"""A prompt sent after a turn that stopped between its tool results and the model's answer to
them (a 529, a 500 or a cut stream, and the user interrupting while the step waits to retry)
reaches the model as the user's own words (issue 36: it was joined into the tool_result, so
the model took it for tool output and went on with the old task: 35 failed edits in a soak)."""

from __future__ import annotations

from typing import Any

import pytest

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_interrupt_and_queue import assert_valid_history
from test_turn_basics import text, tool_use

FAULTS: dict[str, dict[str, Any]] = {
    "529": {"error": {"status": 529, "type": "overloaded_error", "retryAfter": "5"}},
    "500": {"error": {"status": 500, "type": "api_error", "retryAfter": "5"}},
    "cut stream": {"content": [text("never seen")], "dropAfterEvents": 1},
}


def without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def answers(fault: dict[str, Any]) -> Any:
    """The model's side: the fault until the new question is asked (however many retries come
    before the interrupt lands), then a tool step and an answer."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        said = str(body["messages"])
        if "NEW QUESTION" not in said:
            return fault
        if "t2" not in said:
            return {"content": [tool_use("list_files", "t2")]}
        return {"content": [text("Answering the new question.")]}

    return answer


def sent_to_model(api: FakeMessagesAPI) -> list[list[Any]]:
    """The messages of every request to /v1/messages, failed ones included."""
    return [
        without_cache_control(r.body["messages"])
        for r in api.requests
        if (r.method, r.path) == ("POST", "/v1/messages")
    ]


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_the_next_prompt_is_the_users_own_text_after_the_results(
    tiller: Tiller, api: FakeMessagesAPI, fault: str
) -> None:
    api.enqueue(
        {"content": [text("Looking."), tool_use("list_files", "t1")]},
        *[answers(FAULTS[fault])] * 12,
    )
    started = await tiller.prompt("old task")
    turn = started["turnId"]
    await tiller.wait_for(
        lambda: any("retrying" in e["text"] for e in tiller.events_of("notice", turn)), 30
    )
    await tiller.request("tiller/interrupt")
    assert (await tiller.turn_end(turn))["outcome"] == "interrupted"
    sent_before = sent_to_model(api)[-1]  # the request the fault answered
    ended = await tiller.run("NEW QUESTION", timeout=30)
    assert ended["outcome"] == "completed" and ended["final"] == "Answering the new question."
    assert_valid_history(api)

    first, second = sent_to_model(api)[-2:]
    assert len(first) == len(sent_before)  # no message invented between them
    assert first[:-1] == sent_before[:-1]
    [result, *after] = first[-1]["content"]
    assert [result] == sent_before[-1]["content"]  # the results as sent: append-only
    assert after and all(b["type"] == "text" for b in after)
    assert after[-1]["text"] == "NEW QUESTION"  # the user's own words, last
    assert second[: len(first)] == first  # and so in the next request of the turn
