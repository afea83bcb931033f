"""One session: idle or busy, the prompt queue, interrupt, mode/model/thinking, the history."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    NewSession,
    Reply,
    interpret,
)
from .config import Config
from .events import Event, Notice, TurnEnded, TurnStarted, event_fields
from .history import Message
from .loop import Turn, TurnSetup
from .outcomes import Failed, Interrupted, TurnOutcome
from .permissions import Grants
from .protocol import JSON, Mode, State, Thinking, Todo, TrailItem, next_mode
from .provider import Provider, ProviderError
from .system_prompt import system_prompt
from .tools.base import ReadLedger, Tool, ToolContext

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
class SwitchToNewSession:
    """The prompt (``/clear``) asks for a new session; the owner of sessions makes it."""

    message: str


PromptResult = Started | Queued | Handled | SwitchToNewSession


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
        self.messages = history.append(self.messages, role, blocks)

    def emit(self, event: Event) -> None:
        self._seq += 1
        self.sink.event(
            {"sessionId": self.id, "turnId": self.turn_id, "seq": self._seq, **event_fields(event)}
        )

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
                return SwitchToNewSession("Started a new session.")
            case Compact():
                if self.busy:
                    return Handled("A turn is running: /compact once it has ended.")
                shorter = await self.compact()
                return Handled("Compacted the conversation." if shorter else "Nothing to compact.")

    def fresh(self) -> Session:
        """A new, empty session with the same settings, mode, model and thinking."""
        return Session(
            config=self.config,
            workspace=self.workspace,
            provider=self.provider,
            approver=self.approver,
            sink=self.sink,
            tools=self.tools,
            mode=self.mode,
            model=self.model,
            thinking=self.thinking,
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
            tools={t.name: t for t in self.tools},
            context=ToolContext(self.workspace, self.reads, self),
            provider=self.provider,
            approver=self.approver,
            tool_budget=self.config.tool_budget,
            session_id=self.id,
            stop_hook=self.config.stop_hook,
        )
        turn = Turn(self, setup)
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
        self.publish()
        self.emit(TurnEnded(outcome, trail))
        if self.queue:
            self._start(self.queue.popleft())
