"""Todo board, tool-budget checkpoint, stop hook and slash commands, end to end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use


def todo(content: str, status: str, active: str | None = None) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": active or f"Doing {content}"}


async def test_todo_write_replaces_the_board_and_drives_state(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    board1 = [todo("a", "in_progress", "Doing a"), todo("b", "pending")]
    board2 = [todo("a", "completed"), todo("c", "in_progress", "Doing c")]
    api.enqueue(
        {"content": [tool_use("todo_write", "t1", todos=board1)]},
        {"content": [tool_use("todo_write", "t2", todos=board2)]},
        {"content": [text("ok")]},
    )
    await tiller.run("plan the work")
    assert [len(t["todos"]) for t in tiller.todos] == [2, 2]
    assert tiller.todos[-1]["todos"][1] == todo("c", "in_progress", "Doing c")
    assert any(s["activeTodo"] == "Doing a" for s in tiller.states)
    state = await tiller.request("tiller/getState")
    assert state["activeTodo"] is None  # nothing is in progress while no turn runs
    assert state["todoCounts"] == {"completed": 1, "total": 2}
    assert (await tiller.request("tiller/getTodos"))["todos"] == tiller.todos[-1]["todos"]


async def test_invalid_todo_input_is_an_error_result_and_the_board_is_kept(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"content": [tool_use("todo_write", "t1", todos=[todo("a", "pending")])]},
        {"content": [tool_use("todo_write", "t2", todos=[todo("", "pending"), todo("b", "done")])]},
        {"content": [text("ok")]},
    )
    await tiller.run("go")
    result = results_of(api, 2)[0]
    assert result["is_error"] is True and "content" in str(result["content"])
    assert (await tiller.request("tiller/getTodos"))["todos"] == [todo("a", "pending")]


async def test_verification_nudge_after_three_completed_items_without_a_check(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    done = [todo(name, "completed") for name in ("write parser", "add flag", "update docs")]
    api.enqueue(
        {"content": [tool_use("todo_write", "t1", todos=done)]},
        {"content": [tool_use("todo_write", "t2", todos=[*done, todo("run pytest", "completed")])]},
        {"content": [text("ok")]},
    )
    await tiller.run("go")
    assert "Reminder" in str(results_of(api, 1)[0]["content"])
    assert "Reminder" not in str(results_of(api, 2)[0]["content"])


def reads(n: int, prefix: str) -> dict[str, Any]:
    return {"content": [tool_use("list_files", f"{prefix}{i}") for i in range(n)]}


async def test_checkpoint_at_budget_continue_gives_a_fresh_budget(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(toolBudget=3)

    async def go_on(params: dict[str, Any]) -> dict[str, Any]:
        return {"continue": True}

    tiller.on_checkpoint = go_on
    api.enqueue(
        reads(2, "a"), reads(2, "b"), reads(2, "c"), reads(1, "d"), {"content": [text("ok")]}
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed"
    checkpoints = [p for m, p in tiller.asked if m == "tiller/checkpoint"]
    # 2 then 2 crosses 3 -> ask at 4; 6 crosses 6 -> ask at 6; 7 is not past 9.
    assert [c["toolsUsed"] for c in checkpoints] == [4, 6]
    assert len(checkpoints[0]["trail"]) == 4


async def test_checkpoint_stop_ends_the_turn_stopped_with_results_for_calls_not_run(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(toolBudget=2)  # the harness answers stop by default
    api.enqueue(reads(2, "a"), reads(3, "b"), {"content": [text("unreached")]})
    ended = await tiller.run("go")
    assert ended["outcome"] == "stopped"
    assert [t["status"] for t in ended["trail"]] == ["ok", "ok", "skipped", "skipped", "skipped"]
    await tiller.run("and now?")
    results = [
        b
        for b in api.message_requests()[-1].body["messages"][-1]["content"]
        if b["type"] == "tool_result"
    ]
    assert len(results) == 3 and all(r["is_error"] for r in results)


async def test_batch_of_three_crossing_twenty_still_triggers_the_checkpoint(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start()  # default budget 20
    api.enqueue(reads(19, "a"), reads(3, "b"), reads(1, "c"), {"content": [text("ok")]})
    ended = await tiller.run("go")
    assert ended["outcome"] == "stopped"
    checkpoints = [p for m, p in tiller.asked if m == "tiller/checkpoint"]
    assert [c["toolsUsed"] for c in checkpoints] == [22]


async def test_unanswered_checkpoint_times_out_as_stop(start: Any, api: FakeMessagesAPI) -> None:
    tiller: Tiller = await start(toolBudget=1, checkpointTimeoutSeconds=1)

    async def never(params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {"continue": True}

    tiller.on_checkpoint = never
    api.enqueue(reads(1, "a"), reads(1, "b"), {"content": [text("unreached")]})
    ended = await tiller.run("go")
    assert ended["outcome"] == "stopped"
    assert not tiller.client.messages


async def test_stop_hook_continues_the_turn_then_lets_it_end(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    hook = workspace.parent / "hook.sh"
    hook.write_text(
        '#!/bin/sh\ncat > "$(dirname "$0")/hook-input.json"\n'
        "if [ ! -f hook-ran ]; then touch hook-ran; echo 'tests are failing'; exit 2; fi\n"
    )
    hook.chmod(0o755)
    tiller: Tiller = await start(stopHook=str(hook))
    api.enqueue({"content": [text("all done")]}, {"content": [text("fixed the tests")]})
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed" and ended["final"] == "fixed the tests"
    follow_up = api.message_requests()[1].body["messages"][-1]["content"][-1]["text"]
    assert follow_up == "continue: tests are failing"
    payload = (workspace.parent / "hook-input.json").read_text()
    assert ended["turnId"] in payload and "fixed the tests" in payload


async def test_stop_hook_gives_up_after_three_continuations(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(stopHook="echo still broken; exit 1")
    ended = await tiller.run("go", timeout=30)
    assert ended["outcome"] == "completed"
    assert len(api.message_requests()) == 4  # the first answer + 3 continuations


async def test_a_crashing_stop_hook_is_reported_and_does_not_wedge_the_turn(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(stopHook="exit 3")
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed"
    assert any("stop hook failed" in e["text"] for e in tiller.events_of("notice"))


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("/help", "/thinking [on|off|low|medium|high|xhigh|max|N]"),
        ("/mode", "Mode: ask before edits"),
        ("/model", "Model: claude-test-1"),
        ("/thinking", "Thinking: off"),
        ("/todo", "empty"),
        ("/queue", "queue is empty"),
        ("/sessions", "No stored sessions yet"),
        ("/compact", "Nothing to compact"),
        ("/fork", "nothing to fork"),
        ("/resume", "Usage: /resume"),
        ("/resume ses_nope", "unknown sessionId"),
        ("/frobnicate", "Unknown command '/frobnicate'"),
    ],
)
async def test_slash_commands_that_report(
    tiller: Tiller, api: FakeMessagesAPI, command: str, fragment: str
) -> None:
    answer = await tiller.prompt(command)
    assert answer["status"] == "handled" and fragment in answer["message"]
    assert api.message_requests() == []  # never sent to the model


async def test_slash_commands_that_change_state(tiller: Tiller, api: FakeMessagesAPI) -> None:
    assert (await tiller.prompt("/mode acceptEdits"))["message"] == "Mode: accept edits"
    assert (await tiller.prompt("/plan"))["message"] == "Mode: plan"
    api.models.append("claude-x")  # /model checks the id against the API's list
    assert "unknown model" in (await tiller.prompt("/model claude-nope"))["message"]
    assert "claude-x" in (await tiller.prompt("/model claude-x"))["message"]
    assert "budget 2048" in (await tiller.prompt("/thinking 2048"))["message"]
    assert (await tiller.prompt("/thinking off"))["message"] == "Thinking: off"
    state = await tiller.request("tiller/getState")
    assert state["mode"] == "plan" and state["model"] == "claude-x"
    assert state["thinking"] == {"enabled": False, "effort": None, "budgetTokens": 2048}
    assert "Unknown mode" in (await tiller.prompt("/mode yolo"))["message"]


async def test_clear_starts_a_new_session_and_queue_clear_empties_the_queue(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue({"content": [text("slow " * 40)], "hangAfterEvents": 4})  # busy until /clear
    first = await tiller.prompt("one")
    await api.wait_hanging()
    await tiller.prompt("two")
    assert "1 queued" in (await tiller.prompt("/queue clear"))["message"]
    old_id = (await tiller.request("tiller/getState"))["sessionId"]
    # Like session/new, /clear interrupts a running turn at once.
    assert (await tiller.prompt("/clear"))["status"] == "handled"
    assert (await tiller.turn_end(first["turnId"]))["outcome"] == "interrupted"
    new_state = await tiller.request("tiller/getState")
    assert new_state["sessionId"] != old_id and new_state["busy"] is False
    await tiller.run("fresh start")
    assert len(api.message_requests()[-1].body["messages"]) == 1
