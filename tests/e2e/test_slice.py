"""Slicing a session into a child: its first request is valid and holds what the spec says."""

from __future__ import annotations

from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_interrupt_and_queue import assert_valid_history
from test_turn_basics import text, tool_use


async def test_a_sliced_session_sends_kept_turns_the_summary_and_the_injected_message(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"content": [tool_use("read_file", "r1", path=".")]},
        {"content": [text("answer zero")]},
        {"content": [text("answer one")]},
        {"content": [text("answer two")]},
    )
    for n in range(3):
        await tiller.run(f"prompt {n}")
    parent = (await tiller.request("tiller/getState"))["sessionId"]
    api.enqueue({"content": [text("SUMMARY OF TURN ONE")]})  # the summary request
    state = await tiller.request(
        "tiller/session/slice", {"spec": "0:1, summarize:1:2:'the details', inject:'now test'"}
    )
    assert state["sessionId"] != parent and state["busy"] is False
    summary_request = api.message_requests()[-1].body
    assert "prompt 1" in summary_request["messages"][0]["content"][0]["text"]

    api.enqueue({"content": [text("child answer")]})
    await tiller.run("and go on")
    assert_valid_history(api)
    sent = api.message_requests()[-1].body["messages"]
    texts = [b.get("text", "") for m in sent for b in m["content"] if b.get("type") == "text"]
    joined = "\n".join(texts)
    assert texts[0] == "prompt 0" and "answer zero" in joined
    assert "Summary of turns 1–1 (the details):\n\nSUMMARY OF TURN ONE" in joined
    assert "now test" in joined and "prompt 2" not in joined and "answer two" not in joined
    assert any(b.get("type") == "tool_use" for m in sent for b in m["content"])
    listed = (await tiller.request("tiller/session/list"))["sessions"]
    child = next(s for s in listed if s["sessionId"] == state["sessionId"])
    assert child["parentId"] == parent


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [("0:4, bogus:1", "position 5"), ("0:9", "not within"), ("", "empty")],
)
async def test_a_bad_slice_spec_answers_32602_with_where(
    tiller: Tiller, api: FakeMessagesAPI, spec: str, fragment: str
) -> None:
    api.enqueue({"content": [text("hi")]})
    await tiller.run("one turn")
    before = await tiller.request("tiller/getState")
    with pytest.raises(JsonRpcException) as caught:
        await tiller.request("tiller/session/slice", {"spec": spec})
    assert caught.value.code == -32602 and fragment in str(caught.value)
    assert (await tiller.request("tiller/getState"))["sessionId"] == before["sessionId"]


async def test_slash_slice_switches_to_the_child(tiller: Tiller, api: FakeMessagesAPI) -> None:
    for n in range(2):
        api.enqueue({"content": [text(f"answer {n}")]})
        await tiller.run(f"prompt {n}")
    parent = (await tiller.request("tiller/getState"))["sessionId"]
    answer: dict[str, Any] = await tiller.prompt("/slice 1:, inject:'carry on'")
    assert answer["status"] == "handled" and "Sliced into session" in answer["message"]
    assert (await tiller.request("tiller/getState"))["sessionId"] != parent
