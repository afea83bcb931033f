"""Slash commands, run by the server so every client has the same ones.

``interpret`` is pure: it reads the session's state and returns a value saying what to do;
the session applies it (session.apply_command).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from .protocol import MODES, Mode, Thinking, Todo
from .store import SessionRow
from .tools.todo import render_board

HELP: Final = """Commands:
  /help                 this list
  /mode [name]          show or set the mode (default, acceptEdits, plan)
  /model [id]           show or set the model (from the next turn)
  /thinking [on|off|N]  show, switch, or set the thinking budget in tokens
  /todo                 show the todo board
  /plan                 enter plan mode
  /clear                start a new session
  /sessions             list sessions
  /resume <id>          resume a session
  /fork [turnId]        fork this session
  /compact              summarize older turns to free context
  /queue                show queued prompts
  /queue clear          drop queued prompts"""


class SessionView(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def model(self) -> str: ...
    @property
    def thinking(self) -> Thinking: ...
    @property
    def todos(self) -> tuple[Todo, ...]: ...
    @property
    def queued(self) -> Sequence[str]: ...
    @property
    def busy(self) -> bool: ...


@dataclass(frozen=True)
class Reply:
    message: str


@dataclass(frozen=True)
class ChangeMode:
    mode: Mode


@dataclass(frozen=True)
class ChangeModel:
    model: str


@dataclass(frozen=True)
class ChangeThinking:
    thinking: Thinking


@dataclass(frozen=True)
class ClearQueue:
    pass


@dataclass(frozen=True)
class NewSession:
    pass


@dataclass(frozen=True)
class Compact:
    pass


@dataclass(frozen=True)
class ListSessions:
    pass


@dataclass(frozen=True)
class ResumeSession:
    session_id: str


@dataclass(frozen=True)
class ForkSession:
    turn_id: str | None


CommandResult = (
    Reply
    | ChangeMode
    | ChangeModel
    | ChangeThinking
    | ClearQueue
    | NewSession
    | Compact
    | ListSessions
    | ResumeSession
    | ForkSession
)


def interpret(text: str, session: SessionView, *, max_tokens: int) -> CommandResult:
    name, _, arg = text.strip().partition(" ")
    arg = arg.strip()
    match name.lower():
        case "/help":
            return Reply(HELP)
        case "/mode" if not arg:
            return Reply(f"Mode: {session.mode}")
        case "/mode":
            mode = next((m for m in MODES if m.lower() == arg.lower()), None)
            if mode is None:
                return Reply(f"Unknown mode {arg!r}. Modes: {', '.join(MODES)}")
            return ChangeMode(mode)
        case "/plan":
            return ChangeMode("plan")
        case "/model" if not arg:
            return Reply(f"Model: {session.model}")
        case "/model":
            return ChangeModel(arg)
        case "/thinking":
            return _thinking(arg, session.thinking, max_tokens)
        case "/todo":
            return Reply(render_board(session.todos))
        case "/queue" if arg.lower() == "clear":
            return ClearQueue()
        case "/queue":
            queued = "\n".join(f"{n}. {p}" for n, p in enumerate(session.queued, 1))
            return Reply(queued or "The queue is empty.")
        case "/clear":
            if session.busy:
                return Reply("A turn is running: interrupt it (or wait) before /clear.")
            return NewSession()
        case "/compact":
            return Compact()
        case "/sessions":
            return ListSessions()
        case "/resume" if not arg:
            return Reply("Usage: /resume <sessionId> (see /sessions)")
        case "/resume":
            return ResumeSession(arg)
        case "/fork":
            return ForkSession(arg or None)
        case _:
            return Reply(f"Unknown command {name!r}.\n\n{HELP}")


def format_sessions(rows: Sequence[SessionRow], current_id: str) -> str:
    """``/sessions``: newest first, one line each."""
    lines = []
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.updated_at))
        mark = "  (current)" if row.id == current_id else ""
        lines.append(f"{row.id}  {when}  {row.turns} turn(s)  {row.title}{mark}")
    return "\n".join(lines) or "No stored sessions yet."


def _thinking(arg: str, current: Thinking, max_tokens: int) -> CommandResult:
    match arg.lower():
        case "":
            state = f"on, budget {current.budget_tokens} tokens" if current.enabled else "off"
            return Reply(f"Thinking: {state}")
        case "on":
            return ChangeThinking(Thinking(True, current.budget_tokens))
        case "off":
            return ChangeThinking(Thinking(False, current.budget_tokens))
        case number if number.isdigit():
            budget = int(number)
            if not 1024 <= budget < max_tokens:
                return Reply(f"The thinking budget must be from 1024 to {max_tokens - 1} tokens.")
            return ChangeThinking(Thinking(True, budget))
        case _:
            return Reply("Usage: /thinking [on|off|N]")
