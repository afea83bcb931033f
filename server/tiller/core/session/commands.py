"""Slash commands, run by the server so every client has the same ones.

``interpret`` is pure: it reads the session's state and returns a value saying what to do;
the session applies it (session.apply_command).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from tiller.core.permissions.commands import PermissionsCommand, parse_command
from tiller.model.models import (
    MIN_BUDGET,
    ModelSpec,
    effective_max_tokens,
    resolve,
    thinking_note,
    thinking_problem,
)
from tiller.protocol import EFFORTS, MODE_WORDS, MODES, Mode, Thinking, Todo
from tiller.tools.todo import render_board
from tiller.workspace.store import CheckpointRow, SessionRow

HELP: Final = """Commands:
  /help                 this list
  /mode [name]          show or set the mode: ask before edits (default), accept edits
                        (acceptEdits), plan
  /model [id]           show or set the model (from the next turn)
  /thinking [on|off|low|medium|high|xhigh|max|N]
                        show or set thinking: an effort, or a budget of N tokens
  /todo                 show the todo board
  /plan                 enter plan mode
  /clear                start a new session
  /sessions             list sessions
  /resume <id>          resume a session
  /fork [turnId]        fork this session
  /compact              summarize older turns to free context
  /checkpoints          list the turns this session can rewind to
  /rewind [turnId]      put files and conversation back to before a turn (default: the last)
  /rewind --dry-run [turnId]
                        list the files a rewind would revert, delete or restore; change nothing
  /undo [undoId]        undo a rewind (default: the last one of this session)
  /slice SPEC           a child session from turn ranges: A:B, summarize:A:B[:'focus'],
                        compact:A:B, inject:'text' (percentages allowed: 80%:)
  /mcp                  the MCP servers: state, tools, where each is configured
  /queue                show queued prompts
  /queue clear          drop queued prompts
  /steer TEXT           send TEXT to the running turn at its next step (idle: a prompt)
  /permissions [ARGS]   list the permission rules; add allow|ask|deny RULE [--workspace|--user];
                        remove RULE (rules: Bash(git diff:*), Edit(docs/**), ...)
  /trust [yes|no]       show this folder's trust, or decide it: a trusted folder's settings
                        may run hooks, MCP and language servers and widen grants"""


@dataclass(frozen=True)
class CommandInfo:
    """A slash command as clients list it (built-in or custom)."""

    name: str  # without the slash
    description: str
    argument_hint: str | None = None
    source: str = "built-in"  # or "project: <path>", "user: <path>"

    def to_wire(self) -> dict[str, str]:
        wire = {"name": self.name, "description": self.description, "source": self.source}
        return wire | ({"argumentHint": self.argument_hint} if self.argument_hint else {})


def builtin_commands(help_text: str = HELP) -> list[CommandInfo]:
    """The built-in commands, read from the /help text (one name each, first form wins)."""
    found: dict[str, CommandInfo] = {}
    for match in re.finditer(r"^\s+/(\S+)(?: (\S+))?\s{2,}(\S.*)$", help_text, re.MULTILINE):
        name, argument, description = match.groups()
        found.setdefault(name, CommandInfo(name, description, argument))
    return list(found.values())


BUILTIN_NAMES: Final = frozenset(c.name for c in builtin_commands())


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


@dataclass(frozen=True)
class SliceSession:
    spec: str


@dataclass(frozen=True)
class ListCheckpoints:
    pass


@dataclass(frozen=True)
class ListMcpServers:
    pass


@dataclass(frozen=True)
class RewindTo:
    turn_id: str | None  # None: the last turn
    dry_run: bool = False  # list what it would do, change nothing


@dataclass(frozen=True)
class UndoRewind:
    undo_id: str | None  # None: the last rewind of the session


@dataclass(frozen=True)
class SteerTurn:
    text: str


@dataclass(frozen=True)
class Permissions:
    command: PermissionsCommand


@dataclass(frozen=True)
class DecideTrust:
    """``/trust``: ``trusted`` None shows the folder's trust; True or False records it."""

    trusted: bool | None


CommandResult = (
    Reply
    | Permissions
    | SteerTurn
    | ChangeMode
    | ChangeModel
    | ChangeThinking
    | ClearQueue
    | NewSession
    | Compact
    | ListSessions
    | ResumeSession
    | ForkSession
    | ListCheckpoints
    | ListMcpServers
    | RewindTo
    | UndoRewind
    | SliceSession
    | DecideTrust
)

DRY_RUN: Final = "--dry-run"
MODE_NAMES: Final = ", ".join(
    MODE_WORDS[m] + (f" ({m})" if m != MODE_WORDS[m] else "") for m in MODES
)  # every name listed is taken by /mode


def interpret(text: str, session: SessionView, *, max_tokens: int | None) -> CommandResult:
    """``max_tokens``: the ``maxTokens`` setting (None: the model's max output). Here the
    commands on the session's settings and its running turn; the others below."""
    name, _, arg = text.strip().partition(" ")
    arg = arg.strip()
    match name.lower():
        case "/help":
            return Reply(HELP)
        case "/mode" if not arg:
            return Reply(mode_text(session.mode))
        case "/mode":
            mode = mode_named(arg)
            if mode is None:
                return Reply(f"Unknown mode {arg!r}. Modes: {MODE_NAMES}")
            return ChangeMode(mode)
        case "/plan":
            return ChangeMode("plan")
        case "/model" if not arg:
            return Reply(f"Model: {describe_model(resolve(session.model))}")
        case "/model":
            return ChangeModel(arg)
        case "/thinking":
            return _thinking(arg, session.thinking, resolve(session.model), max_tokens)
        case "/todo":
            return Reply(board_text(session.todos, busy=session.busy))
        case "/queue" if arg.lower() == "clear":
            return ClearQueue()
        case "/queue":
            queued = "\n".join(f"{n}. {p}" for n, p in enumerate(session.queued, 1))
            return Reply(queued or "The queue is empty.")
        case "/steer" if not arg:
            return Reply("Usage: /steer TEXT (sent to the running turn at its next step)")
        case "/steer":
            return SteerTurn(arg)
        case _:
            return _session_command(name, arg)


def _session_command(name: str, arg: str) -> CommandResult:
    """The commands on sessions and their history: new, list, resume, fork, slice, compact,
    checkpoints, rewind and undo."""
    match name.lower():
        case "/clear":  # like session/new: a running turn is interrupted at once
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
        case "/checkpoints":
            return ListCheckpoints()
        case "/slice" if not arg:
            return Reply(
                "Usage: /slice SPEC, e.g. /slice 0:4, summarize:4:18:'the auth bug', "
                "compact:18:25, inject:'now run the tests', 80%:"
            )
        case "/slice":
            return SliceSession(arg)
        case "/rewind":
            return _rewind(arg)
        case "/undo":
            return UndoRewind(arg or None)
        case _:
            return _workspace_command(name, arg)


def _rewind(arg: str) -> CommandResult:
    """``/rewind [--dry-run] [turnId]``."""
    words = arg.split()
    dry_run = any(w.lower() == DRY_RUN for w in words)
    rest = [w for w in words if w.lower() != DRY_RUN]
    if len(rest) > 1 or any(w.startswith("-") for w in rest):
        return Reply("Usage: /rewind [--dry-run] [turnId] (turn ids: see /checkpoints)")
    return RewindTo(rest[0] if rest else None, dry_run)


def _workspace_command(name: str, arg: str) -> CommandResult:
    """The commands on what the workspace brings and allows: MCP servers, permission rules,
    trust; anything else is unknown."""
    match name.lower():
        case "/mcp":
            return ListMcpServers()
        case "/permissions":
            return Permissions(parse_command(arg))
        case "/trust" if arg.lower() in ("", "yes", "no"):
            return DecideTrust({"": None, "yes": True, "no": False}[arg.lower()])
        case "/trust":
            return Reply("Usage: /trust [yes|no] (no argument: show this folder's trust)")
        case _:
            return Reply(f"Unknown command {name!r}.\n\n{HELP}")


def mode_text(mode: Mode) -> str:
    """How every answer and notice names the mode: ``Mode: accept edits``."""
    return f"Mode: {MODE_WORDS[mode]}"


def _squeezed(name: str) -> str:
    return "".join(c for c in name.lower() if c not in " -_")


def mode_named(name: str) -> Mode | None:
    """A mode by its id or its words, any case, spaces/dashes/underscores ignored:
    ``accept edits``, ``Accept-Edits``, ``acceptEdits``, ``ask before edits``, ``default``."""
    wanted = _squeezed(name)
    return next((m for m in MODES if wanted in (_squeezed(m), _squeezed(MODE_WORDS[m]))), None)


def board_text(todos: Sequence[Todo], *, busy: bool) -> str:
    """``/todo``: the board; while no turn runs, an in-progress item is not shown as running."""
    board = render_board(todos)
    if not busy and any(t.status == "in_progress" for t in todos):
        board += "\n(no turn is running: [~] marks the item the last turn left unfinished)"
    return board


def format_sessions(rows: Sequence[SessionRow], current_id: str) -> str:
    """``/sessions``: newest first, one line each."""
    lines = []
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.updated_at))
        mark = "  (current)" if row.id == current_id else ""
        lines.append(f"{row.id}  {when}  {row.turns} turn(s)  {row.title}{mark}")
    return "\n".join(lines) or "No stored sessions yet."


def describe_model(spec: ModelSpec) -> str:
    """``claude-sonnet-5-5 (Claude Sonnet 5.5: 1,000,000-token window, 128,000 output, ...)``."""
    name = f"{spec.display_name}: " if spec.display_name else ""
    text = (
        f"{spec.id} ({name}{spec.context_window:,}-token window, {spec.max_output:,} output "
        f"tokens, {spec.thinking} thinking)"
    )
    return f"{text}\n{spec.notice}" if spec.notice else text


def _thinking(
    arg: str, current: Thinking, spec: ModelSpec, max_tokens: int | None
) -> CommandResult:
    """``/thinking [on|off|low|medium|high|xhigh|max|N]`` on the current model."""
    word = arg.lower()
    match word:
        case "":
            note = thinking_note(current, spec)
            return Reply(f"Thinking: {current.describe()}" + (f" ({note})" if note else ""))
        case "on":
            return ChangeThinking(Thinking(True, current.budget_tokens, current.effort))
        case "off":
            return ChangeThinking(Thinking(False, current.budget_tokens, current.effort))
        case number if number.isdigit():
            wanted = Thinking(True, int(number), None)
            problem = thinking_problem(wanted, spec, max_tokens)
            if problem is not None:
                top = effective_max_tokens(spec, max_tokens) - 1
                return Reply(f"The thinking budget must be from {MIN_BUDGET} to {top} tokens.")
            return ChangeThinking(wanted)
        case _:
            effort = next((e for e in EFFORTS if e == word), None)
            if effort is None:
                return Reply("Usage: /thinking [on|off|low|medium|high|xhigh|max|N]")
            return ChangeThinking(Thinking(True, None, effort))


def format_checkpoints(rows: Sequence[CheckpointRow]) -> str:
    """``/checkpoints``: oldest first, one line each."""
    if not rows:
        return "No checkpoints yet in this session."
    lines = []
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.created_at))
        lines.append(
            f"{row.turn_id}  {when}  the turn touched {row.changed_files} file(s)  "
            f"{row.prompt[:60]}"
        )
    return (
        "Checkpoints (/rewind --dry-run <turnId> lists what a rewind to before that turn would "
        "revert, delete or restore; /rewind <turnId> does it, /undo undoes it):\n"
        + "\n".join(lines)
    )
