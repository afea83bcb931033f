"""Every turn ends exactly once, whatever the timing; switching sessions and shutting down
stop at once and never run the old queue; a turn cut by a dead server is marked on resume."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_sessions import kill_9
from test_turn_basics import text, tool_use


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _ends_per_turn(tiller: Tiller) -> Counter[str]:
    return Counter(e["turnId"] for e in tiller.events_of("turnEnded"))


async def test_interrupt_flood_while_queued_turns_drain_ends_every_turn_once_in_order(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    """The bug: a cancel landing before the turn task's first step meant no turnEnded, a
    server stuck busy and a queue that stalled and lost its order."""
    prompts = [f"prompt {n}" for n in range(30)]
    # The first turn streams until it is interrupted: every later prompt finds it busy.
    api.enqueue({"content": [text("answer 0 " * 3)], "holdUntil": "never"})
    for n in range(1, 30):
        api.enqueue({"content": [text(f"answer {n} " * 3)], "chunkDelay": 0.001})
    first = await tiller.prompt(prompts[0])
    assert first["status"] == "started"
    for later in prompts[1:]:
        assert (await tiller.prompt(later))["status"] == "queued"

    async def flood() -> None:
        while len(tiller.events_of("turnEnded")) < 30:
            await asyncio.gather(*(tiller.request("tiller/interrupt") for _ in range(5)))

    await asyncio.wait_for(flood(), 60)
    started = tiller.events_of("turnStarted")
    assert [e["prompt"] for e in started] == prompts  # FIFO
    ends = _ends_per_turn(tiller)
    assert set(ends) == {e["turnId"] for e in started}
    assert set(ends.values()) == {1}
    state = await tiller.request("tiller/getState")
    assert state["busy"] is False and state["queue"] == []
    assert state["turnId"] == started[-1]["turnId"]  # the last turn, once idle
    # The server still works.
    api.enqueue({"content": [text("still here")]})
    assert (await tiller.run("hello?"))["outcome"] == "completed"


async def test_interrupt_with_a_turn_id_only_interrupts_that_turn(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    # Each turn streams until the test releases it: nothing here depends on how fast it runs.
    api.enqueue(
        {"content": [text("first answer")], "holdUntil": "one"},
        {"content": [text("second answer")], "holdUntil": "two"},
    )
    first = await tiller.prompt("one")
    await api.wait_held("one")
    queued = await tiller.prompt("two")
    assert queued["status"] == "queued"
    other = await tiller.request("tiller/interrupt", {"turnId": "turn_not_running"})
    assert other == {"interrupted": False}
    api.release("one")
    ended = await tiller.turn_end(first["turnId"])
    assert ended["outcome"] == "completed"
    second = await tiller.wait_for(lambda: next(iter(tiller.events_of("turnStarted")[1:]), None))
    await api.wait_held("two")
    # A late Escape aimed at the first turn must not cancel the second, streaming now.
    late = await tiller.request("tiller/interrupt", {"turnId": first["turnId"]})
    assert late == {"interrupted": False}
    api.release("two")
    assert (await tiller.turn_end(second["turnId"]))["outcome"] == "completed"


async def test_stop_keyword_interrupt_says_its_cause(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [text("never ending")], "hangAfterEvents": 4})
    started = await tiller.prompt("go")
    await api.wait_hanging()
    assert (await tiller.prompt("stop"))["status"] == "handled"
    ended = await tiller.turn_end(started["turnId"])
    assert ended["outcome"] == "interrupted" and ended["cause"] == "keyword"


async def test_session_new_interrupts_at_once_and_drops_the_old_queue(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    """The bug: session/new first ran the whole queue (3 model calls, ~10 s)."""
    api.enqueue({"content": [text("hanging")], "hangAfterEvents": 4})
    running = await tiller.prompt("running")
    await api.wait_hanging()
    for n in range(3):
        assert (await tiller.prompt(f"queued {n}"))["status"] == "queued"
    state = await tiller.request("tiller/session/new")
    assert state["busy"] is False and state["queue"] == []
    ended = await tiller.turn_end(running["turnId"])
    assert ended["outcome"] == "interrupted" and ended["cause"] == "user"
    dropped = tiller.events_of("queueDropped")
    assert [e["prompts"] for e in dropped] == [["queued 0", "queued 1", "queued 2"]]
    await tiller.run("after")  # started at once: no old prompt was left to run first
    assert [e["prompt"] for e in tiller.events_of("turnStarted")] == ["running", "after"]
    assert len(api.message_requests()) == 2


async def test_slash_clear_while_busy_interrupts_and_switches(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue({"content": [text("hanging")], "hangAfterEvents": 4})
    running = await tiller.prompt("running")
    await api.wait_hanging()
    old = (await tiller.request("tiller/getState"))["sessionId"]
    assert (await tiller.prompt("queued"))["status"] == "queued"
    answer = await tiller.prompt("/clear")
    assert answer["status"] == "handled"
    ended = await tiller.turn_end(running["turnId"])
    assert ended["outcome"] == "interrupted"
    state = await tiller.request("tiller/getState")
    assert state["sessionId"] != old and state["busy"] is False
    assert len(api.message_requests()) == 1


async def test_shutdown_interrupts_at_once_and_runs_no_queued_prompt(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start()
    api.enqueue({"content": [text("hanging")], "hangAfterEvents": 4})
    await tiller.prompt("running")
    await api.wait_hanging()
    for n in range(3):
        await tiller.prompt(f"queued {n}")
    await asyncio.wait_for(tiller.client.shutdown_session(), 5)
    assert len(api.message_requests()) == 1


async def test_a_turn_cut_by_a_dead_server_is_marked_on_resume(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    first: Tiller = await start()
    api.enqueue({"content": [text("Working on it…")], "hangAfterEvents": 4})
    cut = await first.prompt("a long job")
    await api.wait_hanging()
    session_id = (await first.request("tiller/getState"))["sessionId"]
    kill_9(first)

    second: Tiller = await start()
    await second.request("tiller/session/resume", {"sessionId": session_id})
    entries = (await second.request("tiller/session/transcript"))["entries"]
    ends = [e for e in entries if e["kind"] == "turnEnded" and e["turnId"] == cut["turnId"]]
    assert len(ends) == 1
    assert ends[0]["outcome"] == "interrupted" and ends[0]["cause"] == "server_stopped"
    # Resuming again does not mark it twice.
    await second.request("tiller/session/new")
    await second.request("tiller/session/resume", {"sessionId": session_id})
    entries = (await second.request("tiller/session/transcript"))["entries"]
    assert sum(e["kind"] == "turnEnded" and e["turnId"] == cut["turnId"] for e in entries) == 1


async def test_session_list_is_scoped_to_the_workspace_unless_all(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    here: Tiller = await start()
    api.enqueue({"content": [text("hi")]})
    await here.run("in the first folder")
    other_ws = tmp_path / "other"
    other_ws.mkdir()
    from harness import start_tiller, stop_tiller

    options = {
        "provider": {"kind": "anthropic", "baseUrl": api.base_url, "apiKey": "test-key"},
        "model": "claude-test-1",
        "dataDir": str(tmp_path / "data"),
    }
    there = await start_tiller(other_ws, tmp_path / "data", options)
    try:
        api.enqueue({"content": [text("hi")]})
        await there.run("in the other folder")
        mine = (await here.request("tiller/session/list"))["sessions"]
        assert [s["title"] for s in mine] == ["in the first folder"]
        assert mine[0]["workspace"] == _real(workspace)
        every = (await here.request("tiller/session/list", {"workspace": "all"}))["sessions"]
        assert {s["title"] for s in every} == {"in the first folder", "in the other folder"}
    finally:
        await stop_tiller(there)


async def test_fork_counts_its_inherited_turns(tiller: Tiller, api: FakeMessagesAPI) -> None:
    for n in range(2):
        api.enqueue({"content": [text(f"answer {n}")]})
        await tiller.run(f"question {n}")
    child = await tiller.request("tiller/session/fork", {})
    listed = (await tiller.request("tiller/session/list"))["sessions"]
    row = next(s for s in listed if s["sessionId"] == child["sessionId"])
    assert row["turns"] == 2


async def test_transcript_keeps_plans_confirmations_and_notices_as_shown(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """Redraw equals live: the plan text, the confirmation asked and its answer, notices."""
    tiller: Tiller = await start(permissionMode="plan")
    answers = iter([{"approved": False, "feedback": "smaller"}, {"approved": True}])

    async def plan(params: dict[str, Any]) -> Any:
        return next(answers)

    async def deny(params: dict[str, Any]) -> Any:
        return {"decision": "deny", "feedback": "not now"}

    tiller.on_plan = plan
    tiller.on_confirm = deny
    api.enqueue(
        {"content": [tool_use("exit_plan_mode", "p1", plan="# Big plan\n1. everything")]},
        {"content": [tool_use("exit_plan_mode", "p2", plan="# Small plan\n1. one thing")]},
        {"content": [tool_use("bash", "b1", command="touch made")]},
        {"content": [text("Stopped as asked.")]},
    )
    ended = await tiller.run("plan it")
    assert ended["outcome"] == "completed"
    entries = (await tiller.request("tiller/session/transcript"))["entries"]
    kinds = [e["kind"] for e in entries]
    plans = [e["plan"] for e in entries if e["kind"] == "planRequested"]
    assert plans == ["# Big plan\n1. everything", "# Small plan\n1. one thing"]
    decided = [e for e in entries if e["kind"] == "planDecided"]
    assert [d["approved"] for d in decided] == [False, True]
    assert decided[0]["feedback"] == "smaller"
    asked = next(e for e in entries if e["kind"] == "confirmRequested")
    assert asked["toolUseId"] == "b1" and asked["preview"]["command"] == "touch made"
    answer = next(e for e in entries if e["kind"] == "confirmDecided")
    assert answer["decision"] == "deny" and answer["feedback"] == "not now"
    assert "notice" in kinds  # the mode change after the approval
    # Order as shown: the request before its decision, the tool row before its confirmation.
    assert kinds.index("planRequested") < kinds.index("planDecided")
    assert kinds.index("confirmRequested") < kinds.index("confirmDecided")
    assert not (workspace / "made").exists()
    with contextlib.suppress(Exception):
        await tiller.request("tiller/getState")
