"""The stop hook: a shell command that may send the model back to work when it wants to stop."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tiller.tools.shell import run_command

STOP_HOOK_TIMEOUT_SECONDS = 60.0
MAX_CONTINUATIONS = 3


@dataclass(frozen=True)
class HookPassed:
    pass


@dataclass(frozen=True)
class HookContinue:
    output: str


@dataclass(frozen=True)
class HookBroken:
    reason: str


HookOutcome = HookPassed | HookContinue | HookBroken


async def run_stop_hook(
    command: str,
    workspace: Path,
    *,
    session_id: str,
    turn_id: str,
    final: str | None,
    time_limit: float = STOP_HOOK_TIMEOUT_SECONDS,
    env: Mapping[str, str] | None = None,
) -> HookOutcome:
    """Exit 0: the turn may end. Non-zero with output: continue with that output.

    The hook runs like an approved command: unsandboxed (the user wrote it), with ``env``
    (the session's scrubbed environment; default: this one without its secrets).
    """
    payload = json.dumps({"sessionId": session_id, "turnId": turn_id, "final": final})
    try:
        run = await run_command(
            command,
            workspace,
            time_limit,
            output_cap=8_000,
            stdin_data=payload.encode(),
            env=env,
        )
    except OSError as err:
        return HookBroken(f"stop hook could not start: {err}")
    if run.timed_out:
        return HookBroken(f"stop hook timed out after {time_limit:.0f} s and was killed")
    output = run.output.strip()
    match run.exit_code:
        case 0:
            return HookPassed()
        case code if code is not None and code > 0 and output:
            return HookContinue(output)
        case code:
            return HookBroken(f"stop hook failed (exit {code}) without output")
