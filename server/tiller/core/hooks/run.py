"""Run one hook command the way Claude Code does: JSON on stdin, in the workspace, with the
session's scrubbed tool environment plus ``CLAUDE_PROJECT_DIR``, a time limit, and its own
process group (stopped with every descendant on timeout or interrupt: the bash tool's runner,
``tools/shell.run_command``). stdout and stderr are kept apart: exit 2 feeds stderr
back, exit 0 may print JSON on stdout."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tiller.core.hooks.config import HookCommand
from tiller.jsontypes import JSON
from tiller.tools.shell import run_command

HOOK_OUTPUT_CAP = 64_000  # stdout kept (JSON replies are small; context is capped again)
HOOK_STDERR_CAP = 16_000


@dataclass(frozen=True)
class HookRun:
    """How one hook command ended."""

    exit_code: int | None  # None: it timed out (then killed) or its status is unknown
    stdout: str
    stderr: str
    timed_out: bool = False
    failed_to_start: str | None = None


def hook_env(env: Mapping[str, str], workspace: Path) -> dict[str, str]:
    """The tool environment (secrets scrubbed) plus the project dir hooks are told of."""
    return {**env, "CLAUDE_PROJECT_DIR": str(workspace), "TILLER_PROJECT_DIR": str(workspace)}


async def run_hook(
    hook: HookCommand, payload: JSON, workspace: Path, env: Mapping[str, str]
) -> HookRun:
    """Run ``hook`` with ``payload`` on stdin; an interrupt stops it and is re-raised."""
    fd, stderr_path = tempfile.mkstemp(prefix="tiller-hook-", suffix=".err")
    os.close(fd)
    # stderr to its own file (run_command merges it into stdout otherwise); the user's command
    # runs as written after that line.
    script = f"exec 2>{shlex.quote(stderr_path)}\n{hook.command}"
    try:
        try:
            run = await run_command(
                script,
                workspace,
                hook.timeout,
                output_cap=HOOK_OUTPUT_CAP,
                stdin_data=json.dumps(payload).encode(),
                env=hook_env(env, workspace),
            )
        except OSError as err:
            return HookRun(None, "", "", failed_to_start=str(err))
        stderr = await asyncio.to_thread(_read_capped, stderr_path)
    finally:
        _remove(stderr_path)  # a small temporary file: no thread (it runs on cancel too)
    if run.timed_out:
        return HookRun(None, run.output, stderr, timed_out=True)
    return HookRun(run.exit_code, run.output, stderr)


def _read_capped(path: str) -> str:
    with open(path, "rb") as f:
        return f.read(HOOK_STDERR_CAP).decode("utf-8", errors="replace")


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
