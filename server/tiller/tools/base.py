"""What every tool is: a name, a JSON schema, a permission kind and an async run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import ToolInputError
from ..protocol import Todo
from .confined import Root
from .live_output import LiveOutput
from .sandbox import ShellPolicy

# How the permission table treats a tool (see permissions.py).
ToolKind = Literal["read", "edit", "bash", "state", "plan_exit"]

JSON = dict[str, Any]

OUTPUT_CAP = 30_000  # characters of tool output handed back to the model


@dataclass(frozen=True)
class DiffStat:
    """Lines a file change added and removed (PROTOCOL ``toolFinished.diff``)."""

    added: int
    removed: int

    def to_wire(self) -> JSON:
        return {"added": self.added, "removed": self.removed}


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call. Failures are results, never exceptions.

    ``diff`` is set by write_file and edit_file when they changed a file.
    """

    output: str
    is_error: bool = False
    diff: DiffStat | None = None


@dataclass(frozen=True)
class FileStamp:
    """What the edit check compares: the file as it was when last read or written."""

    mtime_ns: int
    size: int

    @staticmethod
    def of(st: os.stat_result) -> FileStamp:
        """The stamp of a status taken from an open descriptor (``os.fstat``)."""
        return FileStamp(st.st_mtime_ns, st.st_size)


@dataclass
class ReadLedger:
    """Files read (or written) in this session, with their stamp at that moment.

    Mutable on purpose: it is the session's memory of what the model has seen.
    """

    stamps: dict[Path, FileStamp] = field(default_factory=dict)

    def record(self, path: Path, stamp: FileStamp) -> None:
        self.stamps[path] = stamp

    def check_fresh(self, path: Path, shown: str, current: FileStamp) -> None:
        """Raise ToolInputError unless ``path`` was read and is ``current`` still."""
        stamp = self.stamps.get(path)
        if stamp is None:
            raise ToolInputError(
                f"{shown} has not been read in this session: call read_file on it first, "
                "then edit it."
            )
        if current != stamp:
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
    # How commands run (sandbox backend, scrubbed env): fixed at server start.
    shell: ShellPolicy = field(default_factory=ShellPolicy)
    # Per call (set with dataclasses.replace): the call runs without the user's confirmation,
    # so it must be confined; and where a running command's output goes as it arrives.
    sandboxed: bool = False
    live: LiveOutput | None = None

    @property
    def root(self) -> Root:
        """The workspace root the file tools open files beneath (by descriptor)."""
        return Root.of(self.workspace)

    def resolve(self, raw: str) -> Path:
        """A path inside the workspace (symlinks resolved), or ToolInputError.

        A check by path name, racy by nature: file tools open files with ``root.locate``.
        """
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


@runtime_checkable
class WorkspaceReadOnly(Protocol):
    """A tool whose read-only test depends on the workspace (bash: paths must stay inside)."""

    def is_read_only_in(self, tool_input: JSON, workspace: Path) -> bool: ...


def read_only_call(tool: Tool, tool_input: JSON, ctx: ToolContext) -> bool:
    """Whether one call of ``tool`` only reads, judged in ``ctx``'s workspace."""
    if isinstance(tool, WorkspaceReadOnly):
        return tool.is_read_only_in(tool_input, ctx.workspace)
    return tool.is_read_only(tool_input)


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
