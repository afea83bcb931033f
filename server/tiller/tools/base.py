"""What every tool is: a name, a JSON schema, a permission kind and an async run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ..errors import ToolInputError
from ..protocol import Todo

# How the permission table treats a tool (see permissions.py).
ToolKind = Literal["read", "edit", "bash", "state", "plan_exit"]

JSON = dict[str, Any]

OUTPUT_CAP = 30_000  # characters of tool output handed back to the model


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call. Failures are results, never exceptions."""

    output: str
    is_error: bool = False


@dataclass(frozen=True)
class FileStamp:
    """What the edit check compares: the file as it was when last read or written."""

    mtime_ns: int
    size: int

    @staticmethod
    def of(path: Path) -> FileStamp:
        st = path.stat()
        return FileStamp(st.st_mtime_ns, st.st_size)


@dataclass
class ReadLedger:
    """Files read (or written) in this session, with their stamp at that moment.

    Mutable on purpose: it is the session's memory of what the model has seen.
    """

    stamps: dict[Path, FileStamp] = field(default_factory=dict)

    def record(self, path: Path) -> None:
        self.stamps[path] = FileStamp.of(path)

    def check_fresh(self, path: Path, shown: str) -> None:
        """Raise ToolInputError unless ``path`` was read and is unchanged since."""
        stamp = self.stamps.get(path)
        if stamp is None:
            raise ToolInputError(
                f"{shown} has not been read in this session: call read_file on it first, "
                "then edit it."
            )
        if FileStamp.of(path) != stamp:
            raise ToolInputError(
                f"{shown} changed on disk since it was last read: read it again before editing."
            )


class SessionControls(Protocol):
    """What the state tools (todo_write, enter_plan_mode) may change in their session."""

    def enter_plan_mode(self) -> None: ...

    def replace_todos(self, todos: tuple[Todo, ...]) -> None: ...


class _Detached:
    """Controls of a tool run outside any session (unit tests): changes go nowhere."""

    def enter_plan_mode(self) -> None:
        return None

    def replace_todos(self, todos: tuple[Todo, ...]) -> None:
        return None


@dataclass(frozen=True)
class ToolContext:
    """What a tool may touch: the workspace root, the session's read ledger and its state."""

    workspace: Path
    reads: ReadLedger
    controls: SessionControls = field(default_factory=_Detached)

    def resolve(self, raw: str) -> Path:
        """A path inside the workspace (symlinks resolved), or ToolInputError."""
        if not raw or "\x00" in raw:
            raise ToolInputError("path must be a non-empty string")
        root = self.workspace.resolve()
        candidate = Path(raw)
        if not candidate.is_absolute():
            candidate = root / candidate
        resolved = Path(os.path.realpath(candidate))
        if resolved != root and root not in resolved.parents:
            raise ToolInputError(
                f"path {raw!r} is outside the workspace {root}; use a path inside it"
            )
        return resolved

    def shown(self, path: Path) -> str:
        """A path as the model should see it: relative to the workspace root."""
        root = self.workspace.resolve()
        try:
            rel = path.relative_to(root)
        except ValueError:
            return str(path)
        return str(rel) if str(rel) != "." else "."


@dataclass(frozen=True)
class Preview:
    """What the user sees when asked to confirm a call (PROTOCOL ``preview``)."""

    kind: Literal["diff", "command", "text"]
    fields: Mapping[str, str]

    def to_wire(self) -> JSON:
        return {"kind": self.kind, **self.fields}


class Tool(Protocol):
    """A tool the model can call. ``run`` never raises for bad input: it returns an error."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> ToolKind: ...

    def spec(self) -> JSON:
        """The API tool definition: name, description, input_schema."""
        ...

    def is_read_only(self, tool_input: JSON) -> bool:
        """Whether this call may run concurrently with other read-only calls."""
        ...

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        """What to show the user when this call needs confirmation."""
        ...

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult: ...


def cap_output(text: str, limit: int = OUTPUT_CAP) -> str:
    """Cut ``text`` to ``limit`` characters with a visible marker saying how much was dropped."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    dropped = len(text) - head - tail
    return f"{text[:head]}\n… [truncated {dropped} characters] …\n{text[-tail:]}"


def require_str(tool_input: JSON, key: str, *, optional: bool = False) -> str | None:
    """Validate one string field of a tool input."""
    value = tool_input.get(key)
    if value is None:
        if optional:
            return None
        raise ToolInputError(f"missing required field {key!r} (string)")
    if not isinstance(value, str):
        raise ToolInputError(f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def require_int(tool_input: JSON, key: str) -> int | None:
    """Validate one optional non-negative integer field of a tool input."""
    value = tool_input.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ToolInputError(f"field {key!r} must be a non-negative integer")
    return value
