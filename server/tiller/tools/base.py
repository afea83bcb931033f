"""What every tool is: a name, a JSON schema, a permission kind and an async run."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from tiller.errors import ToolInputError
from tiller.jsontypes import JSON
from tiller.model.usage import Usage
from tiller.protocol import Todo
from tiller.tools.live_output import LiveOutput
from tiller.workspace.confined import Root
from tiller.workspace.edit_history import EditTexts
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.sandbox import ShellPolicy

# How the permission table treats a tool (see core/permissions/modes.py).
ToolKind = Literal["read", "edit", "bash", "state", "plan_exit", "agent", "mcp"]


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

    ``diff`` and ``edit`` are set by write_file and edit_file when they changed a text file;
    ``usage`` by the task tool: what its subagent's model calls cost (added to the turn's and
    session's). ``blocks``, when set, is the tool_result's content as the model gets it
    (images, ``tool_reference`` blocks of MCP tools); ``output`` is then what clients show.
    """

    output: str
    is_error: bool = False
    diff: DiffStat | None = None
    edit: EditTexts | None = None
    usage: Usage | None = None
    blocks: tuple[JSON, ...] = ()


@dataclass(frozen=True)
class FileStamp:
    """What the edit check compares for a file on disk: its status when last read or written."""

    mtime_ns: int
    size: int

    @staticmethod
    def of(st: os.stat_result) -> FileStamp:
        """The stamp of a status taken from an open descriptor (``os.fstat``)."""
        return FileStamp(st.st_mtime_ns, st.st_size)


@dataclass(frozen=True)
class TextStamp:
    """What the edit check compares for a file the editor served: a digest of its text.

    An editor buffer has no mtime the agent can see, and unsaved changes never touch the disk.
    """

    sha256: str

    @staticmethod
    def of(text: str) -> TextStamp:
        return TextStamp(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())


Stamp = FileStamp | TextStamp


@dataclass
class ReadLedger:
    """Files read (or written) in this session, with their stamps at that moment.

    A read through the editor records both the disk's stamp and the text's digest, so an edit
    is checked against whichever of the two the edit itself sees. Mutable on purpose: it is the
    session's memory of what the model has seen.
    """

    stamps: dict[Path, tuple[Stamp, ...]] = field(default_factory=dict)

    def record(self, path: Path, *stamps: Stamp) -> None:
        self.stamps[path] = stamps

    def check_fresh(self, path: Path, shown: str, current: Stamp) -> None:
        """Raise ToolInputError unless ``path`` was read and is ``current`` still."""
        seen = self.stamps.get(path)
        if seen is None:
            raise ToolInputError(
                f"{shown} has not been read in this session: call read_file on it first, "
                "then edit it."
            )
        if current not in seen:
            where = "in the editor" if isinstance(current, TextStamp) else "on disk"
            raise ToolInputError(
                f"{shown} changed {where} since it was last read: read it again before editing."
            )


class EditorFiles(Protocol):
    """Files as the user's editor holds them (unsaved buffers included), when it offers that.

    The file tools confine a path exactly as for the disk, then hand it here, absolute.
    ``read_text`` answers None and ``write_text`` False when the editor does not serve the
    file: the tools then use the workspace on disk. Set by whoever builds the session (the
    ACP face, from the client's ``fs`` capabilities); the core knows nothing more of it.
    """

    async def read_text(self, path: Path) -> str | None: ...

    async def write_text(self, path: Path, text: str) -> bool: ...


@dataclass(frozen=True)
class CommandRun:
    """How a command ended: its kept output, exit code (negative: signal), what we stopped."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    stopped: int = 0  # processes the command left running when it ended, stopped since


class EditorTerminal(Protocol):
    """Commands run in the user's editor's terminal (it shows them), when it offers that.

    Only for commands the user approved that Tiller's settings would run unconfined: a
    command that runs without asking stays in Tiller's sandbox. ``run`` answers None when
    the terminal could not be started (Tiller's own runner then runs the command); once
    started, it answers how the command ended, and on cancellation stops it and re-raises.
    ``env`` is the environment Tiller's runner would use (secrets removed).
    """

    async def run(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str],
        time_limit: float,
        output_cap: int,
        live: LiveOutput | None,
    ) -> CommandRun | None: ...


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
    """What a tool may touch: the workspace roots, the session's read ledger and its state."""

    roots: WorkspaceRoots
    reads: ReadLedger
    controls: SessionControls = field(default_factory=_Detached)
    # How commands run (sandbox backend, scrubbed env): fixed at server start.
    shell: ShellPolicy = field(default_factory=ShellPolicy)
    # Per call (set with dataclasses.replace): the call runs without the user's confirmation,
    # so it must be confined; and where a running command's output goes as it arrives.
    sandboxed: bool = False
    # Per call: the call runs without the user's yes (read-only, or allowed by a permission
    # rule): git run by a command gets ``tool_env.unasked_env``'s overrides.
    unasked: bool = False
    live: LiveOutput | None = None
    # Where the file tools read and write when set (an editor's buffers), else the disk.
    editor: EditorFiles | None = None
    # Where approved, unconfined commands run when set (an editor's terminal), else here.
    terminal: EditorTerminal | None = None
    # Per call: the tool_use id of the call being run (the task tool names its child by it).
    call_id: str | None = None

    @property
    def workspace(self) -> Path:
        """The primary root: where commands run and relative paths resolve."""
        return self.roots.primary

    def root_for(self, raw: str) -> Root:
        """The root the file tools open ``raw`` beneath (by descriptor); ToolInputError when
        ``raw`` is outside every root or ambiguous (``workspace/roots.py``)."""
        return self.roots.root_for(raw)

    def roots_to_search(self, raw: str | None) -> tuple[tuple[Root, str], ...]:
        """Where a search of ``raw`` looks: the root it names, or (no path) every root."""
        if raw:
            return ((self.root_for(raw), raw),)
        return tuple((root, ".") for root in self.roots.every_root())


@dataclass(frozen=True)
class Preview:
    """What the user sees when asked to confirm a call (docs/protocol.md ``preview``)."""

    kind: Literal["diff", "command", "text"]
    fields: Mapping[str, str]
    extra: Mapping[str, object] = field(default_factory=dict)  # e.g. a command's segments

    def to_wire(self) -> JSON:
        return {"kind": self.kind, **self.fields, **self.extra}


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
    """A tool whose read-only test depends on the workspace (bash: paths must stay inside
    ``workspace``, the primary root, or one of the ``others`` roots)."""

    def is_read_only_in(
        self, tool_input: JSON, workspace: Path, others: Sequence[Path] = ()
    ) -> bool: ...


def read_only_call(tool: Tool, tool_input: JSON, ctx: ToolContext) -> bool:
    """Whether one call of ``tool`` only reads, judged in ``ctx``'s workspace (every root)."""
    if isinstance(tool, WorkspaceReadOnly):
        return tool.is_read_only_in(tool_input, ctx.workspace, ctx.roots.paths[1:])
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
