"""``tiller``: the terminal clients, ``tiller run`` (headless, one prompt) and ``tiller chat``
(the resident shell, in ``tiller.chat``).

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

``tiller chat`` with stdout not on a terminal runs here too: each line of stdin is a prompt,
rendered as ``tiller run`` renders it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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

from . import __version__
from . import protocol as p
from .client.jsonrpc import Handlers, RpcError
from .client.render import finished_line, preview_text, tool_summary, trail_text
from .client.server import ServerProcess
from .protocol import JSON, MODES

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
DIM, RESET = "\x1b[2m", "\x1b[0m"
INVALID_PARAMS = -32602


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


@dataclass(frozen=True)
class ChatOptions:
    workspace: Path
    initialization_options: JSON
    resume: str | None


def _add_session_options(command: argparse.ArgumentParser) -> None:
    """The options ``run`` and ``chat`` share: mode, model, where answers come from, workspace."""
    command.add_argument("--mode", choices=MODES, default="default", help="permission mode")
    command.add_argument("--model", help="model id (default: $TILLER_MODEL or the server's)")
    source = command.add_mutually_exclusive_group()
    source.add_argument(
        "--demo", action="store_true", help="play the bundled offline demo instead of a model"
    )
    source.add_argument("--script", metavar="FILE", help="play a JSON script of responses")
    source.add_argument(
        "--base-url", metavar="URL", help="Messages API base URL (key: $ANTHROPIC_API_KEY)"
    )
    command.add_argument(
        "--workspace",
        metavar="DIR",
        type=Path,
        help="workspace root (default: the current directory; with --demo a new temp dir)",
    )
    command.add_argument(
        "--tool-budget",
        metavar="N",
        type=int,
        help="ask to continue after every N tool calls (0: never)",
    )


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
    _add_session_options(run)
    run.add_argument(
        "--yes", "-y", action="store_true", help="allow every tool call, plan and checkpoint"
    )
    run.add_argument("prompt", nargs="+", metavar="PROMPT", help="what to do")
    chat = commands.add_parser(
        "chat",
        help="an interactive shell: a prompt that stays while the agent works",
        description="Chat with the agent in the terminal: shift+tab cycles the mode, Escape "
        "interrupts, prompts typed while it works are queued, Ctrl-C twice exits. When stdout "
        "is not a terminal, each line of stdin is a prompt and the output is `tiller run`'s.",
    )
    _add_session_options(chat)
    chat.add_argument("--resume", metavar="ID", help="resume a stored session")
    commands.add_parser(
        "acp",
        help="serve the Agent Client Protocol on stdio (Zed, JetBrains, Neovim, Emacs)",
        description="Serve ACP v1 on stdin/stdout for an editor; see docs/acp.md.",
    )
    return parser


def _session_options(args: argparse.Namespace) -> tuple[Path, JSON]:
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
    return workspace, options


def parse_run(args: argparse.Namespace) -> RunOptions:
    prompt = " ".join(args.prompt).strip()
    if not prompt:
        raise UsageError("the prompt is empty")
    workspace, options = _session_options(args)
    return RunOptions(prompt, workspace, options, args.yes)


def parse_chat(args: argparse.Namespace) -> ChatOptions:
    workspace, options = _session_options(args)
    return ChatOptions(workspace, options, args.resume)


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


@dataclass
class Run:
    """One `tiller run`: renders events, answers the server's questions, tracks the end."""

    output: Output
    yes: bool
    terminal: TerminalInput | None
    turn_ended: dict[str, JSON] = field(default_factory=dict)
    _ended: asyncio.Event = field(default_factory=asyncio.Event)
    _calls: dict[str, tuple[str, str]] = field(default_factory=dict)
    _ask_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def handlers(self) -> Handlers:
        return Handlers(
            notifications={p.EVENT: self.on_event, "window/showMessage": self.show_message},
            requests={
                p.CONFIRM_TOOL: self.confirm_tool,
                p.APPROVE_PLAN: self.approve_plan,
                p.CHECKPOINT: self.checkpoint,
            },
        )

    # --- notifications (synchronous, so they render in the order they arrive) ----------------

    def show_message(self, params: Any) -> None:
        message = params.get("message") if isinstance(params, dict) else None
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
        return finished_line(f"{name} {summary}".rstrip(), params)

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

    async def wait_turn(self, turn_id: str, server_gone: asyncio.Event) -> JSON | None:
        """The turn's ``turnEnded`` event; ``None`` if the server went away first."""
        while turn_id not in self.turn_ended:
            if server_gone.is_set():
                return None
            self._ended.clear()
            ended = asyncio.create_task(self._ended.wait())
            gone = asyncio.create_task(server_gone.wait())
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
            self.output.info(preview_text(name, params.get("preview"), self.output.err_tty))
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


# --- running a prompt -------------------------------------------------------------------------


def _to_stderr(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()


class Phase(enum.Enum):
    STARTING = "starting"  # Ctrl-C quits
    TURN = "turn"  # Ctrl-C interrupts the turn
    INTERRUPTING = "interrupting"  # Ctrl-C quits
    QUITTING = "quitting"  # Ctrl-C kills the server
    FINISHING = "finishing"  # Ctrl-C kills the server


async def start_server(
    run: Run, workspace: Path, options: JSON, client_name: str
) -> ServerProcess | int:
    """A started, initialized server, or the exit code of why not."""
    server = await ServerProcess.start(run.handlers(), _to_stderr)
    try:
        await server.initialize(workspace, options, client_name)
    except RpcError as err:
        run.output.info(f"error: the server refused the options: {err.message}")
        await server.shutdown()
        return EXIT_USAGE if err.code == INVALID_PARAMS else EXIT_FAILED
    return server


async def prompt_and_wait(
    server: ServerProcess, run: Run, text: str, on_started: Callable[[], None]
) -> int:
    """Send one prompt and wait for its turn to end: the exit code of its outcome."""
    output = run.output
    try:
        started = await server.request(p.PROMPT, {"text": text})
    except RpcError as err:
        output.info(f"error: {err.message}")
        return EXIT_FAILED
    status = started.get("status") if isinstance(started, dict) else None
    if status == "handled":
        output.line(str(started.get("message", "")))
        return EXIT_COMPLETED
    if status != "started" or not isinstance(started.get("turnId"), str):
        output.info(f"error: unexpected answer to the prompt: {started!r}")
        return EXIT_FAILED
    on_started()
    ended = await run.wait_turn(started["turnId"], server.gone)
    if ended is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.process.wait(), SHUTDOWN_SECONDS)
        output.info(f"error: the server exited unexpectedly (exit code {server.returncode})")
        return EXIT_FAILED
    return OUTCOME_EXIT.get(str(ended.get("outcome")), EXIT_FAILED)


async def run_prompts(
    prompts: Callable[[], Awaitable[str | None]],
    workspace: Path,
    options: JSON,
    yes: bool,
    terminal: TerminalInput | None,
    resume: str | None = None,
) -> int:
    """Run the prompts ``prompts`` gives, one turn after another, until it gives ``None``
    (``tiller run`` gives one; ``tiller chat`` on a pipe reads lines), in session ``resume``
    when given: the last exit code."""
    loop = asyncio.get_running_loop()
    output = Output(sys.stdout, sys.stderr)
    run = Run(output, yes, terminal)
    main = asyncio.current_task()
    assert main is not None
    phase = Phase.STARTING
    server: ServerProcess | None = None
    background: set[asyncio.Task[Any]] = set()

    async def interrupt() -> None:
        with contextlib.suppress(Exception):
            assert server is not None
            await server.request(p.INTERRUPT, {})

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
                if server is not None:
                    server.kill()

    def on_started() -> None:
        nonlocal phase
        phase = Phase.TURN

    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    code = EXIT_COMPLETED
    try:
        started = await start_server(run, workspace, options, "tiller-cli")
        if isinstance(started, int):
            return started
        server = started
        if resume is not None:
            try:
                await server.request(p.SESSION_RESUME, {"sessionId": resume})
            except RpcError as err:
                output.info(f"error: cannot resume: {err.message}")
                return EXIT_USAGE if err.code == INVALID_PARAMS else EXIT_FAILED
        while (text := await prompts()) is not None:
            code = await prompt_and_wait(server, run, text, on_started)
            if server.gone.is_set():
                return code
            phase = Phase.STARTING
        return code
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
        if server is not None:
            if phase is Phase.QUITTING:
                await server.abandon()
            else:
                phase = Phase.FINISHING
                await server.shutdown()
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)


async def run_prompt(options: RunOptions) -> int:
    terminal = TerminalInput(sys.stdin.fileno()) if _stdin_is_tty() else None
    pending = [options.prompt]

    async def once() -> str | None:
        return pending.pop() if pending else None

    return await run_prompts(
        once, options.workspace, options.initialization_options, options.yes, terminal
    )


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        match args.command:
            case "run":
                options = parse_run(args)
                sys.exit(asyncio.run(run_prompt(options)))
            case "chat":
                chat_options = parse_chat(args)
                from .chat import run_chat  # prompt_toolkit loads only for the chat

                sys.exit(run_chat(chat_options))
            case "acp":
                from .acp import serve

                serve()
            case _:
                parser.print_help(sys.stderr)
                sys.exit(EXIT_USAGE)
    except UsageError as err:
        parser.exit(EXIT_USAGE, f"tiller {args.command}: error: {err}\n")


if __name__ == "__main__":
    main()
