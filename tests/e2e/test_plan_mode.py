"""Plan mode: the approval gate (exit_plan_mode), the hard boundary, rejection feedback, the
revision cap; a final text is an answer, never a plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use

PLAN = "1. Write hello.txt\n2. Done"


def plans_asked(tiller: Tiller) -> list[str]:
    return [p["plan"] for m, p in tiller.asked if m == "tiller/approvePlan"]


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

    async def reject(params: dict[str, Any]) -> dict[str, Any]:
        return {"approved": False, "feedback": "also update the README"}

    tiller.on_plan = reject
    api.enqueue(
        {"content": [tool_use("exit_plan_mode", "p1", plan=PLAN)]},
        {"content": [tool_use("write_file", "w1", path="x.txt", content="nope")]},
    )
    await tiller.run("plan")  # then "Done.": a reply after a rejection, not a plan
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


@pytest.mark.parametrize("answer", ["plain", "reads like a plan"])
async def test_a_final_answer_in_plan_mode_ends_the_turn_as_an_answer(
    start: Any, api: FakeMessagesAPI, answer: str
) -> None:
    """Issue 36: `tiller run --mode plan --yes "Review cli.py"` sent the model "Plan approved.
    Implement it now." after its review; only a plan presented with exit_plan_mode is a plan."""
    tiller: Tiller = await start(permissionMode="plan")

    async def approve(params: dict[str, Any]) -> dict[str, Any]:
        return {"approved": True, "mode": "acceptEdits"}

    tiller.on_plan = approve  # a client that approves every plan (`--yes`)
    review = (
        "cli.py reads well; two nits: a long function and an unused import."
        if answer == "plain"
        else "## Plan\n\n1. Split the long function\n2. Drop the unused import"
    )
    api.enqueue({"content": [text(review)]}, {"content": [text("never asked for")]})
    ended = await tiller.run("Review cli.py")
    assert ended["outcome"] == "completed"
    assert ended["final"] == review
    assert plans_asked(tiller) == []
    assert tiller.events_of("planDecided") == []
    assert len(api.message_requests()) == 1
    assert (await tiller.request("tiller/getState"))["mode"] == "plan"


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


async def test_exit_plan_mode_rejected_every_time_ends_after_five_revisions(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(permissionMode="plan")

    async def always_no(params: dict[str, Any]) -> dict[str, Any]:
        return {"approved": False, "feedback": "no"}

    tiller.on_plan = always_no
    api.enqueue(
        *[
            {"content": [tool_use("exit_plan_mode", f"p{n}", plan=f"Plan, take {n}")]}
            for n in range(1, 9)
        ],
    )
    ended = await tiller.run("plan", timeout=30)
    assert ended["outcome"] == "completed"
    assert len(plans_asked(tiller)) == 6
    assert len(api.message_requests()) == 6
    assert any("rejected 6 times" in e["text"] for e in tiller.events_of("notice"))


async def test_exit_plan_mode_rejected_without_feedback_ends_the_turn_in_plan_mode(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(permissionMode="plan")  # the harness rejects plans silently
    api.enqueue(
        {"content": [tool_use("exit_plan_mode", "p1", plan=PLAN)]},
        {"content": [tool_use("exit_plan_mode", "p2", plan=PLAN)]},
    )
    ended = await tiller.run("plan")
    assert ended["outcome"] == "completed"
    assert len(api.message_requests()) == 1
    assert plans_asked(tiller) == [PLAN]
    finished = tiller.events_of("toolFinished", ended["turnId"])
    assert [(f["toolUseId"], f["status"]) for f in finished] == [("p1", "error")]
    assert "no feedback" in finished[0]["output"]
    assert (await tiller.request("tiller/getState"))["mode"] == "plan"
    # The next prompt finds a valid history: the call was answered.
    api.enqueue({"content": [text("ok")]})
    await tiller.run("what now?")
    assert results_of(api, 1)[0]["tool_use_id"] == "p1"


async def test_acknowledging_a_rejected_plan_is_not_offered_as_a_plan(
    start: Any, api: FakeMessagesAPI
) -> None:
    """Issue: after the user rejected a plan, the model's "still planning" was put to the
    user as a plan again in the same turn."""
    tiller: Tiller = await start(permissionMode="plan")

    async def reject(params: dict[str, Any]) -> dict[str, Any]:
        return {"approved": False, "feedback": "keep the old API"}

    tiller.on_plan = reject
    plan = {"content": [tool_use("exit_plan_mode", "p1", plan=PLAN)]}
    ack = "Understood: still planning, I will keep the old API."
    api.enqueue(plan, {"content": [text(ack)]})
    ended = await tiller.run("plan it")
    assert ended["outcome"] == "completed"
    assert ended["final"] == ack
    assert plans_asked(tiller) == [PLAN]
    assert len(tiller.events_of("planDecided", ended["turnId"])) == 1
    assert len(api.message_requests()) == 2
    assert (await tiller.request("tiller/getState"))["mode"] == "plan"


@pytest.mark.parametrize(
    "question",
    [
        "Should the cache live in memory or on disk?",
        "I found two config loaders.\n\nWhich one should the plan cover: `a.py` or `b.py`?",
        "There are two ways to do this. Please confirm which one you want.",
    ],
)
async def test_a_question_in_plan_mode_is_not_a_plan(
    start: Any, api: FakeMessagesAPI, question: str
) -> None:
    """Issue: a question the model asked in plan mode became a plan to approve."""
    tiller: Tiller = await start(permissionMode="plan")
    api.enqueue({"content": [text(question)]})
    ended = await tiller.run("plan the caching")
    assert ended["outcome"] == "completed"
    assert ended["final"] == question
    assert plans_asked(tiller) == []
    assert tiller.events_of("planDecided") == []
    assert len(api.message_requests()) == 1
    assert (await tiller.request("tiller/getState"))["mode"] == "plan"
