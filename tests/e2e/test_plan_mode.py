"""Plan mode: the approval gate, the hard boundary, rejection feedback, final text as plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use

PLAN = "1. Write hello.txt\n2. Done"


async def test_exit_plan_mode_with_a_write_in_the_same_response_never_runs_the_write(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="plan")

    async def approve(params: dict[str, Any]) -> dict[str, Any]:
        assert params["plan"] == PLAN
        return {"approved": True, "mode": "acceptEdits"}

    tiller.on_plan = approve
    api.enqueue(
        {
            "content": [
                tool_use("exit_plan_mode", "p1", plan=PLAN),
                tool_use("write_file", "w1", path="hello.txt", content="too early"),
            ]
        },
        {"content": [tool_use("write_file", "w2", path="hello.txt", content="hello\n")]},
        {"content": [text("implemented")]},
    )
    ended = await tiller.run("plan then build")
    assert ended["outcome"] == "completed"
    results = results_of(api, 1)
    assert results[0]["tool_use_id"] == "p1" and "approved" in str(results[0]["content"])
    assert results[1]["tool_use_id"] == "w1" and results[1]["is_error"] is True
    assert "submitted with the plan" in str(results[1]["content"])
    assert (workspace / "hello.txt").read_text() == "hello\n"
    decided = tiller.events_of("planDecided", ended["turnId"])
    assert decided[0]["approved"] is True
    assert {"name": "write_file", "status": "skipped"} in ended["trail"]
    state = await tiller.request("tiller/getState")
    assert state["mode"] == "acceptEdits"


async def test_rejected_plan_feedback_reaches_the_model_and_mode_stays_plan(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="plan")

    answers = iter([{"approved": False, "feedback": "also update the README"}])

    async def reject(params: dict[str, Any]) -> dict[str, Any]:
        return next(answers, {"approved": False})  # then a silent "no" ends the turn

    tiller.on_plan = reject
    api.enqueue(
        {"content": [tool_use("exit_plan_mode", "p1", plan=PLAN)]},
        {"content": [tool_use("write_file", "w1", path="x.txt", content="nope")]},
    )
    await tiller.run("plan")
    first = results_of(api, 1)[0]
    assert first["is_error"] is True and "also update the README" in str(first["content"])
    assert results_of(api, 2)[0]["is_error"] is True  # the write after rejection is denied
    assert not (workspace / "x.txt").exists()
    assert (await tiller.request("tiller/getState"))["mode"] == "plan"
    assert tiller.events_of("planDecided")[0] == {
        **tiller.events_of("planDecided")[0],
        "approved": False,
        "feedback": "also update the README",
    }


async def test_final_text_in_plan_mode_goes_through_approval_and_continues(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="plan")
    answers = iter(
        [{"approved": False, "feedback": "smaller steps"}, {"approved": True, "mode": "default"}]
    )

    async def decide(params: dict[str, Any]) -> dict[str, Any]:
        return next(answers)

    tiller.on_plan = decide
    api.enqueue(
        {"content": [text("My plan: do it all at once.")]},
        {"content": [text("My plan: step one, then step two.")]},
        {"content": [text("Implemented step one and two.")]},
    )
    ended = await tiller.run("plan it")
    assert ended["outcome"] == "completed"
    assert ended["final"] == "Implemented step one and two."
    plans = [p["plan"] for m, p in tiller.asked if m == "tiller/approvePlan"]
    assert plans == ["My plan: do it all at once.", "My plan: step one, then step two."]
    second = api.message_requests()[1].body["messages"][-1]["content"][-1]["text"]
    assert second == "Plan not approved: smaller steps. Revise it."
    third = api.message_requests()[2].body["messages"][-1]["content"][-1]["text"]
    assert third == "Plan approved. Implement it now."
    assert (await tiller.request("tiller/getState"))["mode"] == "default"


async def test_enter_plan_mode_tool_switches_the_mode(tiller: Tiller, api: FakeMessagesAPI) -> None:
    api.enqueue(
        {"content": [tool_use("enter_plan_mode", "e1")]},
        {"content": [tool_use("bash", "b1", command="touch f.txt")]},
    )
    await tiller.run("careful now")
    assert (await tiller.request("tiller/getState"))["mode"] == "plan"
    assert results_of(api, 2)[0]["is_error"] is True
    assert not [m for m, _ in tiller.asked if m == "tiller/confirmTool"]


async def test_approving_a_plan_never_approves_a_later_command(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="plan")

    async def approve(params: dict[str, Any]) -> dict[str, Any]:
        return {"approved": True}

    tiller.on_plan = approve
    api.enqueue(
        {"content": [tool_use("exit_plan_mode", "p1", plan=PLAN)]},
        {"content": [tool_use("bash", "b1", command="touch made.txt")]},
        {"content": [text("done")]},
    )
    await tiller.run("go")
    confirms = [p for m, p in tiller.asked if m == "tiller/confirmTool"]
    assert len(confirms) == 1 and confirms[0]["name"] == "bash"
    assert not (workspace / "made.txt").exists()  # the harness denies by default


async def test_plan_rejected_with_feedback_every_time_ends_after_five_revisions(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(permissionMode="plan")

    async def always_no(params: dict[str, Any]) -> dict[str, Any]:
        return {"approved": False, "feedback": "no"}

    tiller.on_plan = always_no
    ended = await tiller.run("plan", timeout=30)  # the fake answers "Done." every time
    assert ended["outcome"] == "completed"
    assert len([m for m, _ in tiller.asked if m == "tiller/approvePlan"]) == 6
    assert any("rejected 6 times" in e["text"] for e in tiller.events_of("notice"))
