"""Sessions: the one owner of every session's life, for every face.

It creates, resumes (with crash repair), forks, slices, switches, closes and lists sessions,
and keeps the live ones. A face (the Tiller protocol server, the ACP agent) talks to this
service and to the ``Session`` it hands out; nothing else builds a ``Session`` or reads the
store's sessions directly. A ``Seat`` is what a face gives each of its sessions: where their
events go and who answers their approvals.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Generic, Protocol, TypeVar

from tiller.core.config import Config
from tiller.core.permissions.web_fetch_rules import FoldedWebFetch
from tiller.core.session import slicing
from tiller.core.session.session import Session, SessionSink, new_id
from tiller.core.session.subagents import Subagents
from tiller.core.turn import compaction
from tiller.core.turn.approvals import Approver
from tiller.core.turn.events import Notice, Posted, Sliced, TurnEnded, event_fields
from tiller.core.turn.outcomes import Interrupted
from tiller.core.turn.system_prompt import system_prompt
from tiller.errors import InvalidParams, TillerError
from tiller.extend.additional_dirs import additional_directories
from tiller.extend.agents import Agents
from tiller.extend.mcp.manager import McpManager
from tiller.extend.settings_layer import Settings, read_settings
from tiller.extend.trust import Trust
from tiller.extend.web_settings import web_tools
from tiller.model import history, models
from tiller.model.history import Message
from tiller.model.provider import Provider, ProviderError
from tiller.model.usage import Ledger
from tiller.protocol import Mode, Thinking, Todo
from tiller.tools.base import EditorFiles, EditorTerminal
from tiller.tools.registry import default_tools
from tiller.tools.skill import SkillTool
from tiller.tools.task import TaskTool
from tiller.workspace.checkpoints.rewind import CheckpointKeeper
from tiller.workspace.diagnostics import EditorDiagnostics
from tiller.workspace.roots import WorkspaceFolder, WorkspaceRoots
from tiller.workspace.sandbox import ShellPolicy
from tiller.workspace.store import SessionRow, SessionStore

CUT_BY_SERVER_STOP = "The server stopped during this turn (it restarted); the turn was cut here."


@dataclass(frozen=True)
class Seat:
    """What a face gives each of its sessions."""

    sink: SessionSink
    approver: Approver
    editor: EditorFiles | None = None  # the client's file buffers, when it offers them
    terminal: EditorTerminal | None = None  # the client's terminals, for approved commands
    diagnostics: EditorDiagnostics | None = None  # its diagnostics, asked after edits (None:
    # the workspace's configured language servers, if any)


@dataclass(frozen=True)
class Shape:
    """What a session is made of besides its id: carried over by resume, fork and slice."""

    mode: Mode
    model: str
    thinking: Thinking
    todos: tuple[Todo, ...] = ()
    messages: tuple[Message, ...] = ()
    system: str = ""  # the fixed system prompt ("": fixed at the first turn)
    agents: Agents | None = None  # the task tool's agent kinds (None: fixed at the first turn)
    web_fetch: FoldedWebFetch | None = None  # web_fetch as the rules shaped it (None: likewise)


def carried_turn_ids(
    before: Sequence[Message], ids: Sequence[str | None], after: Sequence[Message]
) -> list[str | None]:
    """Turn ids for ``after``, a repaired ``before``: a message kept in place keeps its id;
    one that repair added or changed takes the id at its place (the turn it closes)."""
    if not ids:
        return [None] * len(after)
    return [
        ids[i] if i < len(before) and before[i] == message else ids[min(i, len(ids) - 1)]
        for i, message in enumerate(after)
    ]


class Services(Protocol):
    """What sessions are built from, shared by all of them: one per process, made by the
    composition root (``tiller.runtime.Runtime``), which sits above the core."""

    @property
    def config(self) -> Config: ...
    @property
    def provider(self) -> Provider: ...
    @property
    def store(self) -> SessionStore: ...
    @property
    def shell(self) -> ShellPolicy: ...
    def checkpoints(self, roots: WorkspaceRoots) -> CheckpointKeeper | None: ...
    def mcp(self, workspace: Path) -> McpManager | None: ...
    def language_servers(self, workspace: Path) -> EditorDiagnostics | None: ...
    def trust(self, workspace: Path) -> Trust: ...
    def settings(self, workspace: Path) -> Settings: ...
    async def set_trust(self, workspace: Path, trust: Trust) -> None: ...
    def notices(self, roots: WorkspaceRoots) -> tuple[str, ...]: ...


S = TypeVar("S", bound=Services)


class Sessions(Generic[S]):
    """Every session of this process: created, resumed, forked, sliced, switched, closed."""

    def __init__(self, runtime: S) -> None:
        self.runtime = runtime
        self.live: dict[str, Session] = {}

    @property
    def store(self) -> SessionStore:
        return self.runtime.store

    # --- building ---------------------------------------------------------------------------

    def _open(self, session_id: str, roots: WorkspaceRoots, seat: Seat, shape: Shape) -> Session:
        runtime = self.runtime
        trust = runtime.trust(roots.primary)
        settings = runtime.settings(roots.primary)
        extra = additional_directories(settings)
        roots = roots.changed([WorkspaceFolder.of(p) for p in extra.found], ())
        session = Session(
            config=with_web_tools(runtime.config, settings),
            roots=roots,
            provider=runtime.provider,
            approver=seat.approver,
            sink=seat.sink,
            tools=[*default_tools(), SkillTool()],
            store=runtime.store,
            checkpoints=runtime.checkpoints(roots),
            shell=runtime.shell,
            editor=seat.editor,
            terminal=seat.terminal,
            diagnostics=(
                seat.diagnostics
                if seat.diagnostics is not None
                else runtime.language_servers(roots.primary)
            ),
            mcp=runtime.mcp(roots.primary),
            id=session_id,
            mode=shape.mode,
            model=shape.model or runtime.config.model,
            thinking=shape.thinking,
            todos=shape.todos,
            messages=shape.messages,
            system=shape.system,
            agents=shape.agents,
            web_fetch=shape.web_fetch,
            trust=trust,
        )
        session.tools = [
            *session.tools,
            TaskTool(Subagents(session), runtime.config.max_parallel_tasks),
        ]
        self.live[session_id] = session
        return session

    def create(
        self,
        roots: WorkspaceRoots,
        seat: Seat,
        shape: Shape | None = None,
        *,
        session_id: str = "",
        stored: bool = True,
    ) -> Session:
        """A new, empty session; ``shape`` gives its mode, model and thinking (default: the
        settings). Stored at once (``stored`` False: with its first prompt; no face asks that
        now), so it can be resumed before its first prompt, which gives it its title."""
        config = self.runtime.config
        shape = shape or Shape(config.permission_mode, config.model, config.thinking)
        shape = replace(shape, todos=(), messages=(), agents=None, web_fetch=None)
        session = self._open(session_id or new_id("ses"), roots, seat, shape)
        if stored:
            now = time.time()
            self.store.create(
                SessionRow(session.id, str(roots.primary), "", None, now, now, session.model,
                           session.mode, session.thinking, (), 0, roots=session.roots.folders[1:])
            )  # fmt: skip
        return session

    def fresh(self, like: Session, seat: Seat) -> Session:
        """A new session with ``like``'s workspace, mode, model and thinking."""
        return self.create(like.roots, seat, Shape(like.mode, like.model, like.thinking))

    def resume(self, session_id: str, roots: WorkspaceRoots, seat: Seat) -> Session:
        """The stored session ``session_id``, its history repaired as after an interrupt; a
        turn cut by a dead server is closed in the transcript. Turn ids survive the repair."""
        loaded = self.store.load(session_id)
        if loaded is None:
            raise InvalidParams(f"unknown sessionId {session_id!r}")
        live = self.live.get(session_id)
        close_cut_turns(self.store, session_id, live.turn_id if live is not None else None)
        self._repair_children(session_id, live)
        row = loaded.row
        roots, gone = resumed_roots(row, roots)
        system, fixed = self._fixed_prefix(row, loaded.messages, roots)
        if system:  # "": a session never prompted, fixed at its first turn
            self.store.set_system(row.id, system)  # no-op when it was fixed already
        repaired = history.repair(fixed)
        if repaired != loaded.messages:
            ids = carried_turn_ids(loaded.messages, loaded.turn_ids, repaired)
            self.store.replace_messages(row.id, repaired, ids)
        shape = Shape(
            row.mode, row.model, row.thinking, row.todos, repaired, system, _agents(row),
            self._web_fetch(row, repaired),
        )  # fmt: skip
        session = self._open(row.id, roots, seat, shape)
        session.ledger = Ledger(row.usage, row.context)
        if gone:
            session.emit(Notice(f"Workspace folders of this session that are gone: {gone}"))
        return session

    def _repair_children(self, session_id: str, live: Session | None) -> None:
        """Subagents cut by a dead server are repaired like an interrupt: their open turns
        closed in their transcripts, every tool_use in their histories answered (those still
        running in this process end themselves)."""
        running = live.children if live is not None else {}
        for row in self.store.children(session_id):
            if row.id in running:
                continue
            close_cut_turns(self.store, row.id, None)
            loaded = self.store.load(row.id)
            if loaded is None:
                continue
            repaired = history.repair(loaded.messages)
            if repaired != loaded.messages:
                ids = carried_turn_ids(loaded.messages, loaded.turn_ids, repaired)
                self.store.replace_messages(row.id, repaired, ids)

    def _fixed_prefix(
        self, row: SessionRow, messages: tuple[Message, ...], roots: WorkspaceRoots
    ) -> tuple[str, tuple[Message, ...]]:
        """The session's system prompt and history as they are sent from now on.

        A session stored before the system prompt was kept with it has none: it is fixed
        now, at its first load. What its earlier turns were sent with cannot be known (the
        prompt was rebuilt at every turn from AGENTS.md), so its thinking blocks, bound to
        those requests, are left out once, as after a compaction. The same holds for a
        session stored before the task tool's agent kinds were kept with it (its tools were
        others): they are fixed at its next turn. A session never prompted keeps what it has
        ("": its first turn fixes it)."""
        if not messages:
            return row.system or "", messages
        if row.system is not None and row.agents is not None:
            return row.system, messages
        system = row.system if row.system is not None else system_prompt(roots)
        budget_form = self.runtime.provider.spec(row.model).thinking == "budget"
        return system, history.without_thinking(messages, keep_open_loop=budget_form)

    def _web_fetch(self, row: SessionRow, messages: Sequence[Message]) -> FoldedWebFetch | None:
        """The web_fetch tool the session was fixed with. A session stored before it was kept
        (with a history) was sent the plain setting: it keeps that (a rules change is told)."""
        workspace = Path(row.workspace)
        config = with_web_tools(self.runtime.config, self.runtime.settings(workspace))
        setting = config.server_tools.web_fetch
        if row.web_fetch is not None:
            return FoldedWebFetch.from_json(row.web_fetch, setting)
        return FoldedWebFetch(setting) if messages and setting.enabled else None

    def fork(self, current: Session, source_id: str | None, turn_id: str | None) -> Session:
        """A child of ``source_id`` (default: ``current``) holding its history up to the end
        of ``turn_id`` (default: all of it), seated like ``current``."""
        source = source_id or current.id
        loaded = self.store.load(source)
        if loaded is None or not loaded.messages:
            raise InvalidParams(f"nothing to fork: session {source!r} has no stored turns")
        cut = len(loaded.messages)
        if turn_id is not None:
            ends = [i for i, t in enumerate(loaded.turn_ids) if t == turn_id]
            if not ends:
                raise InvalidParams(f"unknown turnId {turn_id!r} in session {source!r}")
            cut = ends[-1] + 1
        row = loaded.row
        system, kept = self._fixed_prefix(row, loaded.messages[:cut], current.roots)
        row = replace(row, system=system)  # a fork is a true prefix: same system prompt
        messages = history.repair(kept)
        shape = Shape(
            row.mode, row.model, row.thinking, row.todos, messages, system, _agents(row),
            self._web_fetch(row, messages),
        )  # fmt: skip
        child = self._open(new_id("ses"), current.roots, seat_of(current), shape)
        inherited = len({t for t in loaded.turn_ids[:cut] if t is not None})
        now = time.time()
        self.store.create(
            replace(row, id=child.id, title=f"Fork of {row.title}", parent_id=source,
                    turns=inherited, created_at=now, updated_at=now)
        )  # fmt: skip
        ids = carried_turn_ids(kept, loaded.turn_ids[:cut], messages)
        self.store.replace_messages(child.id, messages, ids)
        self.store.copy_entries(source, child.id, turn_id)
        return child

    async def slice(self, current: Session, source_id: str | None, spec: str) -> Session:
        """A child of ``source_id`` (default: ``current``) built by a slice spec (see
        slicing.py); summaries are asked of the model (and counted in ``current``'s cost)."""
        pieces = slicing.parse(spec)  # SpecError (-32602) names the position
        source = source_id or current.id
        loaded = self.store.load(source)
        if loaded is None or not loaded.messages:
            raise InvalidParams(f"nothing to slice: session {source!r} has no stored turns")
        spec_of_model = current.provider.spec(current.model)

        async def summarize(messages: Sequence[Message], focus: str | None) -> str:
            summary, usage = await compaction.summarize(
                current.provider, current.model, messages,
                window=spec_of_model.context_window, focus=focus,
            )  # fmt: skip
            current.record_usage(models.price(usage, spec_of_model), None)
            return summary

        budget_form = spec_of_model.thinking == "budget"
        try:
            messages = await slicing.build(
                pieces, loaded.messages, summarize, keep_open_loop=budget_form
            )
        except ProviderError as err:
            why = f"Summarizing for the slice failed ({err.kind}): {err.message}"
            raise TillerError(why) from err
        row = loaded.row
        shape = Shape(row.mode, row.model, row.thinking, row.todos, messages)
        child = self._open(new_id("ses"), current.roots, seat_of(current), shape)
        now = time.time()
        self.store.create(
            replace(row, id=child.id, title=f"Slice of {row.title}", parent_id=source,
                    turns=0, created_at=now, updated_at=now, system=None, agents=None)
        )  # fmt: skip
        self.store.replace_messages(child.id, messages, [None] * len(messages))
        child.journal.on_event(Posted(child.id, None, 0, Sliced(source, spec)))  # not shown yet
        return child

    # --- life -------------------------------------------------------------------------------

    async def switch(self, old: Session, new: Session) -> None:
        """Make ``new`` the one a face shows: ``old`` is closed at once (its turn interrupted,
        its queue dropped) and waited for."""
        if new is not old:
            await self.close(old)
        new.publish()

    async def close(self, session: Session, wait: float | None = None) -> tuple[str, ...]:
        """Retire ``session``: its queue is dropped (and returned), its turn interrupted and
        waited for (at most ``wait`` seconds when given)."""
        dropped = session.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(session.wait_idle(), wait)
        if self.live.get(session.id) is session:
            del self.live[session.id]
        return dropped

    def list(
        self, workspace: str | None, limit: int = 200, *, with_empty: bool = True
    ) -> list[SessionRow]:
        """Stored sessions, newest first (of ``workspace``; None: all); ``with_empty`` False:
        not those with no turn and no history (as Claude Code lists only sessions with
        messages: every client start makes one)."""
        return self.store.recent(limit, workspace=workspace, with_empty=with_empty)

    def greet(self, session: Session) -> None:
        """What a face shows when a session opens: the start-up notices, and what an untrusted
        folder's files hold that was left out."""
        for text in self.runtime.notices(session.roots):
            session.emit(Notice(text))
        settings = session.settings()
        for problem in additional_directories(settings).problems:
            session.emit(Notice(problem))
        for problem in web_tools(settings, self.runtime.config.server_tools).problems:
            session.emit(Notice(f"Web tools: {problem}"))
        client_decides = self.runtime.config.workspace_trust is not None
        withheld = untrusted_notice(settings, client_decides)
        if withheld is not None:
            session.emit(Notice(withheld))

    async def retrust(self, workspace: Path, trust: Trust) -> None:
        """The user decided on ``workspace``'s trust: the runtime's MCP and language servers
        are configured again, and every live session of the folder (children included) judges
        its next call, runs its next turn's hooks and reads its extra folders with it."""
        await self.runtime.set_trust(workspace, trust)
        for session in list(self.live.values()):
            if session.workspace != workspace:
                continue
            session.trust = trust
            for child in session.children.values():
                child.trust = trust
            self.change_roots(session, session.roots)
            session.publish()

    def change_roots(self, session: Session, roots: WorkspaceRoots) -> None:
        """The client's workspace folders changed: ``session``'s tools, sandbox and checkpoints
        cover ``roots`` from its next turn, and the model is told with that turn's prompt
        (``roots_prompt``). The settings' additional directories stay."""
        extra = additional_directories(read_settings(roots.primary, session.trust))
        roots = roots.changed([WorkspaceFolder.of(p) for p in extra.found], ())
        if roots == session.roots:
            return
        session.roots = roots
        session.checkpoints = self.runtime.checkpoints(roots)
        self.store.set_roots(session.id, roots)  # a no-op before the session is stored
        session.emit(Notice(f"Workspace folders: {roots.describe()}"))


def close_cut_turns(store: SessionStore, session_id: str, running: str | None) -> None:
    """A turn the store shows started but never ended was cut by a dead server: end it in the
    transcript (before the resumed session answers anything) as interrupted. The turn still
    ``running`` in this process (a session resumed over itself) ends itself."""
    for turn_id in store.open_turns(session_id):
        if turn_id == running:
            continue
        store.add_entry(session_id, turn_id, "notice", {"text": CUT_BY_SERVER_STOP})
        ended = event_fields(TurnEnded(Interrupted("server_stopped"), ()))
        del ended["type"]
        store.add_entry(session_id, turn_id, "turnEnded", ended)


def with_web_tools(config: Config, settings: Settings) -> Config:
    """``config`` with the web tools the settings files turn on under the client's
    (``extend/web_settings.py``): read when a session opens and fixed for it, as the tools
    list is part of the prefix its thinking is bound to (a change counts from the next
    session; what is wrong in them is told by ``greet``)."""
    return replace(config, server_tools=web_tools(settings, config.server_tools).tools)


UNTRUSTED: Final = (
    "This folder is not trusted ({by}): its settings run nothing and widen nothing until you "
    "trust it ({how}). Left out: {files}. Deny and ask rules and instruction files still apply."
)
HOW_TO_TRUST: Final = "/trust yes, or `tiller trust`"


def untrusted_notice(settings: Settings, client_decides: bool = False) -> str | None:
    """What an untrusted folder's files hold that was left out (None: trusted, or nothing);
    ``client_decides``: the client keeps the decision (VS Code), so it is changed there."""
    withheld = settings.withheld()
    if settings.trust.trusted or not withheld:
        return None
    how = f"in {settings.trust.by}" if client_decides else HOW_TO_TRUST
    return UNTRUSTED.format(by=settings.trust.by, how=how, files="; ".join(withheld))


def resumed_roots(row: SessionRow, given: WorkspaceRoots) -> tuple[WorkspaceRoots, str]:
    """The roots a resumed session works in, and the stored folders that are gone (""):
    a client that names folders besides the primary one wins; one that names none (or names
    another primary folder than the session's) gets the folders stored with the session back,
    those that are still directories. The model is told of any change with the next prompt
    (``roots_prompt``)."""
    if given.several or not row.roots or str(given.primary) != row.workspace:
        return given, ""
    kept = [f for f in row.roots if os.path.isdir(f.path)]
    gone = ", ".join(f"{f.name} ({f.path})" for f in row.roots if f not in kept)
    first = given.folders[0]
    return WorkspaceRoots.named([(first.path, first.name), *((f.path, f.name) for f in kept)]), gone


def _agents(row: SessionRow) -> Agents | None:
    """The agent kinds the session's task tool was fixed with (None: not fixed yet)."""
    return None if row.agents is None else Agents.from_json(row.agents)


def seat_of(session: Session) -> Seat:
    return Seat(
        session.sink, session.approver, session.editor, session.terminal, session.diagnostics
    )
