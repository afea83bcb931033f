"""The headless client: prompts run one turn after another against a server it starts
(``tiller run``: one prompt; ``tiller chat`` on a pipe: a prompt per line of stdin).

The first Ctrl-C interrupts the turn (``tiller/interrupt``) and waits for it to end; a second
one kills the server and exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tiller import protocol as p
from tiller.faces.client.jsonrpc import RpcError
from tiller.faces.client.limits import StepCounter
from tiller.faces.client.mentions import AttachError, prompt_params
from tiller.faces.client.options import (
    EXIT_COMPLETED,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_SERVER_DIED,
    EXIT_STOPPED,
    EXIT_USAGE,
    INVALID_PARAMS,
    OUTCOME_EXIT,
    RunOptions,
)
from tiller.faces.client.plain import YES_HINT, Run
from tiller.faces.client.report import JsonLines
from tiller.faces.client.server import SHUTDOWN_SECONDS, ServerProcess
from tiller.faces.client.terminal import Output, TerminalInput
from tiller.jsontypes import JSON
from tiller.workspace.roots import WorkspaceRoots

Prompts = Callable[[], Awaitable[str | None]]


def _to_stderr(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()


class Phase(enum.Enum):
    STARTING = "starting"  # Ctrl-C quits
    TURN = "turn"  # Ctrl-C interrupts the turn
    INTERRUPTING = "interrupting"  # Ctrl-C quits
    QUITTING = "quitting"  # Ctrl-C kills the server
    FINISHING = "finishing"  # Ctrl-C kills the server


class CtrlC:
    """What Ctrl-C means at each phase of a run, and the server it may have to stop."""

    def __init__(self, output: Output, main: asyncio.Task[Any]) -> None:
        self.output = output
        self.main = main
        self.phase = Phase.STARTING
        self.server: ServerProcess | None = None
        self._background: set[asyncio.Task[Any]] = set()

    @contextlib.contextmanager
    def handling(self) -> Iterator[None]:
        """SIGINT handled here while the block runs."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, self.pressed)
        try:
            yield
        finally:
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(signal.SIGINT)

    def pressed(self) -> None:
        match self.phase:
            case Phase.TURN:
                self.phase = Phase.INTERRUPTING
                self.output.info("· interrupting… (Ctrl-C again to quit at once)")
                task = asyncio.create_task(self._interrupt())
                self._background.add(task)
                task.add_done_callback(self._background.discard)
            case Phase.STARTING | Phase.INTERRUPTING:
                self.phase = Phase.QUITTING
                self.main.cancel()
            case Phase.QUITTING | Phase.FINISHING:
                if self.server is not None:
                    self.server.kill()

    async def _interrupt(self) -> None:
        with contextlib.suppress(Exception):
            assert self.server is not None
            await self.server.request(p.INTERRUPT, {})

    def turn_started(self) -> None:
        self.phase = Phase.TURN

    def turn_over(self) -> None:
        self.phase = Phase.STARTING

    async def stop_server(self) -> None:
        """Shut the server down, or after a quit abandon it."""
        if self.server is None:
            return
        if self.phase is Phase.QUITTING:
            await self.server.abandon()
        else:
            self.phase = Phase.FINISHING
            await self.server.shutdown()


async def start_server(
    run: Run, folders: Sequence[Path], options: JSON, client_name: str
) -> ServerProcess | int:
    """A started, initialized server (``folders``: the workspace, then ``--add-dir``'s), or
    the exit code of why not."""
    server = await ServerProcess.start(run.handlers(), _to_stderr)
    try:
        await server.initialize(folders, options, client_name)
    except RpcError as err:
        run.output.info(f"error: the server refused the options: {err.message}")
        await server.shutdown()
        usage = err.code == INVALID_PARAMS
        run.report.failed("usage" if usage else "server", err.message)
        return EXIT_USAGE if usage else EXIT_FAILED
    return server


async def prompt_and_wait(
    server: ServerProcess,
    run: Run,
    text: str,
    on_started: Callable[[], None],
    params: JSON | None = None,
) -> int:
    """Send one prompt (``params``: with its attachments) and wait for its turn to end: the
    exit code of its outcome."""
    output = run.output
    try:
        started = await server.request(p.PROMPT, params or {"text": text})
    except RpcError as err:
        output.info(f"error: {err.message}")
        run.report.failed("prompt", err.message)
        return EXIT_FAILED
    status = started.get("status") if isinstance(started, dict) else None
    if status == "handled":  # the ``command`` event showed the answer
        message = started.get("message")
        run.report.final = message if isinstance(message, str) else None
        return EXIT_COMPLETED
    if status != "started" or not isinstance(started.get("turnId"), str):
        output.info(f"error: unexpected answer to the prompt: {started!r}")
        run.report.failed("prompt", f"unexpected answer to the prompt: {started!r}")
        return EXIT_FAILED
    on_started()
    run.plan_unapproved = False
    run.report.turn_id, run.report.ended = started["turnId"], None
    ended = await run.wait_turn(started["turnId"], server.gone)
    if ended is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.process.wait(), SHUTDOWN_SECONDS)
        why = f"the server exited unexpectedly (exit code {server.returncode})"
        output.info(f"error: {why}")
        run.report.failed("server_died", why)
        return EXIT_SERVER_DIED
    run.report.ended = ended
    code = OUTCOME_EXIT.get(str(ended.get("outcome")), EXIT_FAILED)
    if code == EXIT_COMPLETED and run.plan_unapproved:
        return EXIT_STOPPED  # the turn ended because nobody could approve its plan
    return code


async def run_prompts(
    prompts: Prompts,
    workspace: Path,
    options: JSON,
    yes: bool,
    terminal: TerminalInput | None,
    resume: str | None = None,
    yes_hint: str = YES_HINT,
    run: Run | None = None,
    images: tuple[Path, ...] = (),
    add_dirs: tuple[Path, ...] = (),
) -> int:
    """Run the prompts ``prompts`` gives, one turn after another, until it gives ``None``
    (``tiller run`` gives one; ``tiller chat`` on a pipe reads lines), in session ``resume``
    when given: the last exit code. ``run`` renders and answers (default: text on stdout)."""
    if run is None:
        run = Run(Output(sys.stdout, sys.stderr), yes, terminal, yes_hint)
    output = run.output
    main = asyncio.current_task()
    assert main is not None
    ctrl_c = CtrlC(output, main)
    with ctrl_c.handling():
        try:
            return await _session(
                run, ctrl_c, prompts, workspace, options, resume, images, add_dirs
            )
        except asyncio.CancelledError:
            if ctrl_c.phase is not Phase.QUITTING:
                raise
            main.uncancel()
            output.info("· quit")
            return EXIT_INTERRUPTED
        except (ConnectionError, RuntimeError, OSError) as err:
            output.info(f"error: lost the server: {err}")
            run.report.failed("server_died", f"lost the server: {err}")
            return EXIT_SERVER_DIED
        finally:
            output.end_line()
            await ctrl_c.stop_server()


async def _session(
    run: Run,
    ctrl_c: CtrlC,
    prompts: Prompts,
    workspace: Path,
    options: JSON,
    resume: str | None,
    images: tuple[Path, ...] = (),
    add_dirs: tuple[Path, ...] = (),
) -> int:
    """Start the server (resuming ``resume``), then run each prompt to the end of its turn."""
    started = await start_server(run, (workspace, *add_dirs), options, "tiller-cli")
    if isinstance(started, int):
        return started
    server = ctrl_c.server = started
    if run.json_lines is not None:
        run.report.session_from(await server.request(p.GET_STATE, {}))
        run.json_lines.init(run.report, workspace)
    if resume is not None:
        try:
            await server.request(p.SESSION_RESUME, {"sessionId": resume})
        except RpcError as err:
            run.output.info(f"error: cannot resume: {err.message}")
            return EXIT_USAGE if err.code == INVALID_PARAMS else EXIT_FAILED
    code = EXIT_COMPLETED
    while (text := await prompts()) is not None:
        try:  # @path mentions, and the --image files with the first prompt
            params = prompt_params(text, WorkspaceRoots.of(workspace, *add_dirs), images)
        except AttachError as err:
            run.output.info(f"error: {err.message}")
            run.report.failed("usage", err.message)
            return EXIT_USAGE
        images = ()
        code = await prompt_and_wait(server, run, text, ctrl_c.turn_started, params)
        if server.gone.is_set():
            return code
        ctrl_c.turn_over()
    return code


async def run_prompt(options: RunOptions) -> int:
    """``tiller run``: the one prompt; questions on the terminal when stdin is one (and did
    not hold the prompt). With ``--output-format json|stream-json`` stdout carries JSON lines
    alone and the text goes to stderr."""
    terminal = (
        TerminalInput(sys.stdin.fileno())
        if _stdin_is_tty() and not options.prompt_from_stdin
        else None
    )
    machine = options.output_format != "text"
    output = Output(sys.stderr, sys.stderr) if machine else Output(sys.stdout, sys.stderr)
    run = Run(output, options.yes, terminal, tools=options.tools)
    if machine:
        run.json_lines = JsonLines(sys.stdout, stream=options.output_format == "stream-json")
    if options.max_turns is not None:
        run.steps = StepCounter(options.max_turns, options.tool_budget)
    pending = [options.prompt]

    async def once() -> str | None:
        return pending.pop() if pending else None

    code = await run_prompts(
        once,
        options.workspace,
        options.initialization_options,
        options.yes,
        terminal,
        run=run,
        images=options.images,
        add_dirs=options.add_dirs,
    )
    if run.json_lines is not None:
        run.json_lines.result(run.report.result(code))
    return code


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False
