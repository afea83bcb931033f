"""One session: idle or busy, the prompt queue, interrupt, mode/model/thinking, the history."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from . import compaction, history
from .approvals import Approver
from .commands import (
    ChangeMode,
    ChangeModel,
    ChangeThinking,
    ClearQueue,
    CommandResult,
    Compact,
    ForkSession,
    ListSessions,
    NewSession,
    Reply,
    ResumeSession,
    format_sessions,
    interpret,
)
from .config import Config
from .errors import InvalidParams
from .events import (
    Event,
    Notice,
    TextDelta,
    ThinkingDelta,
    TurnEnded,
    TurnStarted,
    event_fields,
)
from .history import Message
from .loop import Turn, TurnSetup
from .outcomes import Failed, Interrupted, TurnOutcome
from .permissions import Grants
from .protocol import JSON, Mode, State, Thinking, Todo, TrailItem, next_mode
from .provider import Provider, ProviderError
from .store import SessionRow, SessionStore
from .system_prompt import system_prompt
from .tools.base import ReadLedger, Tool, ToolContext
from .tools.registry import tools_by_name

log = logging.getLogger(__name__)

STOP_WORDS = frozenset({"stop", "cancel"})


@dataclass(frozen=True)
class Started:
    turn_id: str


@dataclass(frozen=True)
class Queued:
    position: int


@dataclass(frozen=True)
class Handled:
    message: str


@dataclass(frozen=True)
class SwitchTo:
    """The prompt (``/clear``, ``/resume``, ``/fork``) makes ``session`` the current one."""

    session: Session
    message: str


PromptResult = Started | Queued | Handled | SwitchTo


class SessionSink(Protocol):
    """Where a session's notifications go (the rpc layer)."""

    def event(self, fields: JSON) -> None: ...
    def state(self, state: State) -> None: ...
    def todos(self, todos: tuple[Todo, ...]) -> None: ...


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@dataclass
class Session:
    config: Config
    workspace: Path
    provider: Provider
    approver: Approver
    sink: SessionSink
    tools: Sequence[Tool]
    store: SessionStore
    id: str = field(default_factory=lambda: new_id("ses"))
    mode: Mode = "default"
    model: str = ""
    thinking: Thinking = Thinking()  # the rpc layer passes the configured mode and thinking
    grants: Grants = Grants()
    messages: tuple[Message, ...] = ()
    queue: deque[str] = field(default_factory=deque)
    reads: ReadLedger = field(default_factory=ReadLedger)
    todos: tuple[Todo, ...] = ()
    turn_id: str | None = None
    tools_used: int = 0
    _task: asyncio.Task[None] | None = None
    _seq: int = 0
    _last_state: State | None = None
    _streamed: list[str] = field(default_factory=list)  # assistant text not yet journaled

    def __post_init__(self) -> None:
        self.model = self.model or self.config.model

    # --- TurnHost ---------------------------------------------------------------------------

    def set_mode(self, mode: Mode) -> None:
        if mode != self.mode:
            self.mode = mode
            self.emit(Notice(f"Mode is now {mode}"))
            self.publish()

    def set_grants(self, grants: Grants) -> None:
        self.grants = grants

    def append(self, role: history.Role, blocks: Sequence[JSON]) -> None:
        """Append to the history; the message is on disk before anything else happens."""
        before = self.messages
        self.messages = history.append(self.messages, role, blocks)
        if self.messages != before:
            last = len(self.messages) - 1
            self.store.put_message(self.id, last, self.messages[last], self.turn_id)

    def emit(self, event: Event) -> None:
        self._seq += 1
        fields = event_fields(event)
        self._journal(event, fields)
        self.sink.event({"sessionId": self.id, "turnId": self.turn_id, "seq": self._seq, **fields})

    def _journal(self, event: Event, fields: JSON) -> None:
        """Keep the transcript: prompts, assistant text, tool calls, plan decisions, outcomes."""
        match event:
            case TextDelta(text=text):
                self._streamed.append(text)
                return
            case ThinkingDelta() | Notice():
                return
            case _:
                pass
        if self._streamed:
            text, self._streamed = "".join(self._streamed), []
            self.store.add_entry(self.id, self.turn_id, "assistantText", {"text": text})
        data = {k: v for k, v in fields.items() if k != "type"}
        self.store.add_entry(self.id, self.turn_id, str(fields["type"]), data)

    def count_tools(self, used: int) -> None:
        self.tools_used = used
        self.publish()

    async def compact(self) -> bool:
        """Summarize older turns with the model; True when the history got shorter."""
        tools = tuple(t.spec() for t in self.tools)
        try:
            shorter = await compaction.compact(self.provider, self.model, tools, self.messages)
        except ProviderError as err:
            self.emit(Notice(f"Compaction failed ({err.kind}): {err.message}"))
            return False
        if shorter is None:
            self.emit(Notice("Nothing older to compact yet."))
            return False
        before = len(self.messages)
        self.messages = shorter
        self.store.replace_messages(self.id, shorter, [self.turn_id] * len(shorter))
        self.emit(Notice(f"Compacted {before} messages into {len(shorter)}."))
        return True

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
        return self._task is not None and not self._task.done()

    def state(self) -> State:
        return State(
            session_id=self.id,
            mode=self.mode,
            model=self.model,
            thinking=self.thinking,
            busy=self.busy,
            turn_id=self.turn_id,
            queue=tuple(self.queue),
            active_todo=next(
                (t.active_form for t in self.todos if t.status == "in_progress"), None
            ),
            todo_completed=sum(t.status == "completed" for t in self.todos),
            todo_total=len(self.todos),
            tools_used=self.tools_used,
        )

    def publish(self) -> None:
        """Send ``tiller/state`` if anything changed since the last one."""
        state = self.state()
        if state != self._last_state:
            self._last_state = state
            self.store.update(
                self.id, model=self.model, mode=self.mode, thinking=self.thinking, todos=self.todos
            )
            self.sink.state(state)

    # --- requests -----------------------------------------------------------------------------

    async def prompt(self, text: str) -> PromptResult:
        if text.lstrip().startswith("/"):
            return await self.apply_command(
                interpret(text, self, max_tokens=self.config.max_tokens)
            )
        if self.busy and text.strip().lower() in STOP_WORDS:
            self.interrupt()
            return Handled("Interrupted the running turn.")
        if self.busy:
            self.queue.append(text)
            self.emit(Notice(f"Queued: {text[:80]}"))
            self.publish()
            return Queued(len(self.queue))
        return Started(self._start(text))

    async def apply_command(self, result: CommandResult) -> PromptResult:
        match result:
            case Reply(message=message):
                return Handled(message)
            case ChangeMode(mode=mode):
                self.set_mode(mode)
                return Handled(f"Mode: {self.mode}")
            case ChangeModel(model=model):
                self.set_model(model)
                return Handled(f"Model: {self.model} (from the next turn)")
            case ChangeThinking(thinking=thinking):
                self.set_thinking(thinking)
                state = f"on, budget {thinking.budget_tokens} tokens" if thinking.enabled else "off"
                return Handled(f"Thinking: {state}")
            case ClearQueue():
                return Handled(f"Cleared {self.clear_queue()} queued prompt(s).")
            case NewSession():
                return SwitchTo(self.fresh(), "Started a new session.")
            case ListSessions():
                return Handled(format_sessions(self.store.recent(20), self.id))
            case ResumeSession(session_id=session_id):
                if self.busy:
                    return Handled("A turn is running: interrupt it (or wait) before /resume.")
                try:
                    resumed = self.resumed(session_id)
                except InvalidParams as err:
                    return Handled(err.message)
                return SwitchTo(resumed, f"Resumed session {session_id}.")
            case ForkSession(turn_id=turn_id):
                if self.busy:
                    return Handled("A turn is running: interrupt it (or wait) before /fork.")
                try:
                    child = self.forked(None, turn_id)
                except InvalidParams as err:
                    return Handled(err.message)
                return SwitchTo(child, f"Forked into session {child.id}.")
            case Compact():
                if self.busy:
                    return Handled("A turn is running: /compact once it has ended.")
                shorter = await self.compact()
                return Handled("Compacted the conversation." if shorter else "Nothing to compact.")

    def fresh(self) -> Session:
        """A new, empty session with the same settings, mode, model and thinking."""
        return self._sibling(new_id("ses"), self.mode, self.model, self.thinking, (), ())

    def resumed(self, session_id: str) -> Session:
        """The stored session ``session_id``, its history repaired as after an interrupt."""
        loaded = self.store.load(session_id)
        if loaded is None:
            raise InvalidParams(f"unknown sessionId {session_id!r}")
        row = loaded.row
        repaired = history.repair(loaded.messages)
        if repaired != loaded.messages:
            self.store.replace_messages(row.id, repaired, [None] * len(repaired))
        return self._sibling(row.id, row.mode, row.model, row.thinking, row.todos, repaired)

    def forked(self, source_id: str | None, turn_id: str | None) -> Session:
        """A child of ``source_id`` (default: this session) holding its history up to the end
        of ``turn_id`` (default: all of it)."""
        source = source_id or self.id
        loaded = self.store.load(source)
        if loaded is None:
            raise InvalidParams(f"nothing to fork: session {source!r} has no stored turns")
        cut = len(loaded.messages)
        if turn_id is not None:
            ends = [i for i, t in enumerate(loaded.turn_ids) if t == turn_id]
            if not ends:
                raise InvalidParams(f"unknown turnId {turn_id!r} in session {source!r}")
            cut = ends[-1] + 1
        row = loaded.row
        child = self._sibling(
            new_id("ses"), row.mode, row.model, row.thinking, row.todos,
            history.repair(loaded.messages[:cut]),
        )  # fmt: skip
        self.store.create(
            replace(row, id=child.id, title=f"Fork of {row.title}", parent_id=source, turns=0,
                    created_at=time.time(), updated_at=time.time())
        )  # fmt: skip
        self.store.replace_messages(
            child.id, child.messages, loaded.turn_ids[: len(child.messages)]
        )
        self.store.copy_entries(source, child.id, turn_id)
        return child

    def _sibling(
        self,
        session_id: str,
        mode: Mode,
        model: str,
        thinking: Thinking,
        todos: tuple[Todo, ...],
        messages: tuple[Message, ...],
    ) -> Session:
        return Session(
            config=self.config,
            workspace=self.workspace,
            provider=self.provider,
            approver=self.approver,
            sink=self.sink,
            tools=self.tools,
            store=self.store,
            id=session_id,
            mode=mode,
            model=model,
            thinking=thinking,
            todos=todos,
            messages=messages,
        )

    @property
    def queued(self) -> tuple[str, ...]:
        return tuple(self.queue)

    def interrupt(self) -> str | None:
        """Cancel the running turn; the turn task repairs history and ends it as interrupted."""
        if not self.busy or self._task is None:
            return None
        self._task.cancel()
        return self.turn_id

    def cycle_mode(self) -> Mode:
        self.set_mode(next_mode(self.mode))
        return self.mode

    def set_model(self, model: str) -> str:
        if model != self.model:
            self.model = model
            if self.busy:
                self.emit(Notice(f"Model switches to {model} from the next turn"))
            self.publish()
        return self.model

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
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    # --- turns --------------------------------------------------------------------------------

    def _start(self, text: str) -> str:
        turn_id = new_id("turn")
        self.turn_id = turn_id
        self.tools_used = 0
        setup = TurnSetup(
            turn_id=turn_id,
            model=self.model,
            thinking=self.thinking,
            max_tokens=self.config.max_tokens,
            system=system_prompt(self.workspace),
            tools=tools_by_name(self.tools),
            context=ToolContext(self.workspace, self.reads, self),
            provider=self.provider,
            approver=self.approver,
            tool_budget=self.config.tool_budget,
            session_id=self.id,
            stop_hook=self.config.stop_hook,
        )
        turn = Turn(self, setup)
        now = time.time()
        self.store.create(
            SessionRow(
                self.id, str(self.workspace), text.strip()[:80], None, now, now,
                self.model, self.mode, self.thinking, self.todos, 0,
            )
        )  # fmt: skip
        self.emit(TurnStarted(text))
        self.append("user", [history.text_block(text)])
        self._task = asyncio.create_task(self._run(turn), name=f"tiller-{turn_id}")
        self.publish()
        return turn_id

    async def _run(self, turn: Turn) -> None:
        outcome: TurnOutcome
        try:
            outcome = await turn.run()
        except asyncio.CancelledError:  # interrupted before the turn got going
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            outcome = Interrupted()
        except Exception as err:  # a bug in the loop must still end the turn cleanly
            log.exception("turn %s crashed", turn.setup.turn_id)
            self.messages = history.repair(self.messages)
            outcome = Failed("internal", f"Internal error: {type(err).__name__}: {err}", False)
        self._finish(outcome, tuple(turn.trail))

    def _finish(self, outcome: TurnOutcome, trail: tuple[TrailItem, ...]) -> None:
        """The one place a turn ends: idle state first, then ``turnEnded``, then the queue."""
        self._task = None
        self.store.count_turn(self.id)
        self.publish()
        self.emit(TurnEnded(outcome, trail))
        if self.queue:
            self._start(self.queue.popleft())
