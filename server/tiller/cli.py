"""``tiller``: the headless terminal client.

``tiller run [options] PROMPT...`` starts the server (``python -m tiller``) over stdio, sends
one prompt, streams what happens and exits when the turn ends:

- stdout: the answer text as it streams, the tool log (``… bash ls``, ``✓ bash ls (12 ms)``,
  ``✗ bash make: exit code 2``), the plan when one is presented, and at the end of a turn that
  did not complete its outcome and trail (``read_file ✓ → edit_file ✓ → bash ✗``);
- stderr: notices (``· text``), questions, previews and errors.

Exit codes: 0 completed (or a slash command handled), 1 failed, 2 stopped at a checkpoint,
130 interrupted (Ctrl-C), 64 usage errors.

The first Ctrl-C interrupts the turn (``tiller/interrupt``) and waits for it to end; a second
one kills the server and exits at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import enum
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TextIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp._base_client import BaseLanguageClient

from . import __version__
from . import protocol as p
from .protocol import JSON, MODES
from .wire import plain_dict_converter

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_STOPPED = 2
EXIT_USAGE = 64
EXIT_INTERRUPTED = 130
OUTCOME_EXIT = {
    "completed": EXIT_COMPLETED,
    "failed": EXIT_FAILED,
    "stopped": EXIT_STOPPED,
    "interrupted": EXIT_INTERRUPTED,
}

SHUTDOWN_SECONDS = 5.0
QUIT_GRACE_SECONDS = 1.0
SUMMARY_WIDTH = 60
DIM, RESET = "\x1b[2m", "\x1b[0m"
RED, GREEN = "\x1b[31m", "\x1b[32m"


# --- command line -----------------------------------------------------------------------------


class UsageError(Exception):
    """A wrong command line: exit 64 with the message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


@dataclass(frozen=True)
class RunOptions:
    prompt: str
    workspace: Path
    initialization_options: JSON
    yes: bool


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tiller", description="Tiller, a coding agent you can steer.")
    parser.add_argument("--version", action="version", version=f"tiller {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run = commands.add_parser(
        "run",
        help="run one prompt to its end and exit",
        description="Run one prompt in a workspace and exit when the turn ends. Exit code: "
        "0 completed, 1 failed, 2 stopped, 130 interrupted, 64 usage error.",
    )
    run.add_argument("--mode", choices=MODES, default="default", help="permission mode")
    run.add_argument("--model", help="model id (default: $TILLER_MODEL or the server's)")
    source = run.add_mutually_exclusive_group()
    source.add_argument(
        "--demo", action="store_true", help="play the bundled offline demo instead of a model"
    )
    source.add_argument("--script", metavar="FILE", help="play a JSON script of responses")
    source.add_argument(
        "--base-url", metavar="URL", help="Messages API base URL (key: $ANTHROPIC_API_KEY)"
    )
    run.add_argument(
        "--yes", "-y", action="store_true", help="allow every tool call, plan and checkpoint"
    )
    run.add_argument(
        "--workspace",
        metavar="DIR",
        type=Path,
        help="workspace root (default: the current directory; with --demo a new temp dir)",
    )
    run.add_argument(
        "--tool-budget",
        metavar="N",
        type=int,
        help="ask to continue after every N tool calls (0: never)",
    )
    run.add_argument("prompt", nargs="+", metavar="PROMPT", help="what to do")
    return parser


def parse_run(args: argparse.Namespace) -> RunOptions:
    prompt = " ".join(args.prompt).strip()
    if not prompt:
        raise UsageError("the prompt is empty")
    if args.tool_budget is not None and args.tool_budget < 0:
        raise UsageError("--tool-budget must be 0 or more")
    options: JSON = {"permissionMode": args.mode}
    if args.model:
        options["model"] = args.model
    if args.tool_budget is not None:
        options["toolBudget"] = args.tool_budget
    if args.demo:
        options["provider"] = {"kind": "scripted", "script": "demo"}
    elif args.script:
        script = Path(args.script).resolve()
        if not script.is_file():
            raise UsageError(f"--script: no such file: {args.script}")
        options["provider"] = {"kind": "scripted", "script": str(script)}
    elif args.base_url:
        options["provider"] = {"kind": "anthropic", "baseUrl": args.base_url}

    if args.workspace is not None:
        workspace = args.workspace.expanduser().resolve()
        if not workspace.is_dir():
            raise UsageError(f"--workspace: not a directory: {args.workspace}")
    elif args.demo:
        workspace = Path(tempfile.mkdtemp(prefix="tiller-demo-")).resolve()
        print(f"· demo workspace: {workspace}", file=sys.stderr, flush=True)
    else:
        workspace = Path.cwd().resolve()
    return RunOptions(prompt, workspace, options, args.yes)


# --- terminal output --------------------------------------------------------------------------


class Output:
    """stdout for the answer and the tool log, stderr for everything else."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.out_tty = out.isatty()
        self.err_tty = err.isatty()
        self._at_line_start = True

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self._at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        self.end_line()
        self.write(text + "\n")

    def end_line(self) -> None:
        if not self._at_line_start:
            self.write("\n")

    def info(self, text: str) -> None:
        """A line on stderr; on a shared terminal, first finish the answer's open line."""
        if self.out_tty:
            self.end_line()
        self.err.write(text + "\n")
        self.err.flush()

    def dim(self, text: str) -> str:
        return f"{DIM}{text}{RESET}" if self.out_tty else text


def shorten(text: str, width: int = SUMMARY_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def tool_summary(name: str, tool_input: Any) -> str:
    """A few words that identify a call: its path, command or pattern."""
    if not isinstance(tool_input, dict):
        return ""
    match name:
        case "bash":
            return shorten(str(tool_input.get("command", "")))
        case "grep":
            where = tool_input.get("path") or tool_input.get("glob")
            pattern = str(tool_input.get("pattern", ""))
            return shorten(f"{pattern} in {where}" if where else pattern)
        case "list_files":
            parts = [str(tool_input[k]) for k in ("path", "pattern") if tool_input.get(k)]
            return shorten(" ".join(parts) or ".")
        case "todo_write":
            todos = tool_input.get("todos")
            return f"{len(todos)} items" if isinstance(todos, list) else ""
    for key in ("path", "command", "pattern"):
        if isinstance(tool_input.get(key), str):
            return shorten(tool_input[key])
    return ""


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return shorten(line, 100)
    return ""


def trail_text(trail: Any) -> str:
    if not isinstance(trail, list):
        return ""
    return " → ".join(
        f"{item.get('name', '?')} {'✓' if item.get('status') == 'ok' else '✗'}"
        for item in trail
        if isinstance(item, dict)
    )


def diff_text(preview: JSON) -> str:
    path = str(preview.get("path", "file"))
    before = str(preview.get("before") or "")
    after = str(preview.get("after") or "")
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if not before else f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# --- terminal input ---------------------------------------------------------------------------


class TerminalInput:
    """Lines from the terminal, read in a daemon thread so the event loop never blocks.

    A read in flight survives a withdrawn question and serves the next one. The thread is a
    daemon reading the raw file descriptor: an executor thread (``asyncio.to_thread``) blocked
    in ``input()`` would keep the process from exiting until the user pressed Enter.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._wanted = threading.Semaphore(0)
        self._lines: asyncio.Queue[str | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._requested = False
        self._eof = False

    async def readline(self) -> str | None:
        """The next line without its newline; ``None`` at end of input."""
        if self._eof:
            return None
        if self._lines is None or self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._lines = asyncio.Queue()
        if not self._requested:
            self._requested = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tiller-stdin", daemon=True)
                self._thread.start()
            self._wanted.release()
        line = await self._lines.get()
        self._requested = False
        if line is None:
            self._eof = True
        return line

    def _run(self) -> None:
        while True:
            self._wanted.acquire()
            line = self._read_line()
            assert self._loop is not None and self._lines is not None
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self._loop.call_soon_threadsafe(self._lines.put_nowait, line)
            if line is None:
                return

    def _read_line(self) -> str | None:
        data = bytearray()
        while not data.endswith(b"\n"):
            try:
                chunk = os.read(self._fd, 1)
            except OSError:
                chunk = b""
            if not chunk:
                return data.decode(errors="replace") if data else None
            data += chunk
        return data[:-1].decode(errors="replace").rstrip("\r")


# --- the client -------------------------------------------------------------------------------


class TillerClient(BaseLanguageClient):
    def __init__(self) -> None:
        super().__init__("tiller-cli", __version__, converter_factory=plain_dict_converter)
        self.server_gone = asyncio.Event()

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        self.server_gone.set()

    def report_server_error(self, error: Exception, source: Any) -> None:
        print(f"· protocol error: {error}", file=sys.stderr, flush=True)


@dataclass
class Run:
    """One `tiller run`: renders events, answers the server's questions, tracks the end."""

    client: TillerClient
    output: Output
    yes: bool
    terminal: TerminalInput | None
    turn_ended: dict[str, JSON] = field(default_factory=dict)
    _ended: asyncio.Event = field(default_factory=asyncio.Event)
    _calls: dict[str, tuple[str, str]] = field(default_factory=dict)
    _ask_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def register(self) -> None:
        notifications: dict[str, Callable[[Any], None]] = {
            p.EVENT: self.on_event,
            p.STATE: self.ignore,
            p.TODOS: self.ignore,
            types.WINDOW_LOG_MESSAGE: self.ignore,
            types.WINDOW_SHOW_MESSAGE: self.show_message,
        }
        requests: dict[str, Callable[[Any], Awaitable[JSON]]] = {
            p.CONFIRM_TOOL: self.confirm_tool,
            p.APPROVE_PLAN: self.approve_plan,
            p.CHECKPOINT: self.checkpoint,
        }
        # pygls tags its handlers with attributes: plain functions, not bound methods.
        for method, notified in notifications.items():

            def on_notification(params: Any, notified: Callable[[Any], None] = notified) -> None:
                notified(params)

            self.client.feature(method)(on_notification)
        for method, asked in requests.items():

            async def on_request(
                params: Any, asked: Callable[[Any], Awaitable[JSON]] = asked
            ) -> JSON:
                return await asked(params)

            self.client.feature(method)(on_request)

    # --- notifications (synchronous, so they render in the order they arrive) ----------------

    def ignore(self, params: Any) -> None:
        return None

    def show_message(self, params: Any) -> None:
        message = getattr(params, "message", None)
        if message:
            self.output.info(f"· {message}")

    def on_event(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        out = self.output
        match params.get("type"):
            case "textDelta":
                out.write(str(params.get("text", "")))
            case "thinkingDelta":
                if out.out_tty:  # on a pipe, stdout carries the answer only
                    out.write(out.dim(str(params.get("text", ""))))
            case "toolStarted":
                name = str(params.get("name", "?"))
                summary = tool_summary(name, params.get("input"))
                self._calls[str(params.get("toolUseId"))] = (name, summary)
                out.line(out.dim(f"… {name} {summary}".rstrip()))
            case "toolFinished":
                out.line(self._finished_line(params))
            case "notice":
                out.info(f"· {params.get('text', '')}")
            case "planDecided":
                if params.get("approved"):
                    out.line("plan approved")
                else:
                    feedback = params.get("feedback")
                    out.line("plan rejected" + (f": {feedback}" if feedback else ""))
            case "turnEnded":
                self._turn_ended(params)
            case _:
                pass

    def _finished_line(self, params: JSON) -> str:
        tool_id = str(params.get("toolUseId"))
        name, summary = self._calls.get(tool_id, (str(params.get("name", "?")), ""))
        head = f"{name} {summary}".rstrip()
        if params.get("status") == "ok":
            return f"✓ {head} ({params.get('durationMs', 0)} ms)"
        reason = first_line(str(params.get("output", ""))) or str(params.get("status"))
        return f"✗ {head}: {reason}"

    def _turn_ended(self, params: JSON) -> None:
        out = self.output
        out.end_line()
        outcome = params.get("outcome")
        trail = trail_text(params.get("trail"))
        if outcome == "failed":
            error = params.get("error") or {}
            out.info(f"error ({error.get('kind', 'internal')}): {error.get('message', '')}")
        if outcome != "completed":
            out.line(str(outcome))
            if trail:
                out.line(trail)
        self.turn_ended[str(params.get("turnId"))] = params
        self._ended.set()

    async def wait_turn(self, turn_id: str) -> JSON | None:
        """The turn's ``turnEnded`` event; ``None`` if the server went away first."""
        while turn_id not in self.turn_ended:
            if self.client.server_gone.is_set():
                return None
            self._ended.clear()
            ended = asyncio.create_task(self._ended.wait())
            gone = asyncio.create_task(self.client.server_gone.wait())
            try:
                await asyncio.wait({ended, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ended.cancel()
                gone.cancel()
        return self.turn_ended[turn_id]

    # --- requests: the user decides -----------------------------------------------------------

    async def _withdrawable(self, what: str, question: Callable[[], Awaitable[JSON]]) -> JSON:
        try:
            return await question()
        except asyncio.CancelledError:
            self.output.info(f"· the question ({what}) was withdrawn")
            raise

    async def _ask(self, prompt: str) -> str | None:
        assert self.terminal is not None
        self.output.info(prompt)
        self.output.err.write("> ")
        self.output.err.flush()
        return await self.terminal.readline()

    async def confirm_tool(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}
        name = str(params.get("name", "?"))
        summary = tool_summary(name, params.get("input"))
        if self.yes:
            return {"decision": "allow"}
        if self.terminal is None:
            self.output.info(f"· denied {name} {summary}: no terminal to confirm on (use --yes)")
            return {"decision": "deny", "feedback": "no terminal to confirm on"}
        return await self._withdrawable(name, lambda: self._confirm_on_terminal(params))

    async def _confirm_on_terminal(self, params: JSON) -> JSON:
        async with self._ask_lock:
            name = str(params.get("name", "?"))
            self.output.info(self._preview_text(name, params.get("preview")))
            while True:
                answer = await self._ask("Allow? [y]es / [a]lways this session / [n]o (+feedback)")
                if answer is None:
                    return {"decision": "deny", "feedback": "no answer (end of input)"}
                word, _, rest = answer.strip().partition(" ")
                match word.lower().rstrip(",:"):
                    case "y" | "yes":
                        return {"decision": "allow"}
                    case "a" | "always":
                        return {"decision": "allowSession"}
                    case "n" | "no":
                        feedback = rest.strip()
                        return {"decision": "deny", **({"feedback": feedback} if feedback else {})}
                    case _:
                        self.output.info(
                            "Please answer y, a, or n (optionally followed by feedback)."
                        )

    def _preview_text(self, name: str, preview: Any) -> str:
        if not isinstance(preview, dict):
            return f"{name} wants to run."
        match preview.get("kind"):
            case "diff":
                header = f"{name} wants to change {preview.get('path', '?')}:"
                diff = diff_text(preview).rstrip("\n") or "(no changes)"
                if self.output.err_tty:
                    diff = "\n".join(_color_diff_line(line) for line in diff.splitlines())
                return f"{header}\n{diff}"
            case "command":
                cwd, command = preview.get("cwd", "?"), preview.get("command", "")
                return f"{name} wants to run in {cwd}:\n  $ {command}"
            case _:
                return f"{name} wants to run:\n{preview.get('text', '')}"

    async def approve_plan(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}
        self.output.line("plan:")
        self.output.line(str(params.get("plan", "")).rstrip("\n"))
        if self.yes:
            return {"approved": True, "mode": "acceptEdits"}
        if self.terminal is None:
            # Rejected without feedback: the turn ends here (with feedback, the model revises).
            self.output.info("· plan not approved: no terminal to approve on (use --yes)")
            return {"approved": False}
        return await self._withdrawable("plan", self._plan_on_terminal)

    async def _plan_on_terminal(self) -> JSON:
        async with self._ask_lock:
            while True:
                answer = await self._ask(
                    "[a]pprove (accept edits) / approve but [m]anually confirm edits / "
                    "[r]eject with feedback"
                )
                if answer is None:
                    return {"approved": False, "feedback": "no answer (end of input)"}
                word, _, rest = answer.strip().partition(" ")
                match word.lower().rstrip(",:"):
                    case "a" | "approve":
                        return {"approved": True, "mode": "acceptEdits"}
                    case "m" | "manual" | "manually":
                        return {"approved": True, "mode": "default"}
                    case "r" | "reject":
                        feedback = rest.strip()
                        if not feedback:
                            feedback = (await self._ask("What should change?") or "").strip()
                        return {"approved": False, **({"feedback": feedback} if feedback else {})}
                    case _:
                        self.output.info("Please answer a, m, or r (optionally with feedback).")

    async def checkpoint(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}
        trail = trail_text(params.get("trail"))
        self.output.line(
            f"checkpoint: {params.get('toolsUsed', '?')} tool calls so far"
            + (f": {trail}" if trail else "")
        )
        if self.yes:
            return {"continue": True}
        if self.terminal is None:
            self.output.info("· stopping: no terminal to ask whether to continue (use --yes)")
            return {"continue": False}
        return await self._withdrawable("checkpoint", self._checkpoint_on_terminal)

    async def _checkpoint_on_terminal(self) -> JSON:
        async with self._ask_lock:
            while True:
                answer = await self._ask("Continue? [y]es / [n]o, stop here")
                if answer is None:
                    return {"continue": False}
                match answer.strip().lower():
                    case "y" | "yes":
                        return {"continue": True}
                    case "n" | "no":
                        return {"continue": False}
                    case _:
                        self.output.info("Please answer y or n.")


def _color_diff_line(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return f"{GREEN}{line}{RESET}"
    if line.startswith("-") and not line.startswith("---"):
        return f"{RED}{line}{RESET}"
    return line


# --- running a prompt -------------------------------------------------------------------------


async def _forward_stderr(stream: asyncio.StreamReader | None) -> None:
    """The server's log goes to our stderr (pygls pipes it; an undrained pipe would stall)."""
    if stream is None:
        return
    while line := await stream.readline():
        sys.stderr.write(line.decode(errors="replace"))
        sys.stderr.flush()


def _kill(process: asyncio.subprocess.Process | None) -> None:
    if process is not None and process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


async def _wait_exit(process: asyncio.subprocess.Process, seconds: float) -> None:
    try:
        await asyncio.wait_for(process.wait(), seconds)
    except TimeoutError:
        _kill(process)


async def _stop(client: TillerClient) -> None:
    await client.stop()  # type: ignore[no-untyped-call]


async def _shutdown(client: TillerClient) -> None:
    """shutdown + exit, then wait for the server; kill it if it does not go."""
    process = client._server
    if process is not None and process.returncode is None:
        try:
            await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_SECONDS)
            client.exit(None)
        except (TimeoutError, JsonRpcException, RuntimeError, ConnectionError, OSError):
            _kill(process)
        await _wait_exit(process, SHUTDOWN_SECONDS)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_stop(client), SHUTDOWN_SECONDS)


async def _abandon(client: TillerClient) -> None:
    """Quit now: end of input tells the server to cancel its work (stopping running commands)
    and exit; whatever is still there a moment later is killed."""
    process = client._server
    if process is None:
        return
    if process.stdin is not None:
        with contextlib.suppress(OSError, RuntimeError):
            process.stdin.close()
    await _wait_exit(process, QUIT_GRACE_SECONDS)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_stop(client), QUIT_GRACE_SECONDS)


class Phase(enum.Enum):
    STARTING = "starting"  # Ctrl-C quits
    TURN = "turn"  # Ctrl-C interrupts the turn
    INTERRUPTING = "interrupting"  # Ctrl-C quits
    QUITTING = "quitting"  # Ctrl-C kills the server
    FINISHING = "finishing"  # Ctrl-C kills the server


async def run_prompt(options: RunOptions) -> int:
    loop = asyncio.get_running_loop()
    output = Output(sys.stdout, sys.stderr)
    terminal = TerminalInput(sys.stdin.fileno()) if _stdin_is_tty() else None
    client = TillerClient()
    run = Run(client, output, options.yes, terminal)
    run.register()
    main = asyncio.current_task()
    assert main is not None
    phase = Phase.STARTING
    background: set[asyncio.Task[Any]] = set()

    async def interrupt() -> None:
        with contextlib.suppress(Exception):
            await client.protocol.send_request_async(p.INTERRUPT, {})

    def on_sigint() -> None:
        nonlocal phase
        match phase:
            case Phase.TURN:
                phase = Phase.INTERRUPTING
                output.info("· interrupting… (Ctrl-C again to quit at once)")
                task = asyncio.create_task(interrupt())
                background.add(task)
                task.add_done_callback(background.discard)
            case Phase.STARTING | Phase.INTERRUPTING:
                phase = Phase.QUITTING
                main.cancel()
            case Phase.QUITTING | Phase.FINISHING:
                _kill(client._server)

    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    stderr_task: asyncio.Task[None] | None = None
    try:
        await client.start_io(
            sys.executable,
            "-m",
            "tiller",
            env=dict(os.environ),
            start_new_session=True,  # Ctrl-C on the terminal reaches us only; we interrupt
        )
        process = client._server
        stderr_task = asyncio.create_task(_forward_stderr(process.stderr if process else None))
        try:
            await client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    client_info=types.ClientInfo("tiller-cli", __version__),
                    root_uri=options.workspace.as_uri(),
                    workspace_folders=[
                        types.WorkspaceFolder(options.workspace.as_uri(), options.workspace.name)
                    ],
                    initialization_options=options.initialization_options,
                )
            )
        except JsonRpcException as err:
            output.info(f"error: the server refused the options: {err.message}")
            return EXIT_USAGE if err.code == -32602 else EXIT_FAILED
        client.initialized(types.InitializedParams())

        try:
            started = await client.protocol.send_request_async(p.PROMPT, {"text": options.prompt})
        except JsonRpcException as err:
            output.info(f"error: {err.message}")
            return EXIT_FAILED
        status = started.get("status") if isinstance(started, dict) else None
        if status == "handled":
            output.line(str(started.get("message", "")))
            return EXIT_COMPLETED
        if status != "started" or not isinstance(started.get("turnId"), str):
            output.info(f"error: unexpected answer to the prompt: {started!r}")
            return EXIT_FAILED
        phase = Phase.TURN
        ended = await run.wait_turn(started["turnId"])
        if ended is None:
            code = process.returncode if process else None
            output.info(f"error: the server exited unexpectedly (exit code {code})")
            return EXIT_FAILED
        return OUTCOME_EXIT.get(str(ended.get("outcome")), EXIT_FAILED)
    except asyncio.CancelledError:
        if phase is not Phase.QUITTING:
            raise
        main.uncancel()
        output.info("· quit")
        return EXIT_INTERRUPTED
    except (ConnectionError, RuntimeError, OSError) as err:
        output.info(f"error: lost the server: {err}")
        return EXIT_FAILED
    finally:
        output.end_line()
        if phase is Phase.QUITTING:
            await _abandon(client)
        else:
            phase = Phase.FINISHING
            await _shutdown(client)
        if stderr_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stderr_task, SHUTDOWN_SECONDS)
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "run":
        parser.print_help(sys.stderr)
        sys.exit(EXIT_USAGE)
    try:
        options = parse_run(args)
    except UsageError as err:
        parser.exit(EXIT_USAGE, f"tiller run: error: {err}\n")
    sys.exit(asyncio.run(run_prompt(options)))


if __name__ == "__main__":
    main()
