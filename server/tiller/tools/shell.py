"""bash: run a command in the workspace root, in its own process group, bounded and stoppable.

The command runs as ``bash -c`` through an asyncio subprocess (the event loop never blocks),
with stdin from /dev/null and stderr merged into stdout. Output is read as it comes and only
its head and tail are kept, so a flood (``yes``) costs no memory. A timeout or a cancellation
(how an interrupt arrives) stops the whole process group: SIGTERM, a short grace, SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ToolInputError
from .base import (
    JSON,
    OUTPUT_CAP,
    Preview,
    ToolContext,
    ToolKind,
    ToolResult,
    cap_output,
    require_str,
)
from .bash_readonly import is_read_only_command

DEFAULT_TIMEOUT_SECONDS = 120
MAX_TIMEOUT_SECONDS = 600
TIMEOUT_GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL after a timeout
CANCEL_GRACE_SECONDS = 0.5  # the same after an interrupt: the user is waiting
EXIT_DRAIN_SECONDS = 1.0  # how long output may keep flowing after the shell itself exited


class OutputBuffer:
    """Keeps the first ``head_size`` and last ``tail_size`` bytes fed to it, counts the rest."""

    def __init__(self, head_size: int, tail_size: int) -> None:
        self.head_size = head_size
        self.tail_size = tail_size
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.head_size - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.tail_size
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n… [truncated {self.dropped} bytes of output] …\n{tail}"


@dataclass(frozen=True)
class CommandRun:
    """How a command ended: its kept output, exit code (negative: signal), what we stopped."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    stopped_stragglers: bool = False


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, sig)


class _Collector(asyncio.SubprocessProtocol):
    """Feeds the output into a bounded buffer and tells when the shell and its output end.

    The shell's exit and the end of its output are separate: background children it started
    may keep the output open after it exited.
    """

    def __init__(self, buffer: OutputBuffer, loop: asyncio.AbstractEventLoop) -> None:
        self.buffer = buffer
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.buffer.feed(data.encode() if isinstance(data, str) else data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


async def _settled(future: asyncio.Future[None], seconds: float) -> bool:
    """Whether ``future`` is done within ``seconds``; never cancels it."""
    done, _ = await asyncio.wait({future}, timeout=seconds)
    return bool(done)


async def _stop_group(pgid: int, collector: _Collector, grace: float) -> None:
    """SIGTERM the process group, give it ``grace`` seconds to end, then SIGKILL the group.

    The SIGKILL is sent even if this coroutine is cancelled while it waits.
    """
    _signal_group(pgid, signal.SIGTERM)
    try:
        await asyncio.wait({collector.exited, collector.output_closed}, timeout=grace)
    finally:
        _signal_group(pgid, signal.SIGKILL)


async def run_command(
    command: str,
    cwd: Path,
    time_limit: float,
    *,
    output_cap: int = OUTPUT_CAP,
    stdin_data: bytes | None = None,
) -> CommandRun:
    """Run ``command`` to its end, its time limit, or our cancellation (which is re-raised).

    ``stdin_data``, when given, is written to the command's stdin (then closed).
    """
    margin = 200  # room for the truncation marker and the status line
    buffer = OutputBuffer(output_cap * 2 // 3 - margin, output_cap // 3 - margin)
    loop = asyncio.get_running_loop()
    transport, collector = await loop.subprocess_exec(
        lambda: _Collector(buffer, loop),
        "bash",
        "-c",
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL if stdin_data is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    pgid = transport.get_pid()  # its own session: the group id is its pid
    stdin = transport.get_pipe_transport(0) if stdin_data is not None else None
    if stdin is not None and stdin_data is not None:
        stdin.write(stdin_data)  # type: ignore[attr-defined]
        stdin.close()
    try:
        if not await _settled(collector.exited, time_limit):
            await _stop_group(pgid, collector, TIMEOUT_GRACE_SECONDS)
            await _settled(collector.output_closed, EXIT_DRAIN_SECONDS)
            return CommandRun(buffer.text(), None, timed_out=True)
        stragglers = not await _settled(collector.output_closed, EXIT_DRAIN_SECONDS)
        if stragglers:
            await _stop_group(pgid, collector, CANCEL_GRACE_SECONDS)
            await _settled(collector.output_closed, EXIT_DRAIN_SECONDS)
        return CommandRun(buffer.text(), transport.get_returncode(), stopped_stragglers=stragglers)
    except asyncio.CancelledError:
        await _stop_group(pgid, collector, CANCEL_GRACE_SECONDS)
        raise
    finally:
        transport.close()


def _timeout_of(tool_input: JSON) -> float:
    value = tool_input.get("timeout_seconds")
    if value is None:
        return DEFAULT_TIMEOUT_SECONDS
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolInputError("field 'timeout_seconds' must be a number of seconds")
    if not 0 < value <= MAX_TIMEOUT_SECONDS:
        raise ToolInputError(
            f"timeout_seconds must be more than 0 and at most {MAX_TIMEOUT_SECONDS}"
        )
    return float(value)


def _describe(run: CommandRun, timeout: float) -> ToolResult:
    output = run.output if run.output else "(no output)"
    if run.stopped_stragglers:
        output += (
            "\n[background processes started by the command kept its output open and were "
            "stopped; start long-running processes with their output redirected, e.g. "
            "`cmd > cmd.log 2>&1 &`]"
        )
    if run.timed_out:
        return ToolResult(
            f"timed out after {timeout:g} s; the command and its child processes were "
            f"stopped. Output so far:\n{output}",
            is_error=True,
        )
    match run.exit_code:
        case 0:
            return ToolResult(output)
        case int(code) if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return ToolResult(f"killed by signal {name}\n{output}", is_error=True)
        case code:
            return ToolResult(f"exit code {code}\n{output}", is_error=True)


@dataclass(frozen=True)
class Bash:
    name: str = field(default="bash", init=False)
    kind: ToolKind = field(default="bash", init=False)
    output_cap: int = OUTPUT_CAP

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Run a shell command with `bash -c` in the workspace root (non-interactive: "
                "stdin is empty). stdout and stderr come back merged; long output keeps its "
                f"beginning and end (about {self.output_cap} characters in all). A non-zero "
                "exit code is reported as an error. The command is stopped with all its child "
                f"processes after timeout_seconds (default {DEFAULT_TIMEOUT_SECONDS}, at most "
                f"{MAX_TIMEOUT_SECONDS}). Prefer read_file, list_files and grep for reading "
                "and searching files, and edit_file/write_file for changing them."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line to run."},
                    "timeout_seconds": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "maximum": MAX_TIMEOUT_SECONDS,
                        "description": "Seconds before the command is stopped (default "
                        f"{DEFAULT_TIMEOUT_SECONDS}).",
                    },
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        command = tool_input.get("command")
        return isinstance(command, str) and is_read_only_command(command)

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        command = tool_input.get("command")
        return Preview(
            "command",
            {
                "command": command if isinstance(command, str) else "",
                "cwd": str(ctx.workspace.resolve()),
            },
        )

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        try:
            command = require_str(tool_input, "command") or ""
            if not command.strip():
                raise ToolInputError("command must not be empty")
            timeout = _timeout_of(tool_input)
        except ToolInputError as exc:
            return ToolResult(exc.message, is_error=True)
        try:
            run = await run_command(
                command, ctx.workspace.resolve(), timeout, output_cap=self.output_cap
            )
        except OSError as exc:
            return ToolResult(f"could not start bash: {exc.strerror or exc}", is_error=True)
        result = _describe(run, timeout)
        return ToolResult(cap_output(result.output, self.output_cap), result.is_error)
