"""The offline demo (provider ``{kind: "scripted", script: "demo"}``): any number of prompts get
real answers, and the closing words follow what the user approved or denied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import Tiller

DEMO = {"provider": {"kind": "scripted", "script": "demo"}}


async def allow(params: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "allow"}


async def test_two_prompts_in_a_row_both_get_real_answers(start: Any, workspace: Path) -> None:
    tiller: Tiller = await start(**DEMO)
    tiller.on_confirm = allow
    tiller.on_plan = approve_plan
    first = await tiller.run("show me what you can do", timeout=60)
    assert first["outcome"] == "completed", first
    assert "Done." in first.get("final", "")
    assert 'greet("Tiller user")' in (workspace / "tiller-demo" / "hello.py").read_text()

    second = await tiller.run("and now?", timeout=60)
    assert second["outcome"] == "completed", second
    final = second.get("final", "")
    assert final and "end of script" not in final
    assert tiller.text_of(second["turnId"]).strip() != ""
    assert final not in tiller.text_of(first["turnId"])


async def approve_plan(params: dict[str, Any]) -> dict[str, Any]:
    return {"approved": True, "mode": "acceptEdits"}


async def test_a_denied_edit_is_not_claimed_in_the_closing_text(
    start: Any, workspace: Path
) -> None:
    tiller: Tiller = await start(**DEMO)

    async def deny_edits_only(params: dict[str, Any]) -> dict[str, Any]:
        if params["name"] == "edit_file":
            return {"decision": "deny", "feedback": "keep the world"}
        return {"decision": "allow"}

    tiller.on_confirm = deny_edits_only
    ended = await tiller.run("show me", timeout=60)
    assert ended["outcome"] == "completed", ended
    final = ended["final"]
    assert "denied the edit" in final
    assert "changed its greeting" not in final
    assert {"name": "edit_file", "status": "denied"} in ended["trail"]
    assert 'greet("world")' in (workspace / "tiller-demo" / "hello.py").read_text()


async def test_a_denied_first_write_stops_the_scene_with_nothing_written(
    start: Any, workspace: Path
) -> None:
    tiller: Tiller = await start(**DEMO)  # the harness denies every confirmation by default
    ended = await tiller.run("show me", timeout=60)
    assert ended["outcome"] == "completed", ended
    assert "nothing was written" in ended["final"]
    assert not (workspace / "tiller-demo" / "hello.py").exists()


async def test_the_plan_scene_asks_in_plan_mode_and_carries_out_the_approved_plan(
    start: Any, workspace: Path
) -> None:
    tiller: Tiller = await start(**DEMO)
    tiller.on_confirm = allow
    tiller.on_plan = approve_plan
    await tiller.run("first", timeout=60)
    ended = await tiller.run("second", timeout=60)
    plans = [params for method, params in tiller.asked if method == "tiller/approvePlan"]
    assert len(plans) == 1 and "## Plan" in plans[0]["plan"]
    assert ended["outcome"] == "completed", ended
    assert "as planned" in ended["final"]
    assert (workspace / "tiller-demo" / "NOTES.md").is_file()


async def test_in_plan_mode_the_first_scene_presents_a_plan_and_a_rejection_changes_nothing(
    start: Any, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="plan", **DEMO)
    answers = iter([{"approved": False, "feedback": "use a different name"}])

    async def reject(params: dict[str, Any]) -> dict[str, Any]:
        return next(answers, {"approved": False})

    tiller.on_plan = reject
    ended = await tiller.run("show me", timeout=60)
    plans = [params["plan"] for method, params in tiller.asked if method == "tiller/approvePlan"]
    assert len(plans) == 2, plans
    assert "use a different name" in plans[1]
    assert ended["outcome"] == "completed", ended
    assert not (workspace / "tiller-demo").exists()


async def test_a_revised_plan_is_visibly_revised_not_just_a_line_longer(
    start: Any, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="plan", **DEMO)
    answers = iter([{"approved": False, "feedback": "call it greet.py"}])

    async def revise_once(params: dict[str, Any]) -> dict[str, Any]:
        return next(answers, {"approved": False})

    tiller.on_plan = revise_once
    await tiller.run("show me", timeout=60)
    first, revised = [p["plan"] for m, p in tiller.asked if m == "tiller/approvePlan"]
    assert "revision 1" in revised.splitlines()[0]
    assert "What changed" in revised
    assert "1. Follow your feedback: “call it greet.py”." in revised
    old_steps = [line for line in first.splitlines() if line[:1].isdigit()]
    new_steps = [line for line in revised.splitlines() if line[:1].isdigit()]
    assert len(new_steps) == len(old_steps) + 1 and new_steps[0] not in old_steps


async def test_a_hello_already_as_written_is_not_written_again(start: Any, workspace: Path) -> None:
    from tiller.model.demo_provider import HELLO_SOURCE

    (workspace / "tiller-demo").mkdir()
    (workspace / "tiller-demo" / "hello.py").write_text(HELLO_SOURCE)  # left by a restart
    tiller: Tiller = await start(**DEMO)
    tiller.on_confirm = allow
    ended = await tiller.run("show me", timeout=60)
    assert ended["outcome"] == "completed", ended
    asked = [p["name"] for m, p in tiller.asked if m == "tiller/confirmTool"]
    assert "write_file" not in asked
    assert "nothing to create" in tiller.text_of(ended["turnId"])
    assert "did not write it again" in ended["final"]
    assert 'greet("Tiller user")' in (workspace / "tiller-demo" / "hello.py").read_text()
