"""Sessions on disk: list, resume after a crash, fork, transcript pages, slash commands."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from fakeapi import FakeMessagesAPI
from harness import Tiller, stop_tiller
from test_interrupt_and_queue import assert_valid_history
from test_turn_basics import text, tool_use


def kill_9(tiller: Tiller) -> None:
    server = tiller.client._server
    assert server is not None
    server.send_signal(signal.SIGKILL)


async def test_kill_9_mid_command_loses_nothing_shown_and_resume_repairs_the_history(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    first: Tiller = await start()
    api.enqueue({"content": [text("The answer is 42.")]})
    done = await first.run("what is the answer?")

    async def allow(params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    first.on_confirm = allow
    api.enqueue(
        {
            "content": [
                text("Running it."),
                tool_use("bash", "b1", command="touch started; sleep 30"),
            ]
        }
    )
    started = await first.prompt("run the slow thing")
    await first.wait_for(lambda: (workspace / "started").exists())
    session_id = (await first.request("tiller/getState"))["sessionId"]
    kill_9(first)

    second: Tiller = await start()
    listed = (await second.request("tiller/session/list"))["sessions"]
    assert listed[0]["sessionId"] == session_id and listed[0]["title"] == "what is the answer?"
    assert listed[0]["turns"] == 1  # the second turn never ended
    state = await second.request("tiller/session/resume", {"sessionId": session_id})
    assert state["sessionId"] == session_id and state["busy"] is False
    api.enqueue({"content": [text("Picking up again.")]})
    await second.run("continue")
    assert_valid_history(api)
    messages = api.message_requests()[-1].body["messages"]
    assert messages[0]["content"][0]["text"] == "what is the answer?"
    assert messages[1]["content"][0]["text"] == "The answer is 42."
    assert messages[3]["content"][1]["id"] == "b1"  # the tool_use shown before the crash
    result = messages[4]["content"][0]
    assert result["tool_use_id"] == "b1"
    # The next prompt follows the results as the user's own text (led by a marker).
    assert result["content"] == "Interrupted by user"
    assert messages[4]["content"][-1]["text"] == "continue"
    transcript = (await second.request("tiller/session/transcript"))["entries"]
    # (the greeting's notices first: the test model is not in the catalog)
    transcript = [e for e in transcript if e["kind"] != "notice"]
    kinds = [e["kind"] for e in transcript]
    assert kinds[:3] == ["turnStarted", "assistantText", "turnEnded"]
    assert transcript[2]["turnId"] == done["turnId"]
    assert started["turnId"] in {e["turnId"] for e in transcript}


async def test_resume_restores_mode_model_thinking_and_todos(
    start: Any, api: FakeMessagesAPI
) -> None:
    first: Tiller = await start()
    board = [{"content": "a", "status": "in_progress", "activeForm": "Doing a"}]
    api.enqueue({"content": [tool_use("todo_write", "t1", todos=board)]}, {"content": [text("ok")]})
    await first.run("plan")
    await first.request("tiller/setMode", {"mode": "acceptEdits"})
    api.models.append("claude-other")  # setModel checks the id against the API's list
    await first.request("tiller/setModel", {"model": "claude-other"})
    session_id = (await first.request("tiller/getState"))["sessionId"]
    await first.request("tiller/session/new")
    state = await first.request("tiller/session/resume", {"sessionId": session_id})
    assert state["mode"] == "acceptEdits" and state["model"] == "claude-other"
    assert state["activeTodo"] is None  # idle: nothing is in progress
    assert (await first.request("tiller/getTodos"))["todos"] == board


async def test_fork_keeps_history_up_to_a_turn_and_names_its_parent(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue({"content": [text("one")]}, {"content": [text("two")]})
    first = await tiller.run("first")
    await tiller.run("second")
    parent = (await tiller.request("tiller/getState"))["sessionId"]
    child = await tiller.request("tiller/session/fork", {"turnId": first["turnId"]})
    assert child["sessionId"] != parent
    listed = {s["sessionId"]: s for s in (await tiller.request("tiller/session/list"))["sessions"]}
    assert listed[child["sessionId"]]["parentId"] == parent
    api.enqueue({"content": [text("three")]})
    await tiller.run("third")
    texts = [m["content"][0]["text"] for m in api.message_requests()[-1].body["messages"]]
    assert texts == ["first", "one", "third"]
    transcript = (await tiller.request("tiller/session/transcript"))["entries"]
    assert [e.get("prompt") for e in transcript if e["kind"] == "turnStarted"] == ["first", "third"]


async def test_transcript_comes_in_pages(tiller: Tiller, api: FakeMessagesAPI) -> None:
    for n in range(4):
        api.enqueue({"content": [text(f"answer {n}")]})
        await tiller.run(f"question {n}")
    page = await tiller.request("tiller/session/transcript", {"limit": 5})
    assert page["more"] is True and len(page["entries"]) == 5
    older = await tiller.request(
        "tiller/session/transcript", {"limit": 100, "before": page["entries"][0]["seq"]}
    )
    assert older["more"] is False
    everything = older["entries"] + page["entries"]
    greeting = sum(e["kind"] == "notice" for e in everything)  # the test model's notice
    assert [e["seq"] for e in everything] == list(range(1, 13 + greeting))


async def test_slash_sessions_resume_and_fork(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [text("hello")]})
    await tiller.run("greet me")
    first_id = (await tiller.request("tiller/getState"))["sessionId"]
    assert "greet me" in (await tiller.prompt("/sessions"))["message"]
    forked = await tiller.prompt("/fork")
    assert forked["status"] == "handled" and "Forked into session" in forked["message"]
    assert (await tiller.request("tiller/getState"))["sessionId"] != first_id
    resumed = await tiller.prompt(f"/resume {first_id}")
    assert resumed["message"] == f"Resumed session {first_id}."
    assert (await tiller.request("tiller/getState"))["sessionId"] == first_id


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tiller/session/resume", {"sessionId": "ses_missing"}),
        ("tiller/session/resume", {}),
        ("tiller/session/fork", {"turnId": 7}),
        ("tiller/session/transcript", {"limit": 0}),
        ("tiller/session/transcript", {"sessionId": "ses_missing"}),
    ],
)
async def test_bad_session_params_answer_32602(
    tiller: Tiller, method: str, params: dict[str, Any]
) -> None:
    before = await tiller.request("tiller/getState")
    with pytest.raises(JsonRpcException) as caught:
        await tiller.request(method, params)
    assert caught.value.code == -32602
    assert await tiller.request("tiller/getState") == before


async def test_resume_while_busy_interrupts_the_running_turn(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue({"content": [text("first")]})
    await tiller.run("first")
    old = (await tiller.request("tiller/getState"))["sessionId"]
    await tiller.request("tiller/session/new")
    api.enqueue({"content": [text("slow " * 50)], "chunkDelay": 0.05})
    busy = await tiller.prompt("long one")
    await tiller.wait_for(lambda: tiller.events_of("textDelta", busy["turnId"]))
    state = await tiller.request("tiller/session/resume", {"sessionId": old})
    assert state["sessionId"] == old
    ended = await tiller.turn_end(busy["turnId"])
    assert ended["outcome"] == "interrupted"
    await asyncio.sleep(0)


async def test_turn_ids_survive_a_crash_repaired_resume_for_fork_and_rewind(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """A crash-repaired resume used to store every turn id as None: forking by an old turn
    then failed with "unknown turnId", and a conversation rewind kept the whole conversation."""
    first: Tiller = await start()
    api.enqueue({"content": [text("One.")]})
    turn_one = (await first.run("first"))["turnId"]
    api.enqueue({"content": [text("Two.")]})
    turn_two = (await first.run("second"))["turnId"]

    async def allow(params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    first.on_confirm = allow
    api.enqueue({"content": [tool_use("bash", "b1", command="touch started; sleep 30")]})
    await first.prompt("third, cut by a crash")
    await first.wait_for(lambda: (workspace / "started").exists())
    session_id = (await first.request("tiller/getState"))["sessionId"]
    kill_9(first)

    second: Tiller = await start()
    await second.request("tiller/session/resume", {"sessionId": session_id})
    forked = await second.request(
        "tiller/session/fork", {"sessionId": session_id, "turnId": turn_one}
    )
    assert forked["sessionId"] != session_id
    api.enqueue({"content": [text("Forked.")]})
    await second.run("after the fork")
    sent = api.message_requests()[-1].body["messages"]
    assert [m["content"][0].get("text") for m in sent if m["role"] == "user"] == [
        "first",
        "after the fork",
    ]

    await second.request("tiller/session/resume", {"sessionId": session_id})
    await second.request(
        "tiller/rewind", {"turnId": turn_two, "files": False, "conversation": True}
    )
    api.enqueue({"content": [text("Rewound.")]})
    await second.run("after the rewind")
    sent = api.message_requests()[-1].body["messages"]
    assert [m["content"][0].get("text") for m in sent if m["role"] == "user"] == [
        "first",
        "after the rewind",
    ]
    assert_valid_history(api)


# --- sessions stored at creation; empty ones left out of lists (issue 36) -----------------


async def test_a_new_session_can_be_resumed_before_its_first_prompt_in_the_next_server(
    start: Any, api: FakeMessagesAPI
) -> None:
    """Issue 36: a Tiller-protocol session was stored only at its first prompt, so resuming a
    new, unprompted one answered "unknown sessionId" (ACP stored its sessions at once)."""
    first: Tiller = await start()
    opened = (await first.request("tiller/getState"))["sessionId"]  # the one initialize opened
    made = (await first.request("tiller/session/new"))["sessionId"]
    await first.request("tiller/setMode", {"mode": "acceptEdits"})
    await first.request("tiller/session/resume", {"sessionId": opened})  # in the same server
    await stop_tiller(first)

    second: Tiller = await start()
    state = await second.request("tiller/session/resume", {"sessionId": made})
    assert state["sessionId"] == made and state["mode"] == "acceptEdits"
    api.enqueue({"content": [text("Hello.")]})
    ended = await second.run("first words")
    assert ended["outcome"] == "completed"
    [request] = api.message_requests()
    assert [m["role"] for m in request.body["messages"]] == ["user"]
    listed = (await second.request("tiller/session/list"))["sessions"]
    assert [(s["sessionId"], s["title"], s["turns"]) for s in listed] == [(made, "first words", 1)]


async def test_empty_sessions_are_left_out_of_the_session_list_and_slash_sessions(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    """Every client start opens a session, stored at once: lists show only those with a turn,
    as Claude Code lists only sessions with messages."""
    api.enqueue({"content": [text("hello")]})
    await tiller.run("greet me")
    used = (await tiller.request("tiller/getState"))["sessionId"]
    empty = (await tiller.request("tiller/session/new"))["sessionId"]
    listed = (await tiller.request("tiller/session/list"))["sessions"]
    assert [s["sessionId"] for s in listed] == [used]
    every = (await tiller.request("tiller/session/list", {"workspace": "all"}))["sessions"]
    assert [s["sessionId"] for s in every] == [used]
    shown = (await tiller.prompt("/sessions"))["message"]
    assert used in shown and empty not in shown
    forked = await tiller.prompt("/fork")  # nothing to fork in an empty session
    assert "nothing to fork" in forked["message"]
    assert (await tiller.request("tiller/getState"))["sessionId"] == empty


async def test_a_prompt_that_failed_for_want_of_a_key_is_no_turn_and_says_how_to_set_it(
    start: Any, api: FakeMessagesAPI
) -> None:
    """Issue 36: with no key the error said "send it again", and the prompt showed in
    /sessions as a turn."""
    tiller: Tiller = await start(provider={"kind": "anthropic", "baseUrl": api.base_url})
    ended = await tiller.run("hello there")
    assert ended["outcome"] == "failed" and ended["error"]["kind"] == "auth"
    message = ended["error"]["message"]
    assert "ANTHROPIC_API_KEY" in message and "send it again" not in message
    assert api.requests == []
    assert (await tiller.request("tiller/session/list"))["sessions"] == []
    assert "hello there" not in (await tiller.prompt("/sessions"))["message"]
    transcript = (await tiller.request("tiller/session/transcript"))["entries"]
    assert "hello there" in [e.get("prompt") for e in transcript]  # the transcript keeps it
