"""The contract in code: method names, enumerations and the wire shapes of PROTOCOL.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

JSON = dict[str, Any]

Mode = Literal["default", "acceptEdits", "plan"]
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
ToolStatus = Literal["ok", "error", "denied", "interrupted", "skipped"]
TodoStatus = Literal["pending", "in_progress", "completed"]
TODO_STATUSES: Final[tuple[TodoStatus, ...]] = get_args(TodoStatus)
OutcomeName = Literal["completed", "interrupted", "stopped", "failed"]
ErrorKind = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "server",
    "connection",
    "timeout",
    "context_too_long",
    "invalid_request",
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
SESSION_TRANSCRIPT: Final = "tiller/session/transcript"

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
        SESSION_FORK, SESSION_TRANSCRIPT, STATE, TODOS, EVENT, APPROVE_PLAN, CONFIRM_TOOL,
        CHECKPOINT,
    }
)  # fmt: skip


def next_mode(mode: Mode) -> Mode:
    """The cycle order: default -> acceptEdits -> plan -> default."""
    return MODES[(MODES.index(mode) + 1) % len(MODES)]


@dataclass(frozen=True)
class Thinking:
    enabled: bool = False
    budget_tokens: int = 4096

    def to_wire(self) -> JSON:
        return {"enabled": self.enabled, "budgetTokens": self.budget_tokens}


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
        }
