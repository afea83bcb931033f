"""One session's live state: the history, mode, model and thinking, grants, todos, the running
turn (``active``), the prompt queue and steers, interrupt and close. How a prompt becomes a turn
and how a turn ends is ``turns``; what a turn is built from, ``turn_start``."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from tiller.core.config import Config
from tiller.core.hooks.session_hooks import Hooks, session_hooks
from tiller.core.permissions.modes import Grants
from tiller.core.permissions.web_fetch_rules import FoldedWebFetch
from tiller.core.session.journal import Journal
from tiller.core.turn.approvals import Approver
from tiller.core.turn.events import (
    Event,
    Notice,
    Posted,
    QueueDropped,
)
from tiller.core.turn.outcomes import InterruptCause
from tiller.core.turn.setup import Pending
from tiller.errors import InvalidParams
from tiller.extend.agents import AgentKind, Agents
from tiller.extend.mcp.manager import McpManager
from tiller.extend.settings_layer import Settings, read_settings
from tiller.extend.trust import NOT_YET, Trust
from tiller.jsontypes import JSON
from tiller.model import history
from tiller.model.history import Message
from tiller.model.provider import (
    KnownModel,
    Provider,
    UnknownModel,
    Unverified,
    lookup_model,
)
from tiller.model.usage import ContextUse, Ledger, Usage
from tiller.protocol import MODE_WORDS, Mode, State, Thinking, Todo, next_mode
from tiller.tools.base import EditorFiles, EditorTerminal, ReadLedger, Tool, ToolContext
from tiller.workspace.checkpoints.rewind import CheckpointKeeper
from tiller.workspace.diagnostics import EditorDiagnostics
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.sandbox import ShellPolicy
from tiller.workspace.store import SessionStore

log = logging.getLogger(__name__)

STOP_WORDS = frozenset({"stop", "cancel"})


@dataclass(frozen=True)
class ActiveTurn:
    """The running turn: its id, its task, and why it was cancelled (once it was)."""

    turn_id: str
    task: asyncio.Task[None]
    cancel_cause: InterruptCause | None = None
    tools_used: int = 0


@dataclass(frozen=True)
class Started:
    turn_id: str


@dataclass(frozen=True)
class Queued:
    position: int


@dataclass(frozen=True)
class Steering:
    """Text taken for the running turn ``turn_id``, delivered at its next step boundary."""

    turn_id: str


@dataclass(frozen=True)
class Handled:
    message: str


PromptResult = Started | Queued | Handled


class SessionSink(Protocol):
    """Where a session's notifications go (the rpc layer)."""

    def event(self, posted: Posted) -> None: ...
    def state(self, state: State) -> None: ...
    def todos(self, todos: tuple[Todo, ...]) -> None: ...


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@dataclass
class Session:
    config: Config
    roots: WorkspaceRoots  # the workspace's folders; the first is the primary one
    provider: Provider
    approver: Approver
    sink: SessionSink
    tools: Sequence[Tool]
    store: SessionStore
    checkpoints: CheckpointKeeper | None = None
    shell: ShellPolicy = field(default_factory=ShellPolicy)  # sandbox and tool env, from start
    editor: EditorFiles | None = None  # the client's file buffers, when it offers them
    terminal: EditorTerminal | None = None  # the client's terminals, for approved commands
    diagnostics: EditorDiagnostics | None = None  # the client's, asked after edits
    mcp: McpManager | None = None  # the workspace's MCP servers (shared by its sessions)
    id: str = field(default_factory=lambda: new_id("ses"))
    mode: Mode = "default"
    model: str = ""
    thinking: Thinking = Thinking()  # the rpc layer passes the configured mode and thinking
    grants: Grants = Grants()
    messages: tuple[Message, ...] = ()
    system: str = ""  # fixed at the first turn, stored: append-only (see prompt_blocks)
    queue: deque[Pending] = field(default_factory=deque)
    steers: list[str] = field(default_factory=list)  # for the running turn's next step
    reads: ReadLedger = field(default_factory=ReadLedger)
    todos: tuple[Todo, ...] = ()
    active: ActiveTurn | None = None
    closed: bool = False  # one way: a switched-away session takes no more prompts
    _seq: int = 0
    _last_state: State | None = None
    ended_turn: str | None = None  # State.turnId while idle: the turn that ended last
    ledger: Ledger = Ledger()  # session usage and cost, context after the last step
    _told_problems: set[str] = field(default_factory=set)  # settings problems already told
    # Subagents (see subagents.py): the kinds this session's task tool offers, fixed at its
    # first turn like the system prompt (None: not fixed yet); its children while they run;
    # for a child, its kind and the parent's turn that started it.
    agents: Agents | None = None
    # web_fetch as the WebFetch rules shape it, fixed at the first turn like the system
    # prompt (the tools list is part of the prefix thinking is bound to); None: not fixed yet
    web_fetch: FoldedWebFetch | None = None
    children: dict[str, Session] = field(default_factory=dict)
    agent: AgentKind | None = None
    parent_turn_id: str | None = None
    # Whether the workspace's files may run programs and widen grants (extend/trust.py): the
    # runtime's decision for the folder, changed by /trust (Sessions.retrust)
    trust: Trust = NOT_YET

    def __post_init__(self) -> None:
        self.model = self.model or self.config.model
        self.journal = Journal(self.store, self.id)

    @property
    def workspace(self) -> Path:
        """The primary root: its settings, instructions and MCP servers are the session's."""
        return self.roots.primary

    def settings(self) -> Settings:
        """The settings files as they are now, read with the folder's trust."""
        return read_settings(self.workspace, self.trust)

    # --- TurnHost ---------------------------------------------------------------------------

    def set_mode(self, mode: Mode) -> None:
        if mode != self.mode:
            self.mode = mode
            self.emit(Notice(f"Mode: {MODE_WORDS[mode]}"))  # the words of commands.mode_text
            self.publish()
        for child in self.children.values():  # a child never has more rights than its parent
            if child.agent is not None and not child.agent.read_only:
                child.set_mode(mode)

    def set_grants(self, grants: Grants) -> None:
        self.grants = grants

    def append(self, role: history.Role, blocks: Sequence[JSON]) -> None:
        """Append to the history; the message is on disk before anything else happens."""
        before = self.messages
        self.messages = history.append(self.messages, role, blocks)
        if self.messages != before:
            last = len(self.messages) - 1
            self.store.put_message(self.id, last, self.messages[last], self.turn_id)

    @property
    def turn_id(self) -> str | None:
        return self.active.turn_id if self.active is not None else None

    @property
    def tools_used(self) -> int:
        return self.active.tools_used if self.active is not None else 0

    def emit(self, event: Event) -> None:
        self.emit_in(self.turn_id, event)

    @property
    def last_turn(self) -> str | None:
        """The turn that ended last (None: none has in this process)."""
        return self.ended_turn

    def say_once(self, text: str, *, key: str | None = None) -> None:
        """``say`` a settings problem once per session (``key``: what counts as the same)."""
        told = key or text
        if told not in self._told_problems:
            self._told_problems.add(told)
            self.say(text)

    def say(self, text: str) -> None:
        self.emit(Notice(text))

    def emit_in(self, turn_id: str | None, event: Event) -> None:
        """Post ``event`` as part of turn ``turn_id``: journaled, then sent to the face."""
        self._seq += 1
        posted = Posted(self.id, turn_id, self._seq, event, self.parent_turn_id)
        self.journal.on_event(posted)  # on disk before any client sees it
        self.sink.event(posted)

    def count_tools(self, used: int) -> None:
        if self.active is not None:
            self.active = replace(self.active, tools_used=used)
        self.publish()

    def rewrite_history(self, messages: tuple[Message, ...]) -> None:
        """Replace the history (compaction, or a failed/refused turn dropped by the loop);
        messages kept from the old history keep their turn ids in the store."""
        loaded = self.store.load(self.id)
        known = loaded.turn_ids if loaded is not None else ()
        same = 0
        while same < min(len(messages), len(self.messages), len(known)) and (
            messages[same] == self.messages[same]
        ):
            same += 1
        ids = [*known[:same], *[self.turn_id] * (len(messages) - same)]
        self.messages = messages
        self.store.replace_messages(self.id, messages, ids)

    def record_usage(self, usage: Usage, context: ContextUse | None) -> None:
        """One model call's priced usage (the loop's ledger): session totals and context."""
        self.ledger = self.ledger.record(usage, context)
        self.publish()

    # --- SessionControls (for the state tools) --------------------------------------------------

    def enter_plan_mode(self) -> None:
        self.set_mode("plan")

    def replace_todos(self, todos: tuple[Todo, ...]) -> None:
        self.todos = todos
        self.sink.todos(todos)
        self.publish()

    # --- state --------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.active is not None

    def state(self) -> State:
        return State(
            session_id=self.id,
            mode=self.mode,
            model=self.model,
            thinking=self.thinking,
            busy=self.busy,
            turn_id=self.turn_id or self.ended_turn,
            queue=self.queued,
            active_todo=active_todo(self.todos) if self.busy else None,
            todo_completed=sum(t.status == "completed" for t in self.todos),
            todo_total=len(self.todos),
            tools_used=self.tools_used,
            sandbox=self.shell.backend,
            context=None if self.ledger.context is None else self.ledger.context.to_wire(),
            session_cost_usd=self.ledger.total.cost_usd,
            trusted=self.trust.trusted,
            trusted_by=self.trust.by,
        )

    def publish(self) -> None:
        """Send ``tiller/state`` if anything changed since the last one."""
        state = self.state()
        if state != self._last_state:
            self._last_state = state
            self.store.update(
                self.id, model=self.model, mode=self.mode, thinking=self.thinking,
                todos=self.todos, usage=self.ledger.total, context=self.ledger.context,
            )  # fmt: skip
            self.sink.state(state)

    # --- requests -----------------------------------------------------------------------------

    def steer(self, text: str, turn_id: str | None = None) -> Steering | None:
        """Send ``text`` to the running turn (only if it is ``turn_id``, when given): the loop
        delivers it at the next step boundary (``steered``). No turn running (or another):
        None, and the caller treats it as a prompt."""
        active = self.active
        if self.closed or active is None or turn_id not in (None, active.turn_id):
            return None
        if active.cancel_cause is not None:
            return None  # being interrupted: it would never reach this turn
        self.steers.append(text)
        self.emit(Notice(f"Steering: {text[:80]} (delivered at the next step)"))
        return Steering(active.turn_id)

    def take_steers(self) -> tuple[str, ...]:
        taken = tuple(self.steers)
        self.steers.clear()
        return taken

    @property
    def queued(self) -> tuple[str, ...]:
        return tuple(p.text for p in self.queue)

    def interrupt(self, turn_id: str | None = None, cause: InterruptCause = "user") -> str | None:
        """Cancel the running turn (only if it is ``turn_id``, when given): the turn task
        repairs the history and ends it as interrupted. A ``turn_id`` of a running child's turn
        interrupts that child alone (its task call is answered, this turn goes on); this
        session's turn takes its children with it. The id of the turn, or None."""
        if turn_id is not None and turn_id != self.turn_id:
            for child in list(self.children.values()):
                found = child.interrupt(turn_id, cause)
                if found is not None:
                    return found
        active = self.active
        if active is None or turn_id not in (None, active.turn_id):
            return None
        if active.cancel_cause is None:  # cancel once: a flood of interrupts is one interrupt
            self.active = replace(active, cancel_cause=cause)
            active.task.cancel()
        return active.turn_id

    def close(self) -> tuple[str, ...]:
        """Retire this session (switch, shutdown): its queued prompts are dropped — returned,
        and listed in an event so a client can offer them again — and its turn interrupted."""
        self.closed = True
        dropped = self.queued
        if dropped:
            self.queue.clear()
            self.emit(QueueDropped(dropped))
        self.interrupt()
        self.publish()
        return dropped

    def cycle_mode(self) -> Mode:
        self.set_mode(next_mode(self.mode))
        return self.mode

    def set_model(self, model: str) -> str:
        if model != self.model:
            self.model = model
            if self.busy:
                self.emit(Notice(f"Model switches to {model} from the next turn"))
            note = self.provider.spec(model).notice
            if note:
                self.emit(Notice(note))
            self.publish()
        return self.model

    async def choose_model(self, model: str) -> str:
        """``set_model`` for an id the API knows (InvalidParams when its list says no; an id
        that cannot be checked is taken, with a warning in the log)."""
        match await lookup_model(self.provider, model):
            case UnknownModel(message=message):
                raise InvalidParams(message)
            case Unverified(reason=reason):
                log.warning("model %s not verified: %s", model, reason)
            case KnownModel():
                pass
        return self.set_model(model)

    def set_thinking(self, thinking: Thinking) -> Thinking:
        self.thinking = thinking
        self.publish()
        return thinking

    def clear_queue(self) -> int:
        cleared = len(self.queue)
        self.queue.clear()
        self.publish()
        return cleared

    async def wait_idle(self) -> None:
        while (active := self.active) is not None:
            if active.task.done():
                await asyncio.sleep(0)  # its done-callback settles it
            else:
                await asyncio.wait({active.task})

    def hooks(self) -> Hooks:
        """The hooks a turn (or a compaction) runs, the settings files read now; a skipped
        entry is told once."""
        found, problems = session_hooks(self.config.hooks, self.settings(), self.shell.env, self.id)
        for problem in problems:
            self.say_once(f"Hook skipped: {problem}")
        return found

    def tool_context(self) -> ToolContext:
        """What this session's tools may touch, and how its commands run."""
        return ToolContext(
            self.roots, self.reads, self, shell=self.shell, editor=self.editor,
            terminal=self.terminal,
        )  # fmt: skip


def steers_text(texts: tuple[str, ...]) -> str:
    return "the steer" if len(texts) == 1 else f"{len(texts)} steers"


def active_todo(todos: Sequence[Todo]) -> str | None:
    """The in_progress item's activeForm. Only while a turn runs: an item that an interrupted
    (or failed) turn left in_progress stays on the board, but no one is working on it."""
    return next((t.active_form for t in todos if t.status == "in_progress"), None)
