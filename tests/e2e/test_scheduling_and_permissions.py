"""Scheduling, permissions and confinement, end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use


def results_of(api: FakeMessagesAPI, request_index: int) -> list[dict[str, Any]]:
    last = api.message_requests()[request_index].body["messages"][-1]
    return [b for b in last["content"] if b["type"] == "tool_result"]


async def test_parallel_reads_overlap_while_a_write_splits_batches_and_results_keep_call_order(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="acceptEdits")
    (workspace / "a.txt").write_text("A\n")
    api.enqueue(
        {
            "content": [
                tool_use("bash", "t1", command="sleep 0.3; echo one"),
                tool_use("bash", "t2", command="sleep 0.1 && echo two"),
                tool_use("read_file", "t3", path="a.txt"),
                tool_use("write_file", "t4", path="b.txt", content="B\n"),
                tool_use("bash", "t5", command="cat b.txt"),
                tool_use("grep", "t6", pattern="B"),
            ]
        },
        {"content": [text("done")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed"
    turn = ended["turnId"]
    started = {e["toolUseId"]: e for e in tiller.events_of("toolStarted", turn)}
    assert [started[t]["batch"] for t in ("t1", "t2", "t3", "t4", "t5", "t6")] == [0, 0, 0, 1, 2, 2]
    assert all(started[t]["concurrent"] for t in ("t1", "t2", "t3", "t5", "t6"))
    assert started["t4"]["concurrent"] is False
    # The three reads of batch 0 all started before any of them finished: they overlapped.
    order = [(e["type"], e.get("toolUseId")) for e in tiller.events if e["turnId"] == turn]
    first_finish = order.index(("toolFinished", "t2"))
    assert all(order.index(("toolStarted", t)) < first_finish for t in ("t1", "t2", "t3"))
    # t2 finished before t1, yet results are in call order.
    assert order.index(("toolFinished", "t2")) < order.index(("toolFinished", "t1"))
    results = results_of(api, 1)
    assert [r["tool_use_id"] for r in results] == ["t1", "t2", "t3", "t4", "t5", "t6"]
    assert "one" in str(results[0]["content"]) and "B" in str(results[4]["content"])
    assert (workspace / "b.txt").read_text() == "B\n"


async def test_one_failing_call_does_not_cancel_its_batch_mates(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "ok.txt").write_text("fine\n")
    api.enqueue(
        {
            "content": [
                tool_use("read_file", "t1", path="missing.txt"),
                tool_use("read_file", "t2", path="ok.txt"),
            ]
        },
        {"content": [text("done")]},
    )
    ended = await tiller.run("go")
    assert sorted(t["status"] for t in ended["trail"]) == ["error", "ok"]
    results = results_of(api, 1)
    assert results[0]["is_error"] is True and "fine" in str(results[1]["content"])


async def test_path_escape_is_refused(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    outside = workspace.parent / "secret.txt"
    outside.write_text("top secret")
    (workspace / "link").symlink_to(outside)
    api.enqueue(
        {
            "content": [
                tool_use("read_file", "t1", path="../secret.txt"),
                tool_use("read_file", "t2", path=str(outside)),
                tool_use("read_file", "t3", path="link"),
            ]
        },
        {"content": [text("done")]},
    )
    await tiller.run("go")
    for result in results_of(api, 1):
        assert result["is_error"] is True
        assert "outside the workspace" in str(result["content"])
        assert "top secret" not in str(result["content"])


async def test_edit_without_read_is_refused_and_file_untouched(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="acceptEdits")
    target = workspace / "app.py"
    target.write_text("x = 1\n")
    api.enqueue(
        {"content": [tool_use("edit_file", "t1", path="app.py", old_string="1", new_string="2")]},
        {"content": [text("done")]},
    )
    await tiller.run("go")
    result = results_of(api, 1)[0]
    assert result["is_error"] is True and "read_file" in str(result["content"])
    assert target.read_text() == "x = 1\n"


async def test_edit_confirmed_with_diff_preview_then_allow_session_skips_the_next_ask(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    target = workspace / "app.py"
    target.write_text("x = 1\n")

    async def allow_session(params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allowSession"}

    tiller.on_confirm = allow_session
    api.enqueue(
        {"content": [tool_use("read_file", "t1", path="app.py")]},
        {
            "content": [
                tool_use("edit_file", "t2", path="app.py", old_string="x = 1", new_string="x = 2")
            ]
        },
        {"content": [tool_use("write_file", "t3", path="new.py", content="y = 3\n")]},
        {"content": [text("done")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed"
    asks = [params for method, params in tiller.asked if method == "tiller/confirmTool"]
    assert len(asks) == 1
    preview = asks[0]["preview"]
    assert preview == {"kind": "diff", "path": "app.py", "before": "x = 1\n", "after": "x = 2\n"}
    assert target.read_text() == "x = 2\n" and (workspace / "new.py").read_text() == "y = 3\n"


async def test_denied_command_feedback_reaches_the_model(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    async def deny(params: dict[str, Any]) -> dict[str, Any]:
        assert params["preview"]["kind"] == "command"
        assert params["preview"]["command"] == "touch made.txt"
        return {"decision": "deny", "feedback": "use the Makefile instead"}

    tiller.on_confirm = deny
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch made.txt")]},
        {"content": [text("ok")]},
    )
    ended = await tiller.run("go")
    assert ended["trail"] == [{"name": "bash", "status": "denied"}]
    result = results_of(api, 1)[0]
    assert result["is_error"] is True and "use the Makefile instead" in str(result["content"])
    assert not (workspace / "made.txt").exists()


async def test_malformed_confirmation_answer_fails_closed(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    async def garbage(params: dict[str, Any]) -> Any:
        return {"decision": "yes please"}

    tiller.on_confirm = garbage
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch made.txt")]},
        {"content": [text("ok")]},
    )
    ended = await tiller.run("go")
    assert ended["trail"] == [{"name": "bash", "status": "denied"}]
    assert not (workspace / "made.txt").exists()


async def test_plan_mode_denies_writes_on_the_server(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="plan")
    api.enqueue(
        {
            "content": [
                tool_use("write_file", "t1", path="x.txt", content="no"),
                tool_use("bash", "t2", command="rm -rf ."),
                tool_use("bash", "t3", command="ls"),
            ]
        },
        {"content": [text("ok")]},
    )
    await tiller.run("go")
    statuses = [e["status"] for e in tiller.events_of("toolFinished")]
    assert statuses == ["denied", "denied", "ok"]
    assert "exit_plan_mode" in str(results_of(api, 1)[0]["content"])
    assert not (workspace / "x.txt").exists()
    # Nothing was put to the user: a final answer in plan mode is no plan (issue 36).
    assert tiller.asked == []


async def test_unknown_tool_and_malformed_input_become_error_results(
    tiller: Tiller, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {
            "content": [
                tool_use("teleport", "t1", to="mars"),
                tool_use("read_file", "t2", path=42),
            ]
        },
        {"content": [text("ok")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed"
    results = results_of(api, 1)
    assert "Unknown tool" in str(results[0]["content"])
    assert results[1]["is_error"] is True and "path" in str(results[1]["content"])
