"""The resident shell: a prompt_toolkit application in front of one server process.

The answer and the tool log are printed above a bottom area that stays: the answer's open
line, the running tools (``… bash make  3s``), queued prompts, the pending question, the
prompt and a toolbar driven by ``tiller/state``. The server is the single source of truth;
this module only runs it (restarting it when it dies) and sends what the user types; the
pieces are ``printer`` (lines above), ``events`` (the server's notifications), ``approvals``
(its questions) and ``screen`` (layout and keys).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import merge_completers

from tiller import protocol as p
from tiller.core.session.transcript import as_events
from tiller.extend.trust import NOT_YET, decided, record
from tiller.faces.chat.answering import Picked, Prompt, Refused
from tiller.faces.chat.approvals import Approvals
from tiller.faces.chat.completion import PathCompleter
from tiller.faces.chat.events import EventLog, Fragment
from tiller.faces.chat.notify import NOTIFY_STYLES, Notifier, NotifyStyle
from tiller.faces.chat.printer import Printer, PrinterLog
from tiller.faces.chat.rewind import AskedRewind, asked_rewind, confirmed_rewind
from tiller.faces.chat.screen import build_app
from tiller.faces.chat.slash import QUIT_COMMANDS, SlashCommands
from tiller.faces.client.jsonrpc import Handlers, RpcError
from tiller.faces.client.mentions import AttachError, prompt_params
from tiller.faces.client.options import EXIT_FAILED, EXIT_USAGE, INVALID_PARAMS, ChatOptions
from tiller.faces.client.questions import trust_question
from tiller.faces.client.server import ServerProcess
from tiller.faces.common.render import DIM, RED, first_line, terminal_safe
from tiller.jsontypes import JSON
from tiller.workspace.roots import WorkspaceRoots

TICK_SECONDS = 0.2
RESTARTS_ALLOWED = 3
RESTART_WINDOW_SECONDS = 30.0

HELLO = (
    "Enter sends · alt+enter new line · shift+tab mode · Esc interrupts · ctrl-o command "
    "output · Ctrl-C clears, twice exits · /help"
)


class ChatShell:
    def __init__(self, options: ChatOptions) -> None:
        self.options = options
        self.ctrl_c_armed = False
        self.server: ServerProcess | None = None
        self.quit = asyncio.Event()
        self.server_ready = asyncio.Event()
        self.background: set[asyncio.Task[Any]] = set()
        self.slash = SlashCommands()
        self.input = Buffer(
            multiline=True,
            on_text_changed=self._typed,
            completer=merge_completers(  # /, @path
                [self.slash, PathCompleter(options.workspace, options.add_dirs)]
            ),
            complete_while_typing=False,
        )
        self.printer = Printer(lambda: self.app.is_running)
        self.events = EventLog(self.printer, lambda: self.app.invalidate(), self._columns)
        self.approvals = Approvals(self.printer, self.events, self._refocus, self._columns)
        self.app: Application[int] = build_app(self)
        style = options.notify if options.notify in NOTIFY_STYLES else "bell"
        self.notifier = Notifier(cast(NotifyStyle, style), self._write_raw)

    # --- running -----------------------------------------------------------------------------

    async def run(self) -> int:
        handler = PrinterLog(self.printer)
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
            await decide_trust(self.options, self.approvals, self.print)
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
            self._list_commands()
            quit_wait = asyncio.create_task(self.quit.wait())
            gone_wait = asyncio.create_task(server.gone.wait())
            await asyncio.wait({quit_wait, gone_wait}, return_when=asyncio.FIRST_COMPLETED)
            quit_wait.cancel()
            gone_wait.cancel()
            self.server = None
            self.server_ready.clear()
            if self.quit.is_set():
                resumable = await stored_session(server, self._session_id())
                self.print("· bye", DIM)
                if resumable is not None:
                    self.print(self._how_to_resume(resumable))
                await server.shutdown()
                return 0
            await server.wait_exit(1.0)
            self.events.server_died(server.returncode)
            crashes.append(time.monotonic())
            if _keeps_stopping(crashes):
                self.print("the server keeps stopping; giving up", RED)
                if (session := self._session_id()) is not None:
                    self.print(self._how_to_resume(session))
                return EXIT_FAILED
            resume, redraw = self._session_id(), False
            where = f" and resuming session {resume}" if resume else ""
            self.print(f"· restarting the server{where}…", DIM)

    async def _connect(self, resume: str | None, redraw: bool) -> ServerProcess | int:
        handlers = shell_handlers(self.events, self.approvals, self.notifier)
        options = chosen_options(self.options.initialization_options, self.events.state)
        server = await start_server(self.options, options, handlers, self.print, self._server_log)
        if not isinstance(server, int) and resume is not None:
            await resume_session(server, resume, redraw, self.events, self._columns)
        return server

    def _write_raw(self, text: str) -> None:
        """A bell or an OSC sequence, straight to the terminal (nothing printed)."""
        output = self.app.output
        output.write_raw(text)
        output.flush()

    def _server_log(self, line: str) -> None:
        self.print(f"· server: {line.rstrip()}", DIM)

    async def _tick(self) -> None:
        """Spinner and running times."""
        while True:
            await asyncio.sleep(TICK_SECONDS)
            if self.events.tick():
                self.app.invalidate()

    def _session_id(self) -> str | None:
        session = (self.events.state or {}).get("sessionId")
        return session if isinstance(session, str) else None

    def _how_to_resume(self, session: str) -> str:
        return f"To resume this session: {resume_command(session, self.options.workspace)}"

    def spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self.background.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[Any]) -> None:
        self.background.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self.print(f"internal error: {error!r}", RED)

    def print(self, text: str, style: str = "") -> None:
        self.printer.print(text, style)

    # --- what the user does ------------------------------------------------------------------

    def submit(self) -> None:
        """Enter: the line answers the question shown (``answering``), or is sent."""
        text = self.input.text
        if not text.strip():
            return
        match self.approvals.take_line(text):
            case Picked():
                self._clear_input(keep=False)
            case Refused():
                pass  # kept, under a reminder
            case Prompt():
                self._clear_input(keep=True)
                self._send(text)

    def _send(self, text: str) -> None:
        """A line as the user meant it: ``>`` steers the running turn (idle, the words are a
        prompt), ``/exit`` leaves, ``/rewind`` asks first."""
        if text.strip().lower() in QUIT_COMMANDS:
            self.quit.set()
        elif (rewind := asked_rewind(text)) is not None:
            self.spawn(self._rewind(rewind))
        elif text.startswith(">") and (words := text[1:].strip()):
            busy = bool((self.events.state or {}).get("busy"))
            self.spawn(self._send_prompt(words, p.STEER if busy else p.PROMPT))
        else:
            self.spawn(self._send_prompt(text))

    def _clear_input(self, keep: bool) -> None:
        """An empty prompt (``keep``: the line goes to the history, ↑ brings it back)."""
        self.input.reset(append_to_history=keep)
        self.approvals.edited("")

    async def _rewind(self, asked: AskedRewind) -> None:
        server = await self._ready_server(asked.line)
        try:
            line = await confirmed_rewind(server, asked, self.approvals, self.printer)
        except ConnectionError:
            self.print(f"the server went away; not sent: {asked.line}", RED)
            return
        if line is not None:
            await self._send_prompt(line)

    async def _ready_server(self, text: str) -> ServerProcess:
        if self.server is None:
            self.print(f"· waiting for the server to send: {text}", DIM)
        while (server := self.server) is None:
            await self.server_ready.wait()
        return server

    async def _send_prompt(self, text: str, method: str = p.PROMPT) -> None:
        server = await self._ready_server(text)
        before = self._session_id()
        try:
            params = (  # @path attaches to a prompt; a steer is words alone
                prompt_params(
                    text, WorkspaceRoots.of(self.options.workspace, *self.options.add_dirs)
                )
                if method == p.PROMPT
                else {"text": text}
            )
            answer = await server.request(method, params)
        except (RpcError, AttachError) as err:
            self.print(f"error: {err.message}", RED)
            return
        except ConnectionError:
            self.print(f"the server went away; not sent: {text}", RED)
            return
        if isinstance(answer, dict) and answer.get("status") == "steered":
            # taken: the ``steered`` event shows it when the model gets it, at the next step
            self.print(terminal_safe(f"· steering at the next step: {first_line(text)}"), DIM)
            return
        if not isinstance(answer, dict) or answer.get("status") != "handled":
            return  # started: turnStarted shows it; queued: the toolbar and the queue show it
        # handled: the ``command`` event showed it with its answer
        if text.lstrip().startswith("/"):
            with contextlib.suppress(RpcError, ConnectionError):
                state = await server.request(p.GET_STATE, {})
                if isinstance(state, dict):
                    self.events.state = state
                session = self._session_id()
                if session is not None and session != before:
                    await replay_transcript(server, session, self.printer, self._columns)

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

    def cycle_mode(self) -> None:
        self.request(p.CYCLE_MODE, {})

    def interrupt(self) -> None:
        if self.approvals.escape():  # a question of the chat's own: Esc says no
            return
        state = self.events.state or {}
        if not state.get("busy") and not self.approvals.asking:
            return
        turn = state.get("turnId")
        self.request(p.INTERRUPT, {"turnId": turn} if isinstance(turn, str) else {})

    def ctrl_c(self) -> None:
        if self.input.text:
            self._clear_input(keep=True)
        elif self.ctrl_c_armed:
            self.quit.set()
        else:
            self.ctrl_c_armed = True
        self.app.invalidate()

    def quit_now(self) -> None:
        self.quit.set()

    def _typed(self, buffer: Buffer) -> None:
        self._disarm(buffer)
        self.approvals.edited(buffer.text)
        if buffer.text == "/":  # a command is being typed: list them as they are now
            self._list_commands()

    def _list_commands(self) -> None:
        server = self.server
        if server is None:
            return

        async def listing() -> None:
            with contextlib.suppress(RpcError, ConnectionError):
                answer = await server.request(p.LIST_COMMANDS, {})
                self.slash.commands = list(answer.get("commands", []))
                self.app.invalidate()

        self.spawn(listing())

    def slash_hints(self) -> list[tuple[str, str]]:
        return self.slash.hints(self.input.text)

    def _disarm(self, _: Buffer) -> None:
        self.ctrl_c_armed = False

    # --- the screen --------------------------------------------------------------------------

    def live_lines(self) -> list[Fragment]:
        lines = self.events.live_lines()
        if self.ctrl_c_armed:
            lines.append(("class:hint", "Ctrl-C again to exit (Esc interrupts the agent)"))
        return lines

    def _refocus(self) -> None:
        target = self.approvals.focus()
        self.app.layout.focus(self.input if target is None else target)
        self.app.invalidate()

    def _columns(self) -> int:
        return self.app.output.get_size().columns


# --- beside the shell: what it asks, whom it answers, what it redraws ---------------------------


async def start_server(
    chat: ChatOptions,
    options: JSON,
    handlers: Handlers,
    say: Callable[[str, str], None],
    log: Callable[[str], None],
) -> ServerProcess | int:
    """A server initialized with ``options`` for the chat's folders, or the exit status
    when it cannot start or refuses them (said with ``say``)."""
    try:
        server = await ServerProcess.start(handlers, log)
    except OSError as err:
        say(f"error: cannot start the server: {err}", RED)
        return EXIT_FAILED
    try:
        await server.initialize((chat.workspace, *chat.add_dirs), options, "tiller-chat")
    except RpcError as err:
        say(f"error: the server refused the options: {err.message}", RED)
        await server.shutdown()
        return EXIT_USAGE if err.code == INVALID_PARAMS else EXIT_FAILED
    except ConnectionError:
        await server.wait_exit(1.0)
        say(f"error: the server exited at start (code {server.returncode})", RED)
        return EXIT_FAILED
    return server


async def resume_session(
    server: ServerProcess, resume: str, redraw: bool, events: EventLog, columns: Callable[[], int]
) -> None:
    """Resume ``resume`` in a started server (``redraw``: the user's ``--resume``, whose story
    is printed again; else a restart after a crash)."""
    printer = events.printer
    try:
        events.state = await server.request(p.SESSION_RESUME, {"sessionId": resume})
    except RpcError as err:
        if redraw:
            printer.print(f"could not resume session {resume}: {err.message}", RED)
        else:  # a session is stored from its first turn on: there was nothing to lose
            printer.print(f"· session {resume} had no stored turn: a new one", DIM)
    except ConnectionError:
        pass  # the server died again: _serve sees it
    else:
        printer.print(f"· resumed session {resume}", DIM)
        if redraw:
            await replay_transcript(server, resume, printer, columns)


async def stored_session(server: ServerProcess, session: str | None) -> str | None:
    """``session`` when the server lists it as stored: one to resume."""
    if session is None:
        return None
    try:
        listed = await server.request(p.SESSION_LIST, {})
    except (RpcError, ConnectionError):
        return None
    rows = listed.get("sessions") if isinstance(listed, dict) else None
    stored = any(isinstance(r, dict) and r.get("sessionId") == session for r in rows or [])
    return session if stored else None


async def decide_trust(
    options: ChatOptions, approvals: Approvals, say: Callable[[str, str], None]
) -> None:
    """The first start in a folder nobody decided on asks whether to trust it, once: the
    answer is kept in the user's own state (``--trust`` decides for this chat only)."""
    if "workspaceTrust" in options.initialization_options:
        return
    workspace = options.workspace
    if await asyncio.to_thread(decided, workspace) != NOT_YET:
        return
    from tiller.extend.settings_layer import read_settings  # cattrs: only when asking

    settings = await asyncio.to_thread(read_settings, workspace, NOT_YET)
    answer = await approvals.ask(trust_question(str(workspace), settings.withheld()))
    trusted = answer.get("trusted") is True
    where = await asyncio.to_thread(record, workspace, trusted)
    said = "Trusted" if trusted else "Not trusting"
    say(f"· {said} {workspace} (kept in {where}; /trust changes it)", DIM)


def resume_command(session: str, workspace: Path) -> str:
    """The command that resumes ``session`` (``--workspace`` when it is not the current
    folder)."""
    try:
        here: Path | None = Path.cwd()
    except OSError:  # the folder it was started in is gone
        here = None
    where = "" if workspace == here else f" --workspace {shlex.quote(str(workspace))}"
    return f"tiller chat --resume {session}{where}"


def chosen_options(initialization_options: JSON, state: JSON | None) -> JSON:
    """The initialization options, with the mode and model of the last state: a restarted
    server keeps what the user chose."""
    options = dict(initialization_options)
    for key, field_name in (("permissionMode", "mode"), ("model", "model")):
        chosen = (state or {}).get(field_name)
        if isinstance(chosen, str):
            options[key] = chosen
    return options


def _keeps_stopping(crashes: deque[float]) -> bool:
    """Whether the server died ``RESTARTS_ALLOWED`` times within ``RESTART_WINDOW_SECONDS``."""
    return len(crashes) == RESTARTS_ALLOWED and crashes[-1] - crashes[0] < RESTART_WINDOW_SECONDS


def shell_handlers(events: EventLog, approvals: Approvals, notifier: Notifier) -> Handlers:
    """The server's notifications go to the event log, its questions to the approvals; the
    notifier announces both."""
    notifications = dict(events.notifications())
    notifications[p.EVENT] = notifier.watching(notifications[p.EVENT])
    ask = notifier.asking
    return Handlers(
        notifications=notifications,
        requests={
            p.CONFIRM_TOOL: ask("a tool call to approve", approvals.confirm_tool),
            p.APPROVE_PLAN: ask("a plan to approve", approvals.approve_plan),
            p.CHECKPOINT: ask("a checkpoint", approvals.checkpoint),
        },
    )


async def replay_transcript(
    server: ServerProcess, session_id: str, printer: Printer, columns: Callable[[], int]
) -> None:
    """After /resume, /fork, /clear or --resume: the session's story so far."""
    try:
        answer = await server.request(p.SESSION_TRANSCRIPT, {"sessionId": session_id})
    except (RpcError, ConnectionError) as err:
        printer.print(f"cannot read the transcript: {err}", RED)
        return
    entries = answer.get("entries") if isinstance(answer, dict) else None
    printer.print(f"── session {session_id} ──", DIM)
    if isinstance(answer, dict) and answer.get("more"):
        printer.print("(older entries not shown)", DIM)
    replayed = EventLog(printer, lambda: None, columns)
    for event in as_events(entries if isinstance(entries, list) else [], session_id):
        replayed.on_event(event)
    replayed.end_partial()
    printer.print("")
