"""A turn stopped at a checkpoint says what stopped it, never that the user did when nothing
says so: the calls left unrun, and the model, read the reason (issue 36: `tiller run
--max-turns` told the model "the user stopped the turn at a checkpoint")."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_cli import CLI, RUN_TIMEOUT, CliProcess, cli_env, text, tool_use
from test_scheduling_and_permissions import results_of


def reads(count: int) -> list[dict[str, Any]]:
    return [{"content": [tool_use("read_file", f"toolu_r{i}", path="a.txt")]} for i in range(count)]


async def run_cli(*args: str, api: FakeMessagesAPI, workspace: Path, data: Path) -> CliProcess:
    process = await asyncio.create_subprocess_exec(
        *CLI, "--workspace", str(workspace), "--base-url", api.base_url,
        "--model", "claude-test-1", *args,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=cli_env(data, "test-key"), cwd=workspace,
    )  # fmt: skip
    cli = CliProcess(process)
    await cli.wait(RUN_TIMEOUT)
    return cli


async def test_max_turns_tells_the_model_the_limit_stopped_its_calls_not_the_user(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    api.enqueue(*reads(2))
    cli = await run_cli(
        "--output-format", "stream-json", "--max-turns", "1", "read it twice",
        api=api, workspace=workspace, data=tmp_path / "data",
    )  # fmt: skip
    assert cli.process.returncode == 2, cli.report()
    lines = [json.loads(line) for line in cli.stdout.splitlines()]
    skipped = [e for e in lines if e.get("type") == "toolFinished" and e["status"] == "skipped"]
    assert [e["toolUseId"] for e in skipped] == ["toolu_r1"]
    said = skipped[0]["output"]
    assert "--max-turns 1 reached" in said and "user" not in said
    session_id = lines[-1]["sessionId"]

    tiller: Tiller = await start()  # the same data dir: the session as the model will see it
    await tiller.request("tiller/session/resume", {"sessionId": session_id})
    api.enqueue({"content": [text("Going on.")]})
    await tiller.run("go on")
    [result] = results_of(api, 2)
    assert result["tool_use_id"] == "toolu_r1" and result["is_error"] is True
    assert "--max-turns 1 reached" in str(result["content"])
    assert "user" not in str(result["content"]).replace("The user's next message", "")


async def test_a_stop_answer_without_a_reason_names_the_checkpoint_not_the_user(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    tiller: Tiller = await start(toolBudget=1)  # the harness answers {"continue": false}
    api.enqueue(*reads(2), {"content": [text("Stopped.")]})
    ended = await tiller.run("read it twice")
    assert ended["outcome"] == "stopped"
    [skipped] = [
        e for e in tiller.events_of("toolFinished", ended["turnId"]) if e["status"] == "skipped"
    ]
    assert (
        skipped["output"] == "Not run: the turn was stopped at the checkpoint after 1 tool calls."
    )
    await tiller.run("and now?")
    assert skipped["output"] in str(results_of(api, 2)[0]["content"])  # what the model reads


async def test_a_stop_answer_with_a_reason_tells_it(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    tiller: Tiller = await start(toolBudget=1)

    async def limit(params: dict[str, Any]) -> dict[str, Any]:
        return {"continue": False, "reason": "the nightly job's budget was spent"}

    tiller.on_checkpoint = limit
    api.enqueue(*reads(2))
    ended = await tiller.run("read it twice")
    assert ended["outcome"] == "stopped"
    finished = tiller.events_of("toolFinished", ended["turnId"])
    assert finished[-1]["output"] == (
        "Not run: the turn was stopped before this call: the nightly job's budget was spent."
    )
