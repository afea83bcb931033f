"""bash: run a command in the workspace root, confined, bounded, stoppable, without secrets.

The command runs as ``bash -c`` through an asyncio subprocess (the event loop never blocks),
with stdin from /dev/null and stderr merged into stdout, under a small supervisor process
(``supervisor.py``) that ends every process the command started when the command ends, and
all of them when the server dies. A command that runs without the user's confirmation runs
inside the sandbox (``sandbox.py``) where there is one; an approved command runs, with its
supervisor, in a PID namespace of its own where bubblewrap works. The environment is the
server's without its secrets (``tool_env.py``). Output is read as it comes and only its head
and tail are kept, so a flood (``yes``) costs no memory. A timeout or a cancellation (how an
interrupt arrives) stops everything: SIGTERM, a short grace, SIGKILL (under bubblewrap the
PID namespace dies at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tiller.errors import ToolInputError
from tiller.jsontypes import JSON
from tiller.proc_stat import SESSION, stat_fields
from tiller.tools.base import (
    OUTPUT_CAP,
    CommandRun,
    Preview,
    ToolContext,
    ToolKind,
    ToolResult,
    cap_output,
    require_str,
)
from tiller.tools.live_output import LiveOutput, OutputBuffer
from tiller.workspace.bash.readonly import is_read_only_command
from tiller.workspace.sandbox import (
    Confined,
    Confinement,
    Isolated,
    Unavailable,
    Unconfined,
    confine,
    isolate,
)
from tiller.workspace.supervised import supervised
from tiller.workspace.tool_env import tool_env, unasked_env

__all__ = ["Bash", "CommandRun", "LiveOutput", "OutputBuffer", "SandboxUnavailable", "run_command"]

DEFAULT_TIMEOUT_SECONDS = 120
MAX_TIMEOUT_SECONDS = 600
TIMEOUT_GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL after a timeout
CANCEL_GRACE_SECONDS = 0.5  # the same after an interrupt: the user is waiting
SUPERVISOR_GRACE_SECONDS = 1.0  # the supervisor's own grace for the command, plus a margin
EXIT_DRAIN_SECONDS = 1.0  # how long output may keep flowing after the command ended
UNCONFINED = Unconfined()


class SandboxUnavailable(Exception):
    """The settings demand a sandbox that this machine does not have."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.kill(pid, sig)


def _kill_session(sid: int) -> None:
    """SIGKILL the process group and every process of the session ``sid`` (a last resort)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(stat_fields(entry)[SESSION]) == sid:
                    _signal(int(entry), signal.SIGKILL)


class _Collector(asyncio.SubprocessProtocol):
    """Feeds the output into a bounded buffer and tells when the command and its output end."""

    def __init__(
        self, buffer: OutputBuffer, live: LiveOutput | None, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.buffer = buffer
        self.live = live
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        chunk = data.encode() if isinstance(data, str) else data
        self.buffer.feed(chunk)
        if self.live is not None:
            self.live.feed(chunk)

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


def _end_sandboxed(pid: int) -> None:
    """End an interrupted sandboxed command at once, without waiting for it: SIGKILL to
    bwrap's session. Its processes all live in bwrap's PID namespace, which the kernel empties
    when bwrap goes (``--die-with-parent`` ends its init with it). A SIGTERM first would change
    nothing: bwrap does not pass it on, it dies of it, and its namespace goes the same way.
    The turn need not wait for that: its end came ~1-6 ms sooner (bench/interrupt_latency.py,
    mid-bash); bwrap is reaped when it has gone (the transport is closed behind us)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _stop(pid: int, collector: _Collector, grace: float, *, sandboxed: bool) -> None:
    """Ask the supervisor (or bwrap, whose PID namespace then dies whole, the supervisor in it
    too) to stop the command's processes; SIGKILL its session if it does not.

    The SIGKILL is sent even if this coroutine is cancelled while it waits. A sandboxed
    command's processes all live in bwrap's PID namespace, which the kernel empties when bwrap
    goes (``--die-with-parent`` ends its init, and with it every process of the namespace): it
    needs no sweep of ``/proc`` for its session, which costs ~20 ms on a busy machine and held
    up the end of an interrupted turn (bench/interrupt_latency.py, mid-bash).
    """
    _signal(pid, signal.SIGTERM)
    try:
        await asyncio.wait({collector.exited}, timeout=grace + SUPERVISOR_GRACE_SECONDS)
    finally:
        if sandboxed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        else:
            _kill_session(pid)


def _stop_abandoned(
    status_write: int,
    spawn: asyncio.Future[tuple[asyncio.SubprocessTransport, _Collector]],
) -> None:
    """A command whose start was interrupted: once it exists, stop it as an interrupted one
    (SIGTERM to its supervisor or bwrap, then SIGKILL to its session)."""
    os.close(status_write)
    if spawn.cancelled() or spawn.exception() is not None:
        return
    transport, _ = spawn.result()
    pid = transport.get_pid()
    _signal(pid, signal.SIGTERM)

    def kill() -> None:
        _kill_session(pid)
        transport.close()

    asyncio.get_running_loop().call_later(CANCEL_GRACE_SECONDS + SUPERVISOR_GRACE_SECONDS, kill)


def _read_status(fd: int) -> tuple[int, int] | None:
    """The supervisor's ``EXIT STOPPED`` line, if it wrote one."""
    try:
        words = os.read(fd, 64).split()
        return int(words[0]), int(words[1])
    except (OSError, ValueError, IndexError):
        return None


def command_argv(command: str, cwd: Path, confinement: Confinement, status_fd: int) -> list[str]:
    """What to start for ``command``: ``bash -c command``, confined as asked, under the
    supervisor (reporting on ``status_fd``) unless the sandbox itself ends its processes."""
    argv = ["bash", "-c", command]
    match confinement:
        case Confined(writable=writable, also=also):
            # bwrap's own PID namespace and --die-with-parent end every process of the command
            # with it and with the server: no supervisor (it costs a Python start).
            return confine(argv, cwd, writable, also)
        case Isolated():
            # A supervisor inside the namespace (its parent is bwrap's init, pid 1) counts and
            # stops what the command leaves behind; one outside, a subreaper with the server's
            # death signal, ends every process of the namespace with the server, even when
            # bwrap was killed while it started (--die-with-parent alone missed that).
            inner = isolate(supervised(argv, 1, status_fd), cwd)
            return supervised(inner, os.getpid(), -1)
        case Unconfined() | Unavailable():
            return supervised(argv, os.getpid(), status_fd)


async def run_command(
    command: str,
    cwd: Path,
    time_limit: float,
    *,
    output_cap: int = OUTPUT_CAP,
    stdin_data: bytes | None = None,
    env: Mapping[str, str] | None = None,
    confinement: Confinement = UNCONFINED,
    live: LiveOutput | None = None,
) -> CommandRun:
    """Run ``command`` to its end, its time limit, or our cancellation (which is re-raised).

    It runs under the supervisor (every process it starts ends with it, and with the server;
    in the sandbox, bwrap's PID namespace does that), in its own session, with ``env``
    (default: this environment, secrets removed), confined as ``confinement`` says.
    ``stdin_data``, when given, is written to its stdin (then closed). ``live`` gets the output
    as it arrives and keeps it for the caller if we are cancelled.
    """
    if isinstance(confinement, Unavailable):
        raise SandboxUnavailable(confinement.reason)
    margin = 200  # room for the truncation marker and the status line
    buffer = OutputBuffer(output_cap * 2 // 3 - margin, output_cap // 3 - margin)
    status_read, status_write = os.pipe()
    os.set_blocking(status_read, False)
    argv = command_argv(command, cwd, confinement, status_write)
    supervised = not isinstance(confinement, Confined)
    make_collector = functools.partial(_Collector, buffer, live, asyncio.get_running_loop())
    try:
        transport, collector = await _spawn(
            argv,
            cwd,
            dict(tool_env() if env is None else env),
            make_collector,
            piped_stdin=stdin_data is not None,
            status_write=status_write,
            supervised=supervised,
        )
    except BaseException:
        os.close(status_read)
        raise
    pid = transport.get_pid()  # its own session: the session id is its pid
    if stdin_data is not None:
        _feed_stdin(transport, stdin_data)
    try:
        return await _run_to_end(
            pid, transport, collector, time_limit, status_read, supervised=supervised
        )
    except asyncio.CancelledError:
        if supervised:
            await _stop(pid, collector, CANCEL_GRACE_SECONDS, sandboxed=False)
        else:
            _end_sandboxed(pid)
        raise
    finally:
        os.close(status_read)
        transport.close()


async def _spawn(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    make_collector: Callable[[], _Collector],
    *,
    piped_stdin: bool,
    status_write: int,
    supervised: bool,
) -> tuple[asyncio.SubprocessTransport, _Collector]:
    """Start ``argv`` in a session of its own, stderr merged into stdout. The write end of
    the supervisor's status pipe (passed on when ``supervised``) is closed here whatever
    happens; a start we are cancelled in is stopped once it exists."""
    spawn = asyncio.ensure_future(
        asyncio.get_running_loop().subprocess_exec(
            make_collector,
            *argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if piped_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(status_write,) if supervised else (),
        )
    )
    try:
        # Shielded: an interrupt while the process starts must not leave it running unseen.
        started = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        spawn.add_done_callback(functools.partial(_stop_abandoned, status_write))
        raise
    except BaseException:
        os.close(status_write)
        raise
    os.close(status_write)
    return started


def _feed_stdin(transport: asyncio.SubprocessTransport, data: bytes) -> None:
    """Write ``data`` to the command's stdin, then close it."""
    stdin = transport.get_pipe_transport(0)
    if stdin is not None:
        stdin.write(data)  # type: ignore[attr-defined]
        stdin.close()


async def _run_to_end(
    pid: int,
    transport: asyncio.SubprocessTransport,
    collector: _Collector,
    time_limit: float,
    status_read: int,
    *,
    supervised: bool,
) -> CommandRun:
    """Wait for the command's end and its output's, or stop it at its time limit: its exit
    code, and what its supervisor (reporting on ``status_read``) stopped."""
    buffer = collector.buffer
    if not await _settled(collector.exited, time_limit):
        await _stop(pid, collector, TIMEOUT_GRACE_SECONDS, sandboxed=not supervised)
        await _settled(collector.output_closed, EXIT_DRAIN_SECONDS)
        return CommandRun(buffer.text(), None, timed_out=True)
    if not await _settled(collector.output_closed, EXIT_DRAIN_SECONDS):
        _kill_session(pid)  # something outlived the supervisor: cannot happen, but be sure
        await _settled(collector.output_closed, EXIT_DRAIN_SECONDS)
    status = _read_status(status_read) if supervised else None
    if status is None:
        return CommandRun(buffer.text(), transport.get_returncode())
    return CommandRun(buffer.text(), status[0], stopped=status[1])


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
    if run.stopped:
        output += (
            f"\n[{run.stopped} background process(es) the command left running were stopped: "
            "every process a command starts ends with it. Wait for background jobs in the "
            "same command (`cmd & ...; wait`)]"
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
        case None:  # how it ended was not seen (e.g. an editor's terminal failed meanwhile)
            return ToolResult(f"the command's exit status is unknown\n{output}", is_error=True)
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
    """The bash tool. ``workspace``: where ``is_read_only`` resolves paths when not given one."""

    name: str = field(default="bash", init=False)
    kind: ToolKind = field(default="bash", init=False)
    output_cap: int = OUTPUT_CAP
    workspace: Path | None = None

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Run a shell command with `bash -c` in the workspace root (non-interactive: "
                "stdin is empty). stdout and stderr come back merged; long output keeps its "
                f"beginning and end (about {self.output_cap} characters in all). A non-zero "
                "exit code is reported as an error. Every process the command starts ends "
                "with it (background jobs included); the command is stopped with all its "
                f"processes after timeout_seconds (default {DEFAULT_TIMEOUT_SECONDS}, at most "
                f"{MAX_TIMEOUT_SECONDS}). Commands that only read run without asking, in a "
                "read-only sandbox without network. A command may not see or signal processes "
                "it did not start (`ps`, `kill`). Secrets such as API keys are not in the "
                "environment. Prefer read_file, list_files and grep for reading and "
                "searching files, and edit_file/write_file for changing them."
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
        """Provably read-only inside the tool's ``workspace``; without one, never."""
        return self.workspace is not None and self.is_read_only_in(tool_input, self.workspace)

    def is_read_only_in(
        self, tool_input: JSON, workspace: Path, others: Sequence[Path] = ()
    ) -> bool:
        """Provably read-only inside ``workspace`` and the other roots ``others``: see
        workspace/bash/readonly.py."""
        command = tool_input.get("command")
        return isinstance(command, str) and is_read_only_command(command, workspace, others)

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
        cwd = ctx.workspace.resolve()
        confinement = ctx.shell.confinement(asked=not ctx.sandboxed)
        if isinstance(confinement, Confined):  # every root is bound, like the primary one
            confinement = replace(confinement, also=tuple(f.real for f in ctx.roots.folders[1:]))
        # Without the user's yes (read-only, or a rule's allow), git runs nothing the
        # repository's configuration names: the unasked overrides.
        env = unasked_env(ctx.shell.env) if ctx.sandboxed or ctx.unasked else ctx.shell.env
        run: CommandRun | None = None
        if (
            ctx.terminal is not None
            and not ctx.sandboxed
            and isinstance(confinement, Unconfined | Isolated)
        ):
            # Approved by the user, and the settings do not ask for the sandbox: the editor's
            # terminal may run it (as the editor's process: no PID namespace of ours, see
            # docs/security.md). A command that runs unasked never gets here: it stays in the
            # sandbox.
            run = await ctx.terminal.run(command, cwd, env, timeout, self.output_cap, ctx.live)
        try:
            if run is None:
                run = await run_command(
                    command,
                    cwd,
                    timeout,
                    output_cap=self.output_cap,
                    env=env,
                    confinement=confinement,
                    live=ctx.live,
                )
        except SandboxUnavailable as exc:
            return ToolResult(f"not run: {exc.reason}", is_error=True)
        except OSError as exc:
            return ToolResult(f"could not start bash: {exc.strerror or exc}", is_error=True)
        result = _describe(run, timeout)
        return ToolResult(cap_output(result.output, self.output_cap), result.is_error)
