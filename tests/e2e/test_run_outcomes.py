"""What `tiller run` ends with when the core decides it (issue 36): a review in plan mode is
an answer (exit 0), not a plan to approve; with no API key, the error says how to set it and
the prompt is no turn of the session."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from fakeapi import FakeMessagesAPI
from test_cli import CLI, RUN_TIMEOUT, CliProcess, cli_env, text


async def run_cli(
    *args: str, workspace: Path, data: Path, api: FakeMessagesAPI, key: str | None = "test-key"
) -> CliProcess:
    process = await asyncio.create_subprocess_exec(
        *CLI, "--workspace", str(workspace), "--base-url", api.base_url,
        "--model", "claude-test-1", *args,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=cli_env(data, key), cwd=workspace,
    )  # fmt: skip
    cli = CliProcess(process)
    await cli.wait(RUN_TIMEOUT)
    return cli


@pytest.mark.parametrize("yes", [True, False])
async def test_a_review_in_plan_mode_exits_0_with_its_answer(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path, yes: bool
) -> None:
    """`tiller run --mode plan --yes "Review cli.py"` sent the model "Plan approved. Implement
    it now."; without --yes the review exited 2 (`stoppedBy: plan`)."""
    review = "## Review of cli.py\n\n1. The parser is fine.\n2. One unused import."
    api.enqueue({"content": [text(review)]}, {"content": [text("never asked for")]})
    args = ["--mode", "plan", *(["--yes"] if yes else []), "--output-format", "json"]
    cli = await run_cli(
        *args, "Review cli.py", workspace=workspace, data=tmp_path / "data", api=api
    )
    assert cli.process.returncode == 0, cli.report()
    assert '"outcome": "completed"' in cli.stdout and "stoppedBy" not in cli.stdout
    assert "One unused import." in cli.stdout
    assert len(api.message_requests()) == 1
    assert "Plan approved" not in str(api.message_requests()[-1].body)


async def test_without_a_key_run_says_how_to_set_it_and_sessions_shows_no_turn(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    failed = await run_cli("hello there", workspace=workspace, data=data, api=api, key=None)
    assert failed.process.returncode == 1, failed.report()
    assert "ANTHROPIC_API_KEY" in failed.stderr, failed.report()
    assert "send it again" not in failed.stderr + failed.stdout
    assert api.requests == []
    listed = await run_cli("/sessions", workspace=workspace, data=data, api=api, key=None)
    assert listed.process.returncode == 0, listed.report()
    assert "hello there" not in listed.stdout and "turn(s)" not in listed.stdout
    assert "No stored sessions yet." in listed.stdout
