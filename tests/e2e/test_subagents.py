"""Subagents over stdio: the task tool starts child sessions of the same core. Explorers run at
the same time and one can be interrupted alone; a crash while children run is repaired in the
parent and in every child; a child's approvals name it; a parent's rewind covers a child's
writes; children's usage rolls up into the parent's turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import JSON, Tiller
from test_interrupt_and_queue import assert_valid_history
from test_sessions import kill_9
from test_turn_basics import text, tool_use
from tiller.model.history import Message, problems
from tiller.workspace.store import SessionStore


def task(tool_id: str, marker: str, kind: str = "explore") -> dict[str, object]:
    """A task call whose child's prompt carries ``marker`` (the fake routes the child by it)."""
    return tool_use(
        "task", tool_id, description=f"look {marker}", prompt=f"{marker} find it",
        subagent_type=kind,
    )  # fmt: skip


def child_of(tiller: Tiller, tool_use_id: str) -> str | None:
    """The child session the parent's task call ``tool_use_id`` started (agentStarted)."""
    found = [e for e in tiller.events if e["type"] == "agentStarted"]
    return next((e["agentSessionId"] for e in found if e["toolUseId"] == tool_use_id), None)


def events_of_session(tiller: Tiller, session_id: str, type_: str) -> list[JSON]:
    return [e for e in tiller.events if e["sessionId"] == session_id and e["type"] == type_]


def index_of(tiller: Tiller, session_id: str, type_: str, tool_use_id: str) -> int:
    return next(
        i
        for i, e in enumerate(tiller.events)
        if e["sessionId"] == session_id and e["type"] == type_ and e.get("toolUseId") == tool_use_id
    )


async def test_three_explorers_run_at_once_and_one_is_interrupted_alone(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"content": [text("Three explorers."), task("p1", "[A]"), task("p2", "[B]"),
                     task("p3", "[C]")]},
        {"content": [text("All reported.")]},
    )  # fmt: skip
    for marker, command in (("[A]", "sleep 1"), ("[B]", "sleep 30"), ("[C]", "sleep 1")):
        name = marker.strip("[]").lower()
        api.enqueue_for(
            marker,
            {"content": [tool_use("bash", f"{name}1", command=command)]},
            {"content": [text(f"report {name}")]},
        )
    started = await tiller.prompt("explore three things")
    parent_turn = started["turnId"]
    children = await tiller.wait_for(
        lambda: (
            all(child_of(tiller, t) for t in ("p1", "p2", "p3"))
            and [child_of(tiller, t) for t in ("p1", "p2", "p3")]
        )
    )
    a, b, _ = children
    # Each child's bash runs while the others' run: every one started before any finished.
    await tiller.wait_for(
        lambda: all(events_of_session(tiller, s, "toolStarted") for s in children)
    )
    b_turn = events_of_session(tiller, b, "turnStarted")[0]["turnId"]
    answer = await tiller.request("tiller/interrupt", {"turnId": b_turn})
    assert answer == {"interrupted": True, "turnId": b_turn}
    ended = await tiller.turn_end(parent_turn)
    assert ended["outcome"] == "completed" and ended["final"] == "All reported."

    await tiller.wait_for(lambda: all(events_of_session(tiller, s, "turnEnded") for s in children))
    starts = [
        index_of(tiller, s, "toolStarted", f"{n}1") for s, n in zip(children, "abc", strict=True)
    ]
    finishes = [
        index_of(tiller, s, "toolFinished", f"{n}1") for s, n in zip(children, "abc", strict=True)
    ]
    assert max(starts) < min(finishes)  # the three ran at the same time
    assert [e["outcome"] for s in children for e in events_of_session(tiller, s, "turnEnded")] == [
        "completed", "interrupted", "completed",
    ]  # fmt: skip
    parent_calls = tiller.events_of("toolStarted", parent_turn)
    assert {e["name"] for e in parent_calls} == {"task"}
    assert all(e["concurrent"] for e in parent_calls)  # one concurrent batch
    # Every child event names the parent's turn.
    assert all(
        e.get("parentTurnId") == parent_turn for e in tiller.events if e["sessionId"] in children
    )
    results = api.message_requests()[-1].body["messages"][-1]["content"]
    by_id = {r["tool_use_id"]: r for r in results}
    assert by_id["p1"]["content"] == "report a" and not by_id["p1"].get("is_error")
    assert by_id["p3"]["content"] == "report c"
    assert by_id["p2"]["is_error"] is True and "Interrupted by user" in by_id["p2"]["content"]
    assert_valid_history(api)
    # The children's usage is in the parent's turn: every request of this test was its.
    output = sum((r.usage or {}).get("output_tokens", 0) for r in api.message_requests())
    assert ended["usage"]["outputTokens"] == output
    # A child is stored and its transcript opens from the parent's.
    transcript = await tiller.request("tiller/session/transcript", {"sessionId": a})
    kinds = [entry["kind"] for entry in transcript["entries"]]
    assert kinds[0] == "turnStarted" and kinds[-1] == "turnEnded"
    parents = await tiller.request("tiller/session/transcript")
    links = [e for e in parents["entries"] if e["kind"] == "agentStarted"]
    assert {e["agentSessionId"] for e in links} == set(children)  # the parent's links to them
    listed = await tiller.request("tiller/session/list")
    assert [s["sessionId"] for s in listed["sessions"]] == [ended["sessionId"]]


async def test_interrupting_the_parent_ends_its_children_and_answers_every_call(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue({"content": [task("p1", "[A]"), task("p2", "[B]")]})
    for marker in ("[A]", "[B]"):
        name = marker.strip("[]").lower()
        api.enqueue_for(marker, {"content": [tool_use("bash", f"{name}1", command="sleep 30")]})
    started = await tiller.prompt("explore")
    turn = started["turnId"]
    await tiller.wait_for(
        lambda: (
            len([e for e in tiller.events if e["type"] == "toolStarted" and e["name"] == "bash"])
            == 2
        )
    )
    await tiller.request("tiller/interrupt", {"turnId": turn})
    ended = await tiller.turn_end(turn)
    assert ended["outcome"] == "interrupted"
    children = [child_of(tiller, "p1"), child_of(tiller, "p2")]
    assert None not in children

    def ends() -> list[JSON]:  # (the client may handle notifications out of order)
        found = [events_of_session(tiller, c, "turnEnded") for c in children if c is not None]
        return [e for f in found for e in f] if all(found) else []

    assert [e["outcome"] for e in await tiller.wait_for(ends)] == ["interrupted"] * 2
    api.enqueue({"content": [text("fresh")]})
    await tiller.run("go on")
    assert_valid_history(api)


def answered_once(messages: tuple[Message, ...]) -> bool:
    """Every tool_use has exactly one tool_result (and the history is one the API takes)."""
    uses = [b["id"] for m in messages for b in m.content if b.get("type") == "tool_use"]
    results = [
        b["tool_use_id"] for m in messages for b in m.content if b.get("type") == "tool_result"
    ]
    return sorted(uses) == sorted(results) and not problems(messages)


async def test_kill_9_while_children_run_then_resume_answers_every_call_once(
    start: Any, api: FakeMessagesAPI, tmp_path: Path
) -> None:
    first: Tiller = await start()
    api.enqueue({"content": [text("Two explorers."), task("p1", "[A]"), task("p2", "[B]")]})
    for marker in ("[A]", "[B]"):
        name = marker.strip("[]").lower()
        api.enqueue_for(
            marker,
            {"content": [text("Looking."), tool_use("bash", f"{name}1", command="sleep 30")]},
        )
    await first.prompt("explore")
    await first.wait_for(
        lambda: (
            len([e for e in first.events if e["type"] == "toolStarted" and e["name"] == "bash"])
            == 2
        )
    )
    session_id = (await first.request("tiller/getState"))["sessionId"]
    children = [child_of(first, "p1"), child_of(first, "p2")]
    kill_9(first)

    second: Tiller = await start()
    await second.request("tiller/session/resume", {"sessionId": session_id})
    api.enqueue({"content": [text("Picking up.")]})
    await second.run("continue")
    assert_valid_history(api)  # the parent's history: the fake took it
    store = SessionStore(tmp_path / "data" / "sessions.sqlite3")
    try:
        parent = store.load(session_id)
        assert parent is not None and answered_once(parent.messages)
        assert {r.id for r in store.children(session_id)} == set(children)
        for child in children:
            assert child is not None
            loaded = store.load(child)
            assert loaded is not None and answered_once(loaded.messages)
            assert loaded.row.parent_id == session_id and loaded.row.agent == "explore"
            assert store.open_turns(child) == []  # closed in its transcript too
    finally:
        store.close()


async def test_a_general_child_asks_naming_itself_and_a_rewind_of_the_parent_undoes_its_writes(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    asked: list[JSON] = []

    async def allow(params: JSON) -> JSON:
        asked.append(params)
        return {"decision": "allow"}

    tiller.on_confirm = allow
    api.enqueue(
        {"content": [task("p1", "[W]", "general-purpose")]},
        {"content": [text("Written by the agent.")]},
    )
    api.enqueue_for(
        "[W]",
        {"content": [tool_use("write_file", "w1", path="made.txt", content="by a child\n")]},
        {"content": [text("made it")]},
    )
    ended = await tiller.run("delegate a write")
    assert ended["outcome"] == "completed"
    assert (workspace / "made.txt").read_text() == "by a child\n"
    child = child_of(tiller, "p1")
    [question] = asked
    assert question["agent"] == {"sessionId": child, "name": "general-purpose"}
    rewound = await tiller.request(
        "tiller/rewind", {"turnId": ended["turnId"], "files": True, "conversation": False}
    )
    assert "made.txt" in rewound["added"]  # seen from now: the rewind takes it away
    assert not (workspace / "made.txt").exists()


async def test_an_explorer_cannot_write_even_with_a_command(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue({"content": [task("p1", "[X]")]}, {"content": [text("done")]})
    api.enqueue_for(
        "[X]",
        {"content": [tool_use("bash", "x1", command="touch owned"),
                     tool_use("write_file", "x2", path="owned2", content="x")]},
        {"content": [text("could not")]},
    )  # fmt: skip
    ended = await tiller.run("explore")
    assert ended["outcome"] == "completed"
    child = child_of(tiller, "p1")
    assert child is not None
    finished = {e["toolUseId"]: e for e in events_of_session(tiller, child, "toolFinished")}
    assert finished["x1"]["status"] == "denied"
    assert finished["x2"]["status"] == "error"  # not one of an explorer's tools
    assert not (workspace / "owned").exists() and not (workspace / "owned2").exists()
    assert [a for a in tiller.asked if a[0] == "tiller/confirmTool"] == []


def first_prompt(request: Any) -> str:
    first = request.body["messages"][0]["content"]
    return first if isinstance(first, str) else " ".join(str(b.get("text", "")) for b in first)


async def test_a_child_has_the_skill_tool_its_prompt_describes_unless_its_kind_leaves_it_out(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    """A subagent's system prompt described skills, but the child had no ``skill`` tool."""
    skill = workspace / ".claude" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: How we deploy\n---\nRun make ship.\n")
    agent = workspace / ".claude" / "agents" / "reader.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("---\nname: reader\ndescription: Reads\ntools: Read\n---\nRead.\n")
    api.enqueue(
        {"content": [task("p1", "[X]"), task("p2", "[Y]", "reader")]}, {"content": [text("ok")]}
    )
    load = {"type": "tool_use", "id": "x1", "name": "skill", "input": {"name": "deploy"}}
    api.enqueue_for("[X]", {"content": [load]}, {"content": [text("it says make ship")]})
    api.enqueue_for("[Y]", {"content": [text("read")]})
    ended = await tiller.run("delegate")
    assert ended["outcome"] == "completed"
    requests = api.message_requests()
    explorer = [r for r in requests if "[X]" in first_prompt(r)]
    reader = [r for r in requests if "[Y]" in first_prompt(r)]
    assert "skill" in [t["name"] for t in explorer[0].body["tools"]]
    assert "- deploy: How we deploy" in str(explorer[0].body["system"])
    child = child_of(tiller, "p1")
    assert child is not None
    (loaded,) = events_of_session(tiller, child, "toolFinished")
    assert loaded["status"] == "ok"
    assert "Run make ship." in str(explorer[-1].body["messages"][-1]["content"])
    assert "skill" not in [t["name"] for t in reader[0].body["tools"]]
    system = str(reader[0].body["system"])
    assert "deploy" not in system and "no skill tool" in system
    assert "skills available changed" not in str(reader[0].body["messages"])
