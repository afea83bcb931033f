"""The resident shell: a prompt_toolkit application in front of one server process.

The answer and the tool log are printed above a bottom area that stays: the answer's open
line, the running tools (``… bash make  3s``), queued prompts, the pending question, the
prompt and a toolbar driven by ``tiller/state``. The server is the single source of truth;
this module only renders what it says and sends what the user types.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from prompt_toolkit.application import Application, run_in_terminal
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.filters import Always, Condition, Filter
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import (
    ConditionalContainer,
    Dimension,
    FormattedTextControl,
    HSplit,
    Layout,
    VSplit,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl
from prompt_toolkit.styles import Style

from .. import protocol as p
from ..cli import EXIT_FAILED, EXIT_USAGE, INVALID_PARAMS, ChatOptions
from ..client.jsonrpc import Handlers, RpcError
from ..client.render import (
    BOLD,
    DIM,
    GREEN,
    RED,
    RESET,
    finished_line,
    preview_text,
    terminal_safe,
    tool_summary,
)
from ..client.server import ServerProcess
from ..protocol import JSON
from .questions import Choice, Question, checkpoint_question, confirm_question, plan_question
from .view import (
    outcome_lines,
    plan_decided_line,
    queue_lines,
    todo_summary,
    toolbar_text,
    transcript_lines,
    usage_text,
)

YELLOW = "\x1b[33m"
PRINT_BATCH_SECONDS = 0.02
TICK_SECONDS = 0.2
OUTPUT_TAIL_LINES = 6
RESTARTS_ALLOWED = 3
RESTART_WINDOW_SECONDS = 30.0
ESCAPE_WAIT_SECONDS = 0.05

STYLE = Style.from_dict(
    {
        "toolbar": "reverse",
        "prompt": "bold",
        "thinking": "fg:ansibrightblack italic",
        "running": "fg:ansibrightblack",
        "output": "fg:ansibrightblack",
        "queued": "fg:ansicyan",
        "question": "bold fg:ansiyellow",
        "choices": "fg:ansiyellow",
        "hint": "fg:ansibrightblack",
    }
)

HELLO = (
    "Enter sends · alt+enter new line · shift+tab mode · Esc interrupts · ctrl-o command "
    "output · Ctrl-C clears, twice exits · /help"
)


@dataclass(frozen=True)
class RunningTool:
    head: str
    started: float
    output: tuple[str, ...] = ()

    def with_output(self, text: str) -> RunningTool:
        lines = (*self.output, *text.splitlines())
        return replace(self, output=lines[-OUTPUT_TAIL_LINES:])


@dataclass
class Asking:
    """A question on screen; ``feedback_for`` is the choice whose feedback is being typed."""

    question: Question
    answer: asyncio.Future[JSON]
    feedback_for: Choice | None = None


@dataclass
class Printer:
    """Lines printed above the application, in order, batched into few redraws."""

    app: Application[int]
    pending: list[str] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def line(self, text: str) -> None:
        self.pending.append(text + "\n")
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._drain())

    async def drain(self) -> None:
        if self.task is not None:
            await self.task

    async def _drain(self) -> None:
        while self.pending:
            await asyncio.sleep(PRINT_BATCH_SECONDS)
            chunk = "".join(self.pending)
            self.pending.clear()
            try:
                if not self.app.is_running:
                    raise RuntimeError("the application is not running")
                await run_in_terminal(partial(_write, chunk), in_executor=False)
            except RuntimeError:  # before it starts, after it ends (or while it ends)
                _write(chunk)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


class _PrinterLog(logging.Handler):
    """The client's own warnings go above the prompt, not across it."""

    def __init__(self, printer: Printer) -> None:
        super().__init__(logging.WARNING)
        self.printer = printer

    def emit(self, record: logging.LogRecord) -> None:
        self.printer.line(f"{DIM}· {terminal_safe(self.format(record))}{RESET}")


def markdown_ansi(text: str, width: int) -> str:
    """Markdown rendered for the terminal by rich (loaded only when a plan comes)."""
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console(file=io.StringIO(), force_terminal=True, width=max(20, width))
    console.print(Markdown(text))
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue().rstrip("\n")


class ChatShell:
    def __init__(self, options: ChatOptions) -> None:
        self.options = options
        self.state: JSON | None = None
        self.partial = ""
        self.partial_thinking = False
        self.running: dict[str, RunningTool] = {}
        self.asking: list[Asking] = []
        self.show_output = False
        self.ctrl_c_armed = False
        self.last_board: str | None = None
        self.server: ServerProcess | None = None
        self.frame = 0
        self.quit = asyncio.Event()
        self.server_ready = asyncio.Event()
        self.background: set[asyncio.Task[Any]] = set()
        self.input = Buffer(multiline=True, on_text_changed=self._disarm)
        self.feedback = Buffer(multiline=False)
        # While a question is shown it has the focus: no key reaches the prompt's buffer.
        self.question_window = Window(
            FormattedTextControl(self._question, focusable=True),
            wrap_lines=True,
            dont_extend_height=True,
        )
        self.app: Application[int] = self._build_app()
        self.printer = Printer(self.app)

    # --- running -----------------------------------------------------------------------------

    async def run(self) -> int:
        handler = _PrinterLog(self.printer)
        logs = [logging.getLogger(name) for name in ("tiller", "asyncio")]
        for log in logs:
            log.addHandler(handler)
            log.propagate = False
        try:
            return await self.app.run_async(pre_run=self._start)
        finally:
            for log in logs:
                log.removeHandler(handler)
                log.propagate = True

    def _start(self) -> None:
        self.app.create_background_task(self._lifetime())
        self.app.create_background_task(self._tick())

    async def _lifetime(self) -> None:
        code = EXIT_FAILED
        try:
            self.print(f"tiller chat in {self.options.workspace} · {HELLO}", DIM)
            code = await self._serve()
        finally:
            await self.printer.drain()
            with contextlib.suppress(Exception):
                self.app.exit(result=code)

    async def _serve(self) -> int:
        """Keep a server running until the user quits; a crash restarts it and resumes."""
        resume, redraw = self.options.resume, self.options.resume is not None
        crashes: deque[float] = deque(maxlen=RESTARTS_ALLOWED)
        while True:
            started = await self._connect(resume, redraw)
            if isinstance(started, int):
                return started
            server = self.server = started
            self.server_ready.set()
            quit_wait = asyncio.create_task(self.quit.wait())
            gone_wait = asyncio.create_task(server.gone.wait())
            await asyncio.wait({quit_wait, gone_wait}, return_when=asyncio.FIRST_COMPLETED)
            quit_wait.cancel()
            gone_wait.cancel()
            self.server = None
            self.server_ready.clear()
            if self.quit.is_set():
                self.print("· bye", DIM)
                await server.shutdown()
                return 0
            await server.wait_exit(1.0)
            self._server_died(server.returncode)
            crashes.append(time.monotonic())
            if (
                len(crashes) == RESTARTS_ALLOWED
                and crashes[-1] - crashes[0] < RESTART_WINDOW_SECONDS
            ):
                self.print("the server keeps stopping; giving up", RED)
                return EXIT_FAILED
            resume, redraw = self._session_id(), False
            where = f" and resuming session {resume}" if resume else ""
            self.print(f"· restarting the server{where}…", DIM)

    async def _connect(self, resume: str | None, redraw: bool) -> ServerProcess | int:
        options = dict(self.options.initialization_options)
        for key, field_name in (("permissionMode", "mode"), ("model", "model")):
            chosen = (self.state or {}).get(field_name)  # a restart keeps what the user chose
            if isinstance(chosen, str):
                options[key] = chosen
        try:
            server = await ServerProcess.start(self._handlers(), self._server_log)
        except OSError as err:
            self.print(f"error: cannot start the server: {err}", RED)
            return EXIT_FAILED
        try:
            await server.initialize(self.options.workspace, options, "tiller-chat")
        except RpcError as err:
            self.print(f"error: the server refused the options: {err.message}", RED)
            await server.shutdown()
            return EXIT_USAGE if err.code == INVALID_PARAMS else EXIT_FAILED
        except ConnectionError:
            await server.wait_exit(1.0)
            self.print(f"error: the server exited at start (code {server.returncode})", RED)
            return EXIT_FAILED
        if resume is not None:
            try:
                self.state = await server.request(p.SESSION_RESUME, {"sessionId": resume})
            except RpcError as err:
                if redraw:  # the user's --resume
                    self.print(f"could not resume session {resume}: {err.message}", RED)
                else:  # a session is stored from its first turn on: there was nothing to lose
                    self.print(f"· session {resume} had no stored turn: a new one", DIM)
            except ConnectionError:
                pass  # the server died again: _serve sees it
            else:
                self.print(f"· resumed session {resume}", DIM)
                if redraw:
                    await self._redraw(server, resume)
        return server

    async def _tick(self) -> None:
        """Spinner and running times."""
        while True:
            await asyncio.sleep(TICK_SECONDS)
            if self.running or (self.state or {}).get("busy"):
                self.frame += 1
                self.app.invalidate()

    def _server_died(self, code: int | None) -> None:
        self._end_partial()
        for tool in self.running.values():
            self.print(f"✗ {tool.head}: the server stopped", RED)
        self.running.clear()
        if self.state is not None:
            self.state = {**self.state, "busy": False, "turnId": None, "queue": []}
        self.print(f"the server exited unexpectedly (exit code {code})", RED)

    def _session_id(self) -> str | None:
        session = (self.state or {}).get("sessionId")
        return session if isinstance(session, str) else None

    def spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self.background.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[Any]) -> None:
        self.background.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self.print(f"internal error: {error!r}", RED)

    def print(self, text: str, style: str = "") -> None:
        """A line above the prompt; whatever came from the server or the model is made
        harmless first (no escape sequences reach the terminal but ours)."""
        self.print_parts((style, text))

    def print_parts(self, *parts: tuple[str, str]) -> None:
        self.printer.line(
            "".join(
                f"{style}{terminal_safe(text)}{RESET}" if style else terminal_safe(text)
                for style, text in parts
            )
        )

    # --- the server's notifications ----------------------------------------------------------

    def _handlers(self) -> Handlers:
        return Handlers(
            notifications={
                p.STATE: self.on_state,
                p.TODOS: self.on_todos,
                p.EVENT: self.on_event,
                "window/showMessage": self.on_message,
            },
            requests={
                p.CONFIRM_TOOL: self.confirm_tool,
                p.APPROVE_PLAN: self.approve_plan,
                p.CHECKPOINT: self.checkpoint,
            },
        )

    def _server_log(self, line: str) -> None:
        self.print(f"· server: {line.rstrip()}", DIM)

    def on_message(self, params: Any) -> None:
        if isinstance(params, dict) and params.get("message"):
            self.print(f"· {params['message']}", DIM)

    def on_state(self, params: Any) -> None:
        if isinstance(params, dict):
            self.state = params
            self.app.invalidate()

    def on_todos(self, params: Any) -> None:
        board = todo_summary(params.get("todos") if isinstance(params, dict) else None)
        if board is not None and board != self.last_board:
            self.print(f"{board}", DIM)
        self.last_board = board

    def on_event(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        match params.get("type"):
            case "turnStarted":
                self._end_partial()
                self.print(f"› {params.get('prompt', '')}", BOLD)
            case "textDelta":
                self._stream(str(params.get("text", "")), thinking=False)
            case "thinkingDelta":
                self._stream(str(params.get("text", "")), thinking=True)
            case "toolStarted":
                self._end_partial()
                name = str(params.get("name", "?"))
                head = f"{name} {tool_summary(name, params.get('input'))}".rstrip()
                self.running[str(params.get("toolUseId"))] = RunningTool(head, time.monotonic())
            case "toolOutput":
                tool_id = str(params.get("toolUseId"))
                if tool_id in self.running:
                    tool = self.running[tool_id]
                    self.running[tool_id] = tool.with_output(str(params.get("text", "")))
            case "toolFinished":
                self._tool_finished(params)
            case "notice":
                self._end_partial()
                self.print(f"· {params.get('text', '')}", DIM)
            case "planDecided":
                self._end_partial()
                self.print(plan_decided_line(params))
            case "stepRestarted":
                self.partial = ""
                self.print(f"↻ step restarted: {params.get('reason', '')}", DIM)
            case "turnEnded":
                self._turn_ended(params)
            case _:
                pass
        self.app.invalidate()

    def _stream(self, text: str, thinking: bool) -> None:
        if thinking is not self.partial_thinking:
            self._end_partial()
            self.partial_thinking = thinking
        *done, self.partial = (self.partial + text).split("\n")
        for line in done:
            self.print(line, DIM if thinking else "")

    def _end_partial(self) -> None:
        if self.partial:
            self.print(self.partial, DIM if self.partial_thinking else "")
        self.partial = ""

    def _tool_finished(self, params: JSON) -> None:
        self._end_partial()
        tool = self.running.pop(str(params.get("toolUseId")), None)
        name = str(params.get("name", "?"))
        head = tool.head if tool is not None else name
        line = finished_line(head, params, with_stats=True)
        self.print_parts((GREEN if params.get("status") == "ok" else RED, line[:1]), ("", line[1:]))
        output = str(params.get("output") or "").rstrip("\n")
        if self.show_output and output:
            for out_line in output.splitlines()[-20:]:
                self.print(f"  {out_line}", DIM)

    def _turn_ended(self, params: JSON) -> None:
        self._end_partial()
        self.running.clear()
        for line in outcome_lines(params):
            self.print(f"{line}", YELLOW)
        usage = usage_text(params.get("usage"))
        if usage:
            self.print(f"{usage}", DIM)
        self.print("")

    # --- the server's questions --------------------------------------------------------------

    async def confirm_tool(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}
        self._end_partial()
        preview = params.get("preview")
        if isinstance(preview, dict):
            preview = {k: terminal_safe(v) if isinstance(v, str) else v for k, v in preview.items()}
        name = terminal_safe(str(params.get("name", "?")))
        self.printer.line(preview_text(name, preview, color=True))
        answer = await self._ask(confirm_question(params))
        decision = {"allow": "allowed", "allowSession": "allowed for this session"}
        said = decision.get(str(answer.get("decision")), "denied")
        feedback = answer.get("feedback")
        self.print(f"→ {said}{f': {feedback}' if feedback else ''}", DIM)
        return answer

    async def approve_plan(self, params: Any) -> JSON:
        params = params if isinstance(params, dict) else {}
        self._end_partial()
        width = self.app.output.get_size().columns
        self.print("plan:", BOLD)
        self.printer.line(markdown_ansi(terminal_safe(str(params.get("plan", ""))), width))
        return await self._ask(plan_question(params))

    async def checkpoint(self, params: Any) -> JSON:
        self._end_partial()
        question = checkpoint_question(params)
        self.print(f"checkpoint: {question.title}", YELLOW)
        return await self._ask(question)

    async def _ask(self, question: Question) -> JSON:
        await self.printer.drain()  # the preview or plan first, then the question under it
        asking = Asking(question, asyncio.get_running_loop().create_future())
        self.asking.append(asking)
        self._refocus()
        try:
            return await asking.answer
        except asyncio.CancelledError:
            self.print("· the question was withdrawn", DIM)
            raise
        finally:
            self.asking.remove(asking)
            self._refocus()

    def _refocus(self) -> None:
        if not self.asking:
            self.app.layout.focus(self.input)
        elif self.asking[0].feedback_for is None:
            self.app.layout.focus(self.question_window)
        else:
            self.app.layout.focus(self.feedback)
        self.app.invalidate()

    def choose(self, key: str) -> None:
        """A key pressed while a question is shown: its choice, or nothing at all."""
        if not self.asking:
            return
        asking = self.asking[0]
        choice = asking.question.choice(key.lower())
        if choice is None:
            return
        if choice.asks_feedback:
            asking.feedback_for = choice
            self.feedback.reset()
            self._refocus()
        elif not asking.answer.done():
            asking.answer.set_result(choice.answered())

    def send_feedback(self) -> None:
        if not self.asking or self.asking[0].feedback_for is None:
            return
        asking = self.asking[0]
        assert asking.feedback_for is not None
        if not asking.answer.done():
            asking.answer.set_result(asking.feedback_for.answered(self.feedback.text))
        self.feedback.reset()

    def back_to_choices(self) -> None:
        if self.asking:
            self.asking[0].feedback_for = None
            self.feedback.reset()
            self._refocus()

    # --- what the user does ------------------------------------------------------------------

    def submit(self) -> None:
        text = self.input.text
        if not text.strip():
            return
        self.input.reset(append_to_history=True)
        self.spawn(self._send_prompt(text))

    async def _send_prompt(self, text: str) -> None:
        if self.server is None:
            self.print(f"· waiting for the server to send: {text}", DIM)
        while (server := self.server) is None:
            await self.server_ready.wait()
        before = self._session_id()
        try:
            answer = await server.request(p.PROMPT, {"text": text})
        except RpcError as err:
            self.print(f"error: {err.message}", RED)
            return
        except ConnectionError:
            self.print(f"the server went away; not sent: {text}", RED)
            return
        if not isinstance(answer, dict) or answer.get("status") != "handled":
            return  # started: turnStarted shows it; queued: the toolbar and the queue show it
        self._end_partial()
        self.print(f"› {text}", BOLD)
        self.print(str(answer.get("message", "")))
        if text.lstrip().startswith("/"):
            with contextlib.suppress(RpcError, ConnectionError):
                state = await server.request(p.GET_STATE, {})
                if isinstance(state, dict):
                    self.state = state
                session = self._session_id()
                if session is not None and session != before:
                    await self._redraw(server, session)

    async def _redraw(self, server: ServerProcess, session_id: str) -> None:
        """After /resume, /fork, /clear or --resume: the session's story so far."""
        try:
            answer = await server.request(p.SESSION_TRANSCRIPT, {"sessionId": session_id})
        except (RpcError, ConnectionError) as err:
            self.print(f"cannot read the transcript: {err}", RED)
            return
        entries = answer.get("entries") if isinstance(answer, dict) else None
        self.print(f"── session {session_id} ──", DIM)
        if isinstance(answer, dict) and answer.get("more"):
            self.print("(older entries not shown)", DIM)
        for line in transcript_lines(entries if isinstance(entries, list) else []):
            self.print(line)
        self.print("")

    def request(self, method: str, params: JSON) -> None:
        server = self.server
        if server is None:
            return

        async def send() -> None:
            try:
                await server.request(method, params)
            except RpcError as err:
                self.print(f"error: {err.message}", RED)
            except ConnectionError:
                pass

        self.spawn(send())

    def interrupt(self) -> None:
        state = self.state or {}
        if not state.get("busy") and not self.asking:
            return
        turn = state.get("turnId")
        self.request(p.INTERRUPT, {"turnId": turn} if isinstance(turn, str) else {})

    def ctrl_c(self) -> None:
        if self.input.text:
            self.input.reset()
        elif self.ctrl_c_armed:
            self.quit.set()
        else:
            self.ctrl_c_armed = True
        self.app.invalidate()

    def _disarm(self, _: Buffer) -> None:
        self.ctrl_c_armed = False

    def toggle_output(self) -> None:
        self.show_output = not self.show_output
        self.print(f"· command output {'shown' if self.show_output else 'hidden'}", DIM)

    # --- the screen --------------------------------------------------------------------------

    def _live(self) -> StyleAndTextTuples:
        lines: StyleAndTextTuples = []
        if self.partial:
            lines.append(("class:thinking" if self.partial_thinking else "", self.partial))
        now = time.monotonic()
        for tool in self.running.values():
            lines.append(("class:running", f"… {tool.head}  {int(now - tool.started)}s"))
            if self.show_output:
                lines.extend(("class:output", f"  {line}") for line in tool.output)
        queue = (self.state or {}).get("queue")
        if isinstance(queue, list) and queue:
            lines.extend(("class:queued", line) for line in queue_lines(queue))
            lines.append(("class:hint", "  (/queue clear drops them)"))
        if self.ctrl_c_armed:
            lines.append(("class:hint", "Ctrl-C again to exit (Esc interrupts the agent)"))
        fragments: StyleAndTextTuples = []
        for n, (style, text, *_) in enumerate(lines):
            fragments.append((style, text if n == len(lines) - 1 else text + "\n"))
        return fragments

    def _question(self) -> StyleAndTextTuples:
        if not self.asking:
            return []
        asking = self.asking[0]
        if asking.feedback_for is None:
            choices = asking.question.prompt_line()
        else:
            choices = "feedback for the agent (Enter sends, empty for none; Esc goes back)"
        return [
            ("class:question", asking.question.title + "\n"),
            ("class:choices", choices),
        ]

    def _toolbar(self) -> StyleAndTextTuples:
        return [("class:toolbar", f" {toolbar_text(self.state, self.frame)} ")]

    def _build_app(self) -> Application[int]:
        asking = Condition(lambda: bool(self.asking) and self.asking[0].feedback_for is None)
        typing_feedback = Condition(
            lambda: bool(self.asking) and self.asking[0].feedback_for is not None
        )
        composing = ~asking & ~typing_feedback
        has_live = Condition(lambda: bool(self._live()))
        prompt_row = VSplit(
            [
                Window(FormattedTextControl([("class:prompt", "› ")]), width=2),
                Window(
                    BufferControl(self.input),
                    wrap_lines=True,
                    height=Dimension(min=1, max=10),
                    dont_extend_height=True,
                ),
            ]
        )
        feedback_row = VSplit(
            [
                Window(FormattedTextControl([("class:question", "feedback › ")]), width=11),
                Window(BufferControl(self.feedback), wrap_lines=True, dont_extend_height=True),
            ]
        )
        frame = HSplit(
            [
                ConditionalContainer(
                    Window(
                        FormattedTextControl(self._live),
                        wrap_lines=True,
                        dont_extend_height=True,
                    ),
                    filter=has_live,
                ),
                ConditionalContainer(
                    self.question_window, filter=Condition(lambda: bool(self.asking))
                ),
                ConditionalContainer(prompt_row, filter=~typing_feedback),
                ConditionalContainer(feedback_row, filter=typing_feedback),
                Window(FormattedTextControl(self._toolbar), height=1),
            ]
        )
        # No row is filled to the edge (no rule, no toolbar background, an empty last column):
        # terminals that reflow on resize (tmux, most modern ones) split a row longer than the
        # new width in two, and the redraw would leave a stale copy of it behind.
        layout = Layout(VSplit([frame, Window(width=1)]), focused_element=self.input)
        keys = self._key_bindings(asking, typing_feedback, composing)
        app: Application[int] = Application(
            layout=layout,
            key_bindings=keys,
            style=STYLE,
            full_screen=False,
            mouse_support=False,
            erase_when_done=False,
        )
        # A lone Escape is known once the input parser has waited ESCAPE_WAIT_SECONDS for
        # the rest of a sequence (alt+enter arrives as one "\x1b\r" read, so it still
        # pairs); waiting again for a longer key binding would only delay the interrupt.
        app.ttimeoutlen = ESCAPE_WAIT_SECONDS
        app.timeoutlen = 0.0
        return app

    def _key_bindings(
        self, asking: Condition, typing_feedback: Condition, composing: Filter
    ) -> KeyBindings:
        empty = Condition(lambda: not self.input.text)
        table: list[tuple[tuple[str, ...], Filter, Callable[[KeyPressEvent], None]]] = [
            (("enter",), composing, lambda e: self.submit()),
            (("escape", "enter"), composing, lambda e: self.input.newline(copy_margin=False)),
            (("c-j",), composing, lambda e: self.input.newline(copy_margin=False)),
            (("s-tab",), composing, lambda e: self.request(p.CYCLE_MODE, {})),
            (("escape",), ~typing_feedback, lambda e: self.interrupt()),
            (("c-c",), Always(), lambda e: self.ctrl_c()),
            (("c-d",), composing & empty, lambda e: self.quit.set()),
            (("c-o",), Always(), lambda e: self.toggle_output()),
            # While a question is shown, a key picks its choice or does nothing at all.
            (("<any>",), asking, lambda e: self.choose(e.key_sequence[0].data)),
            (("enter",), asking, lambda e: None),
            (("enter",), typing_feedback, lambda e: self.send_feedback()),
            (("escape",), typing_feedback, lambda e: self.back_to_choices()),
        ]
        keys = KeyBindings()
        for sequence, condition, handler in table:
            keys.add(*sequence, filter=condition)(handler)
        return keys
