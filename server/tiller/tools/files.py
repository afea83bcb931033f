"""read_file, write_file, edit_file and list_files: the workspace's files, bounded and checked.

Every call does its file work in a worker thread (``asyncio.to_thread``); paths go through
``ctx.resolve`` (no escape from the workspace, symlinks included) and are shown relative to it.
Writes to an existing file need a fresh read of it in this session (``ctx.reads``).
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pathspec

from ..errors import ToolInputError
from .base import (
    JSON,
    OUTPUT_CAP,
    FileStamp,
    Preview,
    ToolContext,
    ToolKind,
    ToolResult,
    cap_output,
    require_int,
    require_str,
)

MAX_LINES = 2000  # lines per read_file call by default
MAX_LINE_CHARS = 2000  # longer lines are cut
READ_CHAR_CAP = OUTPUT_CAP - 500  # characters of numbered text per read_file call
WHOLE_READ_MAX_BYTES = 10 * 1024 * 1024  # bigger files need offset/limit
SNIFF_BYTES = 8192  # a NUL byte in these means binary
PREVIEW_MAX_BYTES = 1_000_000  # bigger files are not put whole into a confirmation preview
LIST_MAX_ENTRIES = 1000
SCAN_MAX_ENTRIES = 200_000  # directory entries one walk may visit


# --- shared helpers -----------------------------------------------------------------------


def guarded(action: str, work: Callable[[], ToolResult]) -> ToolResult:
    """Run ``work``; bad input and OS errors become error results, never exceptions."""
    try:
        return work()
    except ToolInputError as exc:
        return ToolResult(exc.message, is_error=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f" ({exc.filename})" if exc.filename else ""
        return ToolResult(f"{action} failed: {reason}{where}", is_error=True)


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head


def is_regular_file(path: Path) -> bool:
    """A regular file (after symlinks); FIFOs, sockets and devices could block a read."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def resolve_existing(ctx: ToolContext, raw: str | None) -> Path:
    path = ctx.resolve(raw or ".")
    if not path.exists():
        raise ToolInputError(f"{ctx.shown(path)} does not exist")
    return path


class BoundedLines:
    """Output lines collected up to a count and a character budget, whole lines only."""

    def __init__(self, max_lines: int, max_chars: int = OUTPUT_CAP - 500) -> None:
        self.max_lines = max_lines
        self.max_chars = max_chars
        self.lines: list[str] = []
        self.size = 0
        self.full = False

    def add(self, line: str) -> bool:
        """Keep ``line`` if it fits; False (and ``full``) once it does not."""
        if len(self.lines) >= self.max_lines or self.size + len(line) + 1 > self.max_chars:
            self.full = True
            return False
        self.lines.append(line)
        self.size += len(line) + 1
        return True


def split_lines(text: str) -> list[str]:
    """Lines as ``cat -n`` numbers them: split on ``\n`` only, ``\r`` endings dropped."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def count_lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _cut_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… [line cut at {limit} characters]"


def _numbered(number: int, line: str) -> str:
    return f"{number:>6}\t{line}"


# --- read_file ------------------------------------------------------------------------------


def _read_lines(f: BinaryIO, max_chars: int) -> Iterator[str]:
    """Lines without their terminator, each cut at ``max_chars``; memory stays bounded."""
    chunk = max_chars * 4 + 4  # enough bytes for max_chars characters of UTF-8
    while True:
        raw = f.readline(chunk)
        if not raw:
            return
        if not raw.endswith(b"\n"):
            rest = raw
            while rest and not rest.endswith(b"\n"):  # skip the rest of an overlong line
                rest = f.readline(1 << 16)
        line = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
        yield _cut_line(line, max_chars)


def _count_remaining_lines(f: BinaryIO) -> int:
    count, last = 0, b"\n"
    while block := f.read(1 << 20):
        count += block.count(b"\n")
        last = block[-1:]
    return count + (0 if last == b"\n" else 1)


@dataclass(frozen=True)
class ReadFile:
    name: str = field(default="read_file", init=False)
    kind: ToolKind = field(default="read", init=False)
    max_lines: int = MAX_LINES
    char_cap: int = READ_CHAR_CAP

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Read a text file of the workspace. Returns numbered lines like `cat -n` "
                f"(line number, tab, text); at most {self.max_lines} lines per call, lines "
                f"longer than {MAX_LINE_CHARS} characters are cut. Use offset/limit to page "
                "through long files. A file must be read before write_file or edit_file may "
                "change it. Directories are refused (use list_files), and so are binary files."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the workspace root or absolute "
                        "inside it.",
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "1-based number of the first line to show (default 1).",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": f"How many lines to show (default {self.max_lines}).",
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return True

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": f"read {tool_input.get('path', '')}"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(guarded, "read_file", lambda: self._read(tool_input, ctx))

    def _read(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        raw = require_str(tool_input, "path")
        offset = require_int(tool_input, "offset")
        limit = require_int(tool_input, "limit")
        if limit == 0:
            raise ToolInputError("limit must be at least 1")
        path = ctx.resolve(raw or "")
        shown = ctx.shown(path)
        if not path.exists():
            raise ToolInputError(f"{shown} does not exist")
        if path.is_dir():
            raise ToolInputError(f"{shown} is a directory: use list_files to see what it holds")
        if not is_regular_file(path):
            raise ToolInputError(f"{shown} is not a regular file (a device, FIFO or socket)")
        stamp = FileStamp.of(path)  # taken before reading: a change during the read shows later
        if offset is None and limit is None and stamp.size > WHOLE_READ_MAX_BYTES:
            raise ToolInputError(
                f"{shown} is {stamp.size / 1_048_576:.1f} MB, more than the "
                f"{WHOLE_READ_MAX_BYTES // 1_048_576} MB read_file reads at once: pass offset "
                f"and limit to read part of it (e.g. offset=1, limit={self.max_lines}), or use "
                "grep to find the lines you need"
            )
        first = max(offset or 1, 1)
        wanted = limit or self.max_lines
        with path.open("rb") as f:
            if looks_binary(f.read(SNIFF_BYTES)):
                raise ToolInputError(
                    f"{shown} looks like a binary file (NUL byte in its first "
                    f"{SNIFF_BYTES // 1024} KB); read_file only shows text"
                )
            f.seek(0)
            out: list[str] = []
            size = seen = unshown = 0
            for line in _read_lines(f, MAX_LINE_CHARS):
                seen += 1
                if seen < first:
                    continue
                entry = _numbered(seen, line)
                if out and size + len(entry) + 1 > self.char_cap:
                    unshown = 1  # read but not shown: the output is full
                    break
                out.append(entry)
                size += len(entry) + 1
                if len(out) >= wanted:
                    break
            if not out:
                if seen == 0:
                    ctx.reads.stamps[path] = stamp
                    return ToolResult(f"{shown} is empty (0 lines)")
                raise ToolInputError(f"{shown} has {seen} lines; offset {first} is past the end")
            last = first + len(out) - 1
            footer = ""
            if unshown or f.peek(1):
                total = ""
                if stamp.size <= WHOLE_READ_MAX_BYTES:
                    total = f" of {last + unshown + _count_remaining_lines(f)}"
                why = " (output size limit reached)" if unshown else ""
                footer = (
                    f"\n… [showing lines {first}-{last}{total}{why}; call read_file with "
                    f"offset={last + 1} to read more]"
                )
        ctx.reads.stamps[path] = stamp
        return ToolResult("\n".join(out) + footer)


# --- write_file / edit_file -----------------------------------------------------------------


def _check_writable(ctx: ToolContext, path: Path) -> bool:
    """Whether ``path`` exists; raises unless it may be overwritten (read and unchanged)."""
    if path.is_dir():
        raise ToolInputError(f"{ctx.shown(path)} is a directory, not a file")
    if not path.exists():
        return False
    if not is_regular_file(path):
        raise ToolInputError(f"{ctx.shown(path)} is not a regular file")
    ctx.reads.check_fresh(path, ctx.shown(path))
    return True


def _write(ctx: ToolContext, path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    ctx.reads.stamps[path] = FileStamp.of(path)


def _preview_text(path: Path) -> str | None:
    """The file's text for a preview: "" if missing, None if binary or too big to show."""
    if not path.exists():
        return ""
    if not is_regular_file(path) or path.stat().st_size > PREVIEW_MAX_BYTES:
        return None
    data = path.read_bytes()
    if looks_binary(data[:SNIFF_BYTES]):
        return None
    return data.decode("utf-8", errors="replace")


def _bounded(text: str) -> str:
    if len(text) <= PREVIEW_MAX_BYTES:
        return text
    return text[:PREVIEW_MAX_BYTES] + f"\n… [preview cut: {len(text)} characters in all]"


def _preview_path(ctx: ToolContext, tool_input: JSON) -> tuple[Path | None, str]:
    raw = tool_input.get("path")
    if not isinstance(raw, str):
        return None, ""
    try:
        path = ctx.resolve(raw)
    except ToolInputError:
        return None, raw
    return path, ctx.shown(path)


@dataclass(frozen=True)
class WriteFile:
    name: str = field(default="write_file", init=False)
    kind: ToolKind = field(default="edit", init=False)

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Create a file or replace its whole content. Parent directories are created. "
                "An existing file must have been read with read_file in this session and not "
                "changed on disk since; otherwise the call fails and asks you to read it again. "
                "Prefer edit_file for changing part of an existing file."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the workspace root or absolute "
                        "inside it.",
                    },
                    "content": {
                        "type": "string",
                        "description": "The complete new content of the file.",
                    },
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return False

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return await asyncio.to_thread(self._preview, tool_input, ctx)

    def _preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        path, shown = _preview_path(ctx, tool_input)
        content = tool_input.get("content")
        after = _bounded(content) if isinstance(content, str) else ""
        before = ""
        if path is not None:
            try:
                text = _preview_text(path)
            except OSError:
                text = ""
            before = text if text is not None else "(binary or very large file, not shown)"
        return Preview("diff", {"path": shown, "before": before, "after": after})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(guarded, "write_file", lambda: self._run(tool_input, ctx))

    def _run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        raw = require_str(tool_input, "path")
        content = require_str(tool_input, "content") or ""
        path = ctx.resolve(raw or "")
        existed = _check_writable(ctx, path)
        data = content.encode("utf-8")
        _write(ctx, path, data)
        verb = "Overwrote" if existed else "Created"
        return ToolResult(
            f"{verb} {ctx.shown(path)}: {len(data)} bytes, {count_lines(content)} lines"
        )


def apply_edit(text: str, old: str, new: str, *, replace_all: bool, shown: str) -> tuple[str, int]:
    """The edited text and the number of replacements, or ToolInputError saying why not.

    A file with CRLF line ends also accepts ``old`` written with plain ``\\n``.
    """
    if not old:
        raise ToolInputError(
            "old_string must not be empty: to create a file or replace all of it use write_file"
        )
    if old == new:
        raise ToolInputError("old_string and new_string are the same: nothing to change")
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolInputError(
            f"old_string was not found in {shown}: copy the exact text (whitespace and "
            "indentation included) from a fresh read_file of it"
        )
    if count > 1 and not replace_all:
        raise ToolInputError(
            f"old_string matches {count} times in {shown}: add surrounding lines to make it "
            "unique, or set replace_all to true to replace every match"
        )
    return text.replace(old, new, -1 if replace_all else 1), count if replace_all else 1


def _snippet(text: str, index: int, length: int, context: int = 3, max_lines: int = 30) -> str:
    """Numbered lines around ``text[index:index + length]``."""
    first = text.count("\n", 0, index) + 1
    last = first + text.count("\n", index, index + length)
    lines = split_lines(text)
    start, stop = max(first - context, 1), min(last + context, len(lines))
    stop = min(stop, start + max_lines - 1)
    return "\n".join(_numbered(n, _cut_line(lines[n - 1])) for n in range(start, stop + 1))


@dataclass(frozen=True)
class EditFile:
    name: str = field(default="edit_file", init=False)
    kind: ToolKind = field(default="edit", init=False)

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Replace exact text in a file. old_string must match the file exactly "
                "(whitespace and indentation included; do not include the line-number prefix "
                "read_file shows) and match only once, unless replace_all is true. The file "
                "must have been read with read_file in this session and not changed since."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the workspace root or absolute "
                        "inside it.",
                    },
                    "old_string": {
                        "type": "string",
                        "description": "The exact text to replace; include enough surrounding "
                        "lines to make it unique.",
                    },
                    "new_string": {
                        "type": "string",
                        "description": "The text to put in its place (must differ).",
                    },
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every match instead of exactly one (default "
                        "false).",
                    },
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return False

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return await asyncio.to_thread(self._preview, tool_input, ctx)

    def _preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        path, shown = _preview_path(ctx, tool_input)
        old, new = tool_input.get("old_string"), tool_input.get("new_string")
        try:
            text = _preview_text(path) if path is not None else ""
        except OSError:
            text = ""
        if text is None:  # too big or binary: show the replaced text itself
            before = old if isinstance(old, str) else ""
            after = new if isinstance(new, str) else ""
            return Preview("diff", {"path": shown, "before": before, "after": after})
        after = text
        if isinstance(old, str) and isinstance(new, str):
            try:
                after, _ = apply_edit(
                    text, old, new, replace_all=tool_input.get("replace_all") is True, shown=shown
                )
            except ToolInputError:
                after = text  # run() reports the problem
        return Preview("diff", {"path": shown, "before": text, "after": after})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(guarded, "edit_file", lambda: self._run(tool_input, ctx))

    def _run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        raw = require_str(tool_input, "path")
        old = require_str(tool_input, "old_string") or ""
        new = require_str(tool_input, "new_string") or ""
        replace_all = tool_input.get("replace_all", False)
        if not isinstance(replace_all, bool):
            raise ToolInputError("field 'replace_all' must be a boolean")
        path = ctx.resolve(raw or "")
        shown = ctx.shown(path)
        if not path.exists():
            raise ToolInputError(f"{shown} does not exist: use write_file to create a new file")
        _check_writable(ctx, path)
        data = path.read_bytes()
        if looks_binary(data[:SNIFF_BYTES]):
            raise ToolInputError(f"{shown} looks like a binary file; edit_file changes text only")
        # surrogateescape keeps bytes that are not UTF-8 exactly as they were.
        text = data.decode("utf-8", errors="surrogateescape")
        edited, count = apply_edit(text, old, new, replace_all=replace_all, shown=shown)
        _write(ctx, path, edited.encode("utf-8", errors="surrogateescape"))
        where = _first_difference(text, edited)
        snippet = _snippet(edited, where, len(new))
        noun = "occurrence" if count == 1 else "occurrences"
        return ToolResult(f"Edited {shown}: replaced {count} {noun}.\n{snippet}")


def _first_difference(a: str, b: str) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


# --- list_files -----------------------------------------------------------------------------


def expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` → ``*.ts``, ``*.tsx`` (innermost first, nesting allowed)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [p for alt in match.group(1).split(",") for p in expand_braces(head + alt + tail)]


@dataclass(frozen=True)
class GlobFilter:
    """A glob with gitignore rules: no ``/`` matches the name at any depth; ``**`` spans dirs."""

    pattern: str
    spec: pathspec.PathSpec[pathspec.Pattern]

    @staticmethod
    def of(pattern: str) -> GlobFilter:
        patterns = [p.removeprefix("./") for p in expand_braces(pattern.strip()) if p]
        if not patterns:
            raise ToolInputError("pattern must not be empty")
        return GlobFilter(pattern, pathspec.PathSpec.from_lines("gitignore", patterns))

    def matches(self, relative: str) -> bool:
        return self.spec.match_file(relative)


@dataclass(frozen=True)
class _IgnoreLevel:
    prefix: str  # workspace-relative directory with a trailing "/", "" at the root
    spec: pathspec.GitIgnoreSpec


def _load_gitignore(directory: Path, prefix: str) -> _IgnoreLevel | None:
    try:
        text = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return _IgnoreLevel(prefix, pathspec.GitIgnoreSpec.from_lines(text.splitlines()))


def _ignored(levels: list[_IgnoreLevel], relative: str, is_dir: bool) -> bool:
    """gitignore precedence: the deepest .gitignore with an opinion decides."""
    for level in reversed(levels):
        if not relative.startswith(level.prefix):
            continue
        sub = relative[len(level.prefix) :] + ("/" if is_dir else "")
        include = level.spec.check_file(sub).include
        if include is not None:
            return include
    return False


class WorkspaceWalk:
    """Files under ``start`` in sorted depth-first order, skipping ``.git`` and ignored paths.

    Ignore rules come from the workspace's .gitignore files (the root and every directory
    on the way). Walking inside a directory that is itself ignored shows its contents.
    Symbolic links are listed but never followed. Stops after ``max_entries`` entries.
    """

    def __init__(self, workspace: Path, start: Path, max_entries: int = SCAN_MAX_ENTRIES) -> None:
        self.root = workspace.resolve()
        self.start = start
        self.max_entries = max_entries
        self.scanned = 0
        self.cut_short = False

    def __iter__(self) -> Iterator[Path]:
        levels: list[_IgnoreLevel] = []
        directory = self.root
        relative_start = self.start.relative_to(self.root).parts
        for part in ("", *relative_start):
            directory = directory / part if part else directory
            prefix = self._prefix(directory)
            if part and _ignored(levels, prefix.rstrip("/"), is_dir=True):
                levels = []  # explicitly asked for an ignored directory: show it all
                break
            level = _load_gitignore(directory, prefix)
            if level is not None:
                levels.append(level)
        if not self.start.is_dir():
            return
        yield from self._walk(self.start, levels)

    def _prefix(self, directory: Path) -> str:
        rel = directory.relative_to(self.root).as_posix()
        return "" if rel == "." else rel + "/"

    def _walk(self, directory: Path, levels: list[_IgnoreLevel]) -> Iterator[Path]:
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        prefix = self._prefix(directory)
        for entry in entries:
            if self.scanned >= self.max_entries:
                self.cut_short = True
                return
            self.scanned += 1
            if entry.name == ".git":
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if _ignored(levels, prefix + entry.name, is_dir):
                continue
            path = Path(entry.path)
            if is_dir:
                child = _load_gitignore(path, prefix + entry.name + "/")
                yield from self._walk(path, levels if child is None else [*levels, child])
            else:
                yield path
            if self.cut_short:
                return


@dataclass(frozen=True)
class ListFiles:
    name: str = field(default="list_files", init=False)
    kind: ToolKind = field(default="read", init=False)
    max_entries: int = LIST_MAX_ENTRIES
    max_scanned: int = SCAN_MAX_ENTRIES

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "List the files under a directory of the workspace, recursively, sorted, "
                "skipping .git and whatever the workspace's .gitignore files ignore. An "
                "optional glob pattern filters them, matched against the path relative to that "
                "directory: a pattern without '/' matches the file name at any depth "
                "('*.py'), '**' spans directories ('src/**/test_*.py'), braces give "
                "alternatives ('*.{ts,tsx}'). "
                f"At most {self.max_entries} paths are returned; narrow path or pattern if cut."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Directory to list (default: the workspace root).",
                    },
                    "pattern": {
                        "type": "string",
                        "description": "Glob pattern to filter by, e.g. '**/*.py'.",
                    },
                },
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return True

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": f"list {tool_input.get('path') or '.'}"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(guarded, "list_files", lambda: self._run(tool_input, ctx))

    def _run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        raw = require_str(tool_input, "path", optional=True)
        pattern = require_str(tool_input, "pattern", optional=True)
        glob = GlobFilter.of(pattern) if pattern is not None else None
        start = resolve_existing(ctx, raw)
        shown_start = ctx.shown(start)
        if not start.is_dir():
            raise ToolInputError(f"{shown_start} is a file, not a directory: use read_file")
        walk = WorkspaceWalk(ctx.workspace, start, self.max_scanned)
        found = BoundedLines(self.max_entries)
        for path in walk:
            if glob is not None and not glob.matches(path.relative_to(start).as_posix()):
                continue
            if not found.add(ctx.shown(path)):
                break
        if not found.lines:
            what = f"matching {pattern!r} " if pattern is not None else ""
            return ToolResult(f"No files {what}under {shown_start}")
        notes: list[str] = []
        if found.full:
            notes.append(
                f"… [truncated: showing the first {len(found.lines)} paths; narrow the path "
                "or pattern]"
            )
        if walk.cut_short:
            notes.append(
                f"… [stopped after scanning {self.max_scanned} entries; list a subdirectory]"
            )
        return ToolResult(cap_output("\n".join([*found.lines, *notes])))
