"""`scripts/run.sh` works in the directory it is run from (issue 17: it ran `tiller run` in
the Tiller checkout, so `scripts/run.sh --yes "fix the failing test"` would edit Tiller)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from fakeapi import FakeMessagesAPI
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use

REPO = Path(__file__).resolve().parents[2]


async def test_run_script_edits_the_directory_it_is_run_from(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("write_file", "w1", path="made-here.txt", content="hi\n")]},
        {"content": [text("Wrote it.")]},
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TILLER_"))}
    env.update(
        ANTHROPIC_API_KEY="test-key",
        ANTHROPIC_BASE_URL=api.base_url,
        TILLER_DATA_DIR=str(tmp_path / "data"),
        TILLER_MODEL="claude-test-1",
    )
    process = await asyncio.create_subprocess_exec(
        str(REPO / "scripts" / "run.sh"),
        "--yes",
        "write a file",
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, out.decode(errors="replace")
    assert (workspace / "made-here.txt").read_text() == "hi\n"
    assert not (REPO / "made-here.txt").exists()
    assert results_of(api, 1)[0].get("is_error") is not True
