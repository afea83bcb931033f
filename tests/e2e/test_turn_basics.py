"""A turn end to end: the real server over stdio, the real SDK against the fake API."""

from __future__ import annotations

from pathlib import Path

from fakeapi import FakeMessagesAPI
from harness import Tiller


def tool_use(name: str, tool_id: str, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


async def test_prompt_streams_text_and_completes(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [text("Hello from the model, streamed in pieces.")]})
    ended = await tiller.run("say hello")
    assert ended["outcome"] == "completed"
    assert ended["final"] == "Hello from the model, streamed in pieces."
    deltas = tiller.events_of("textDelta", ended["turnId"])
    assert len(deltas) > 1
    assert tiller.text_of(ended["turnId"]) == ended["final"]
    seqs = [e["seq"] for e in tiller.events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    request = api.message_requests()[0].body
    assert request["model"] == "claude-test-1"
    assert request["messages"][0]["role"] == "user"
    assert request["stream"] is True


async def test_read_tool_result_goes_back_to_the_model(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    api.enqueue(
        {"content": [text("Reading."), tool_use("read_file", "toolu_r1", path="notes.txt")]},
        {"content": [text("It says alpha and beta.")]},
    )
    ended = await tiller.run("what is in notes.txt?")
    assert ended["outcome"] == "completed"
    assert ended["trail"] == [{"name": "read_file", "status": "ok"}]
    second = api.message_requests()[1].body["messages"]
    result = second[-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_r1"
    assert "alpha" in str(result["content"])
    finished = tiller.events_of("toolFinished", ended["turnId"])
    assert finished[0]["status"] == "ok" and "beta" in finished[0]["output"]


async def test_state_notification_tracks_busy(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [text("ok")], "chunkDelay": 0.05})
    ended = await tiller.run("hi")
    busy = [s["busy"] for s in tiller.states]
    assert True in busy and busy[-1] is False
    state = await tiller.request("tiller/getState")
    assert state["busy"] is False and state["turnId"] == ended["turnId"]
    assert state["mode"] == "default" and state["model"] == "claude-test-1"
