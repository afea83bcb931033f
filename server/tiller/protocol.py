"""The contract in code: method names, enumerations and the wire shapes of PROTOCOL.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from .jsontypes import JSON

Mode = Literal["default", "acceptEdits", "plan"]
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
ToolStatus = Literal["ok", "error", "denied", "interrupted", "skipped"]
TodoStatus = Literal["pending", "in_progress", "completed"]
TODO_STATUSES: Final[tuple[TodoStatus, ...]] = get_args(TodoStatus)
OutcomeName = Literal["completed", "interrupted", "stopped", "failed", "refused"]
ErrorKind = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "server",
    "connection",
    "timeout",
    "context_too_long",
    "invalid_request",
    "output_limit",
    "internal",
]

# Client -> server requests
PROMPT: Final = "tiller/prompt"
INTERRUPT: Final = "tiller/interrupt"
CYCLE_MODE: Final = "tiller/cycleMode"
SET_MODE: Final = "tiller/setMode"
SET_MODEL: Final = "tiller/setModel"
LIST_MODELS: Final = "tiller/listModels"
SET_THINKING: Final = "tiller/setThinking"
GET_STATE: Final = "tiller/getState"
GET_TODOS: Final = "tiller/getTodos"
CLEAR_QUEUE: Final = "tiller/clearQueue"
SESSION_LIST: Final = "tiller/session/list"
SESSION_NEW: Final = "tiller/session/new"
SESSION_RESUME: Final = "tiller/session/resume"
SESSION_FORK: Final = "tiller/session/fork"
SESSION_SLICE: Final = "tiller/session/slice"
SESSION_TRANSCRIPT: Final = "tiller/session/transcript"
CHECKPOINTS: Final = "tiller/checkpoints"
REWIND: Final = "tiller/rewind"
UNDO_REWIND: Final = "tiller/undoRewind"

# Server -> client notifications
STATE: Final = "tiller/state"
TODOS: Final = "tiller/todos"
EVENT: Final = "tiller/event"

# Server -> client requests
APPROVE_PLAN: Final = "tiller/approvePlan"
CONFIRM_TOOL: Final = "tiller/confirmTool"
CHECKPOINT: Final = "tiller/checkpoint"

CUSTOM_METHODS: Final = frozenset(
    {
        PROMPT, INTERRUPT, CYCLE_MODE, SET_MODE, SET_MODEL, LIST_MODELS, SET_THINKING,
        GET_STATE, GET_TODOS, CLEAR_QUEUE, SESSION_LIST, SESSION_NEW, SESSION_RESUME,
        SESSION_FORK, SESSION_SLICE, SESSION_TRANSCRIPT, CHECKPOINTS, REWIND, UNDO_REWIND,
        STATE, TODOS, EVENT, APPROVE_PLAN, CONFIRM_TOOL,
        CHECKPOINT,
    }
)  # fmt: skip


MODE_WORDS: Final[dict[Mode, str]] = {
    "default": "ask before edits",
    "acceptEdits": "accept edits",
    "plan": "plan",
}
"""How a mode reads to a person (notices); the ids stay what clients send."""


def next_mode(mode: Mode) -> Mode:
    """The cycle order: default -> acceptEdits -> plan -> default."""
    return MODES[(MODES.index(mode) + 1) % len(MODES)]


Effort = Literal["low", "medium", "high", "max"]
EFFORTS: Final[tuple[Effort, ...]] = get_args(Effort)


@dataclass(frozen=True)
class Thinking:
    """What the user asked for; how it is said to the API depends on the model (models.py).

    ``effort`` and ``budget_tokens`` are both optional: ``None`` means the model's default.
    (``budget_tokens`` comes second so a positional ``Thinking(on, budget)`` keeps working.)
    """

    enabled: bool = False
    budget_tokens: int | None = None
    effort: Effort | None = None

    def to_wire(self) -> JSON:
        return {"enabled": self.enabled, "effort": self.effort, "budgetTokens": self.budget_tokens}

    @staticmethod
    def from_wire(data: Any) -> Thinking:
        """A stored or sent ``{enabled, effort?, budgetTokens?}`` (v1 rows had no effort)."""
        if not isinstance(data, dict):
            return Thinking()
        budget, effort = data.get("budgetTokens"), data.get("effort")
        return Thinking(
            bool(data.get("enabled")),
            budget if isinstance(budget, int) and not isinstance(budget, bool) else None,
            next((e for e in EFFORTS if e == effort), None),
        )

    def describe(self) -> str:
        """``off``, ``on``, ``on, effort high`` or ``on, budget 2048 tokens``."""
        if not self.enabled:
            return "off"
        if self.effort is not None:
            return f"on, effort {self.effort}"
        if self.budget_tokens is not None:
            return f"on, budget {self.budget_tokens} tokens"
        return "on"


@dataclass(frozen=True)
class Todo:
    content: str
    status: TodoStatus
    active_form: str

    def to_wire(self) -> JSON:
        return {"content": self.content, "status": self.status, "activeForm": self.active_form}


@dataclass(frozen=True)
class TrailItem:
    name: str
    status: ToolStatus

    def to_wire(self) -> JSON:
        return {"name": self.name, "status": self.status}


@dataclass(frozen=True)
class State:
    session_id: str
    mode: Mode
    model: str
    thinking: Thinking
    busy: bool
    turn_id: str | None
    queue: tuple[str, ...]
    active_todo: str | None
    todo_completed: int
    todo_total: int
    tools_used: int
    sandbox: Literal["bwrap", "none"] = "none"
    context: JSON | None = None  # {usedTokens, windowTokens} after the last step
    session_cost_usd: float | None = None

    def to_wire(self) -> JSON:
        return {
            "sessionId": self.session_id,
            "mode": self.mode,
            "model": self.model,
            "thinking": self.thinking.to_wire(),
            "busy": self.busy,
            "turnId": self.turn_id,
            "queue": list(self.queue),
            "activeTodo": self.active_todo,
            "todoCounts": {"completed": self.todo_completed, "total": self.todo_total},
            "toolsUsed": self.tools_used,
            "sandbox": self.sandbox,
            "context": self.context,
            "sessionCostUsd": (
                None if self.session_cost_usd is None else round(self.session_cost_usd, 6)
            ),
        }
