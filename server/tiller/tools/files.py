"""read_file, write_file, edit_file and list_files: the workspace's files, bounded and checked.

Every call does its file work in a worker thread (``asyncio.to_thread``). Files are opened by
directory descriptor beneath the workspace root (``confined.py``): no path, symlink or race
leads outside it, and files with other hard links are refused. Paths are shown relative to
the root. Writes to an existing file need a fresh read of it in this session (``ctx.reads``).

When the session has an editor (``ctx.editor``: the client's buffers, unsaved changes
included), read_file, write_file and edit_file read and write through it instead, after the
path was confined exactly as for the disk; the disk serves whatever the editor does not.

Inputs are valid against each tool's ``input_schema`` (``validation.py`` checks them before a
call runs); the tools check only what a schema cannot say.
"""

from __future__ import annotations

import asyncio
import difflib
import io
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tiller.errors import ToolInputError
from tiller.jsontypes import JSON
from tiller.tools.base import (
    OUTPUT_CAP,
    DiffStat,
    EditorFiles,
    FileStamp,
    Preview,
    TextStamp,
    ToolContext,
    ToolKind,
    ToolResult,
    cap_output,
)
from tiller.workspace.confined import (
    OPEN_DIR,
    OPEN_READ,
    OPEN_ROOT,
    MissingDirectory,
    Root,
    Spot,
    open_dir_at,
    open_regular,
    read_all,
    refuse_hard_links,
    replace_file,
    writable,
)
from tiller.workspace.edit_history import EditTexts
from tiller.workspace.path_globs import GlobError, IgnoreFile, PathGlob, file_glob

MAX_LINES = 2000  # lines per read_file call by default
MAX_LINE_CHARS = 2000  # longer lines are cut
READ_CHAR_CAP = OUTPUT_CAP - 500  # characters of numbered text per read_file call
WHOLE_READ_MAX_BYTES = 10 * 1024 * 1024  # bigger files need offset/limit
SNIFF_BYTES = 8192  # a NUL byte in these means binary
PREVIEW_MAX_BYTES = 1_000_000  # bigger files are not put whole into a confirmation preview
LIST_MAX_ENTRIES = 1000
SCAN_MAX_ENTRIES = 200_000  # directory entries one walk may visit
EDIT_MAX_BYTES = 50 * 1024 * 1024  # bigger files are not edited (nor diffed when replaced)
GITIGNORE_MAX_BYTES = 1_000_000
DIFF_MAX_LINES = 200_000  # beyond this, a diff stat counts the differing middle whole

PATH_PROPERTY: JSON = {
    "type": "string",
    "minLength": 1,
    "description": "File path, relative to the workspace root or absolute inside it.",
}


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


def _is_dir(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISDIR(st.st_mode)


# --- diff stats -----------------------------------------------------------------------------


def _lines_with_ends(text: str) -> list[str]:
    """Lines split on ``\\n`` only, each with its ending (as git counts them)."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def diff_stat(before: str | None, after: str) -> DiffStat:
    """Lines added and removed going from ``before`` (None: no file) to ``after``.

    Common leading and trailing lines are set aside first, so an edit costs what it changed.
    """
    old = _lines_with_ends(before or "")
    new = _lines_with_ends(after)
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_mid, new_mid = old[head : len(old) - tail], new[head : len(new) - tail]
    if not old_mid or not new_mid or len(old_mid) + len(new_mid) > DIFF_MAX_LINES:
        return DiffStat(added=len(new_mid), removed=len(old_mid))
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return DiffStat(added=added, removed=removed)


# --- the editor's buffers (ctx.editor) -----------------------------------------------------


@dataclass(frozen=True)
class EditorTarget:
    """A workspace file the editor may serve, confined as the disk tools confine it."""

    path: Path  # absolute, every link resolved: what the editor is given, the ledger's key
    shown: str
    disk: FileStamp | None  # the file on disk as checked; None: no file there yet


def _editor_target(
    ctx: ToolContext, raw: str, action: str, *, writing: bool = False
) -> EditorTarget | None:
    """Where the editor may read or write ``raw``, or None when the disk path takes the call.

    The disk path takes whatever it would refuse or treat specially (a path outside the
    workspace, a directory, a device or FIFO, a file with other hard links, a read-only file,
    a missing directory to create), so the answer is the very same as without an editor.
    The editor opens the path by name afterwards (see docs/acp.md on what that leaves open).
    """
    try:
        root = ctx.root_for(raw)
        with root.locate(raw) as spot:
            if spot.name == ".":
                return None
            path = root.absolute(spot.parts)
            if spot.lstat() is None:
                return EditorTarget(path, spot.shown, None)
            with open_regular(spot) as (_, st):
                refuse_hard_links(st, spot.shown, action)
                if writing and not writable(spot):
                    return None
                return EditorTarget(path, spot.shown, FileStamp.of(st))
    except (ToolInputError, OSError):
        return None


def _text_looks_binary(text: str) -> bool:
    return "\x00" in text[:SNIFF_BYTES]


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


def _too_big_to_read(shown: str, size: int, max_lines: int) -> ToolInputError:
    return ToolInputError(
        f"{shown} is {size / 1_048_576:.1f} MB, more than the "
        f"{WHOLE_READ_MAX_BYTES // 1_048_576} MB read_file reads at once: pass "
        f"offset and limit to read part of it (e.g. offset=1, "
        f"limit={max_lines}), or use grep to find the lines you need"
    )


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
                "change it. Directories are refused (use list_files), and so are binary files, "
                "devices, FIFOs and files with other hard links."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": PATH_PROPERTY,
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
        if ctx.editor is not None:
            served = await self._read_in_editor(tool_input, ctx, ctx.editor)
            if served is not None:
                return served
        return await asyncio.to_thread(guarded, "read_file", lambda: self._read(tool_input, ctx))

    async def _read_in_editor(
        self, tool_input: JSON, ctx: ToolContext, editor: EditorFiles
    ) -> ToolResult | None:
        """The editor's text of the file, numbered as from the disk; None: read the disk."""
        offset: int | None = tool_input.get("offset")
        limit: int | None = tool_input.get("limit")
        target = await asyncio.to_thread(_editor_target, ctx, tool_input["path"], "read_file")
        if target is None:
            return None
        disk = target.disk  # None: a buffer the editor has not saved yet, if it has one
        whole = offset is None and limit is None
        if whole and disk is not None and disk.size > WHOLE_READ_MAX_BYTES:
            return None  # the disk path says how to read it in parts
        text = await editor.read_text(target.path)
        if text is None:
            return None

        def numbered() -> ToolResult:
            data = text.encode("utf-8", "surrogatepass")
            if whole and len(data) > WHOLE_READ_MAX_BYTES:
                raise _too_big_to_read(target.shown, len(data), self.max_lines)
            with io.BufferedReader(io.BytesIO(data)) as f:
                output = self._numbered_lines(f, target.shown, offset or 1, limit, len(data))
            seen = TextStamp.of(text)
            ctx.reads.record(target.path, *((seen,) if disk is None else (disk, seen)))
            return ToolResult(output)

        return await asyncio.to_thread(guarded, "read_file", numbered)

    def _read(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        offset: int | None = tool_input.get("offset")
        limit: int | None = tool_input.get("limit")
        root = ctx.root_for(tool_input["path"])
        with root.locate(tool_input["path"]) as spot:
            if _is_dir(spot.lstat()):
                raise ToolInputError(
                    f"{spot.shown} is a directory: use list_files to see what it holds"
                )
            with open_regular(spot) as (fd, st):
                refuse_hard_links(st, spot.shown, "read_file")
                stamp = FileStamp.of(st)  # before reading: a change during the read shows later
                if offset is None and limit is None and stamp.size > WHOLE_READ_MAX_BYTES:
                    raise _too_big_to_read(spot.shown, stamp.size, self.max_lines)
                with open(fd, "rb", closefd=False) as f:
                    output = self._numbered_lines(f, spot.shown, offset or 1, limit, stamp.size)
        ctx.reads.record(root.absolute(spot.parts), stamp)
        return ToolResult(output)

    def _numbered_lines(
        self, f: io.BufferedReader[Any], shown: str, first: int, limit: int | None, size: int
    ) -> str:
        if looks_binary(f.read(SNIFF_BYTES)):
            raise ToolInputError(
                f"{shown} looks like a binary file (NUL byte in its first "
                f"{SNIFF_BYTES // 1024} KB); read_file only shows text"
            )
        f.seek(0)
        wanted = limit or self.max_lines
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
                return f"{shown} is empty (0 lines)"
            raise ToolInputError(f"{shown} has {seen} lines; offset {first} is past the end")
        last = first + len(out) - 1
        footer = ""
        if unshown or f.peek(1):
            total = ""
            if size <= WHOLE_READ_MAX_BYTES:
                total = f" of {last + unshown + _count_remaining_lines(f)}"
            why = " (output size limit reached)" if unshown else ""
            footer = (
                f"\n… [showing lines {first}-{last}{total}{why}; call read_file with "
                f"offset={last + 1} to read more]"
            )
        return "\n".join(out) + footer


# --- write_file / edit_file -----------------------------------------------------------------


@dataclass(frozen=True)
class Existing:
    """A file about to be replaced: its status and its bytes (None when too big to diff)."""

    st: os.stat_result
    data: bytes | None


def _existing(ctx: ToolContext, root: Root, spot: Spot, action: str) -> Existing | None:
    """The file at ``spot`` if there is one; raises unless ``action`` may replace it.

    It may when it is a regular file with no other hard link, writable, and read in this
    session and unchanged since.
    """
    first = spot.lstat()
    if first is None:
        return None
    if _is_dir(first):
        raise ToolInputError(f"{spot.shown} is a directory, not a file")
    with open_regular(spot) as (fd, st):
        refuse_hard_links(st, spot.shown, action)
        if not writable(spot):
            raise ToolInputError(f"{spot.shown} is read-only (its permissions forbid writing)")
        ctx.reads.check_fresh(root.absolute(spot.parts), spot.shown, FileStamp.of(st))
        data = read_all(fd, st.st_size + 1) if st.st_size <= EDIT_MAX_BYTES else None
    return Existing(st, data)


def _text_for_diff(data: bytes | None) -> str | None:
    if data is None or looks_binary(data[:SNIFF_BYTES]):
        return None
    return data.decode("utf-8", errors="surrogateescape")


def _encode(text: str, field_name: str) -> bytes:
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolInputError(
            f"{field_name} holds a character that is not valid Unicode at index {exc.start} "
            "(a lone surrogate); send plain UTF-8 text"
        ) from None


def _save(ctx: ToolContext, root: Root, spot: Spot, data: bytes, like: Existing | None) -> None:
    written = replace_file(spot, data, like.st if like is not None else None)
    ctx.reads.record(root.absolute(spot.parts), FileStamp.of(written))


def _preview_text(ctx: ToolContext, raw: object) -> tuple[str, str | None]:
    """The path shown and the file's text for a preview: "" if missing, None if not shown.

    Never raises: a path that cannot be opened (outside, a FIFO, a hard link) shows no text.
    """
    if not isinstance(raw, str):
        return "", ""
    try:
        with ctx.root_for(raw).locate(raw) as spot:
            if spot.lstat() is None:
                return spot.shown, ""
            with open_regular(spot) as (fd, st):
                refuse_hard_links(st, spot.shown, "the preview")
                if st.st_size > PREVIEW_MAX_BYTES:
                    return spot.shown, None
                data = read_all(fd, st.st_size + 1)
            if looks_binary(data[:SNIFF_BYTES]):
                return spot.shown, None
            return spot.shown, data.decode("utf-8", errors="replace")
    except (ToolInputError, OSError):
        return raw, ""


async def _preview_source(ctx: ToolContext, raw: object) -> tuple[str, str | None]:
    """Like ``_preview_text``, from the editor's buffer when the editor serves the file."""
    if ctx.editor is not None and isinstance(raw, str):
        target = await asyncio.to_thread(_editor_target, ctx, raw, "the preview")
        if target is not None and target.disk is not None:
            text = await ctx.editor.read_text(target.path)
            if text is not None:
                big = len(text) > PREVIEW_MAX_BYTES or _text_looks_binary(text)
                return target.shown, None if big else text
    return await asyncio.to_thread(_preview_text, ctx, raw)


def _bounded(text: str) -> str:
    if len(text) <= PREVIEW_MAX_BYTES:
        return text
    return text[:PREVIEW_MAX_BYTES] + f"\n… [preview cut: {len(text)} characters in all]"


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
                    "path": PATH_PROPERTY,
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
        shown, text = await _preview_source(ctx, tool_input.get("path"))
        content = tool_input.get("content")
        after = _bounded(content) if isinstance(content, str) else ""
        before = text if text is not None else "(binary or very large file, not shown)"
        return Preview("diff", {"path": shown, "before": before, "after": after})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        if ctx.editor is not None:
            served = await self._write_in_editor(tool_input, ctx, ctx.editor)
            if served is not None:
                return served
        return await asyncio.to_thread(guarded, "write_file", lambda: self._run(tool_input, ctx))

    async def _write_in_editor(
        self, tool_input: JSON, ctx: ToolContext, editor: EditorFiles
    ) -> ToolResult | None:
        """The content written through the editor; None: the disk path takes the call."""
        content: str = tool_input["content"]
        try:
            data = _encode(content, "content")
        except ToolInputError:
            return None  # the disk path says why
        target = await asyncio.to_thread(
            _editor_target, ctx, tool_input["path"], "write_file", writing=True
        )
        if target is None:
            return None
        before: str | None = None
        if target.disk is not None:
            if target.disk.size > EDIT_MAX_BYTES:
                return None
            before = await editor.read_text(target.path)
            if before is None:
                return None
            try:
                ctx.reads.check_fresh(target.path, target.shown, TextStamp.of(before))
            except ToolInputError as exc:
                return ToolResult(exc.message, is_error=True)
        if not await editor.write_text(target.path, content):
            return None
        ctx.reads.record(target.path, TextStamp.of(content))
        verb = "Overwrote" if before is not None else "Created"
        binary_before = before is not None and _text_looks_binary(before)
        return ToolResult(
            f"{verb} {target.shown}: {len(data)} bytes, {count_lines(content)} lines",
            diff=None if binary_before else diff_stat(before, content),
            edit=None if binary_before else EditTexts.of(target.shown, before, content),
        )

    def _run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        raw: str = tool_input["path"]
        content: str = tool_input["content"]
        data = _encode(content, "content")
        root = ctx.root_for(raw)
        try:
            with root.locate(raw) as spot:
                return self._write(ctx, root, spot, content, data)
        except MissingDirectory:  # a new file in a new directory: create the directories
            with root.locate(raw, make_parents=True) as spot:
                return self._write(ctx, root, spot, content, data)

    def _write(
        self, ctx: ToolContext, root: Root, spot: Spot, content: str, data: bytes
    ) -> ToolResult:
        if spot.name == ".":
            raise ToolInputError(f"{spot.shown} is a directory, not a file")
        existing = _existing(ctx, root, spot, "write_file")
        _save(ctx, root, spot, data, existing)
        verb = "Overwrote" if existing is not None else "Created"
        before = _text_for_diff(existing.data) if existing is not None else None
        binary_before = existing is not None and before is None
        return ToolResult(
            f"{verb} {spot.shown}: {len(data)} bytes, {count_lines(content)} lines",
            diff=None if binary_before else diff_stat(before, content),
            edit=None if binary_before else EditTexts.of(spot.shown, before, content),
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
                    "path": PATH_PROPERTY,
                    "old_string": {
                        "type": "string",
                        "minLength": 1,
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
        shown, text = await _preview_source(ctx, tool_input.get("path"))
        old, new = tool_input.get("old_string"), tool_input.get("new_string")
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
        if ctx.editor is not None:
            served = await self._edit_in_editor(tool_input, ctx, ctx.editor)
            if served is not None:
                return served
        return await asyncio.to_thread(guarded, "edit_file", lambda: self._run(tool_input, ctx))

    async def _edit_in_editor(
        self, tool_input: JSON, ctx: ToolContext, editor: EditorFiles
    ) -> ToolResult | None:
        """The edit made to the editor's text and written back; None: the disk takes it."""
        target = await asyncio.to_thread(
            _editor_target, ctx, tool_input["path"], "edit_file", writing=True
        )
        if target is None or (target.disk is not None and target.disk.size > EDIT_MAX_BYTES):
            return None
        text = await editor.read_text(target.path)
        if text is None:
            return None
        try:
            ctx.reads.check_fresh(target.path, target.shown, TextStamp.of(text))
            if _text_looks_binary(text):
                raise _binary_edit(target.shown)
            edited, count = apply_edit(
                text,
                tool_input["old_string"],
                tool_input["new_string"],
                replace_all=tool_input.get("replace_all", False),
                shown=target.shown,
            )
            _encode(edited, "new_string")
        except ToolInputError as exc:
            return ToolResult(exc.message, is_error=True)
        if not await editor.write_text(target.path, edited):
            return None
        ctx.reads.record(target.path, TextStamp.of(edited))
        return _edited(target.shown, text, edited, count, tool_input["new_string"])

    def _run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        old: str = tool_input["old_string"]
        new: str = tool_input["new_string"]
        replace_all: bool = tool_input.get("replace_all", False)
        root = ctx.root_for(tool_input["path"])
        with root.locate(tool_input["path"]) as spot:
            if spot.lstat() is None:
                raise ToolInputError(
                    f"{spot.shown} does not exist: use write_file to create a new file"
                )
            existing = _existing(ctx, root, spot, "edit_file")
            if existing is None or existing.data is None:
                raise ToolInputError(
                    f"{spot.shown} is larger than {EDIT_MAX_BYTES // 1_048_576} MB; "
                    "edit_file changes smaller files only"
                )
            if looks_binary(existing.data[:SNIFF_BYTES]):
                raise _binary_edit(spot.shown)
            # surrogateescape keeps bytes that are not UTF-8 exactly as they were.
            text = existing.data.decode("utf-8", errors="surrogateescape")
            edited, count = apply_edit(text, old, new, replace_all=replace_all, shown=spot.shown)
            _save(ctx, root, spot, _encode(edited, "new_string"), existing)
        return _edited(spot.shown, text, edited, count, new)


def _binary_edit(shown: str) -> ToolInputError:
    return ToolInputError(f"{shown} looks like a binary file; edit_file changes text only")


def _edited(shown: str, text: str, edited: str, count: int, new: str) -> ToolResult:
    """What edit_file answers: how many replacements, the lines around the first, the stat."""
    snippet = _snippet(edited, _first_difference(text, edited), len(new))
    noun = "occurrence" if count == 1 else "occurrences"
    return ToolResult(
        f"Edited {shown}: replaced {count} {noun}.\n{snippet}",
        diff=diff_stat(text, edited),
        edit=EditTexts.of(shown, text, edited),
    )


def _first_difference(a: str, b: str) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


# --- list_files -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GlobFilter:
    """A glob with gitignore rules: no ``/`` matches the name at any depth; ``**`` spans dirs
    (``path_globs.file_glob``: braces expanded, a leading ``./`` dropped)."""

    pattern: str
    glob: PathGlob

    @staticmethod
    def of(pattern: str) -> GlobFilter:
        try:
            return GlobFilter(pattern, file_glob(pattern))
        except GlobError as e:
            raise ToolInputError(e.message) from None

    def matches(self, relative: str) -> bool:
        return self.glob.matches(relative)


@dataclass(frozen=True)
class _IgnoreLevel:
    prefix: str  # workspace-relative directory with a trailing "/", "" at the root
    rules: IgnoreFile


def _load_gitignore(dir_fd: int, prefix: str) -> _IgnoreLevel | None:
    """The rules of the directory's .gitignore, if it is a plain regular file of its own."""
    try:
        fd = os.open(".gitignore", OPEN_READ, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 or st.st_size > GITIGNORE_MAX_BYTES:
            return None
        text = read_all(fd, GITIGNORE_MAX_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    return _IgnoreLevel(prefix, IgnoreFile.of(text))


def _ignored(levels: list[_IgnoreLevel], relative: str, is_dir: bool) -> bool:
    """gitignore precedence: the deepest .gitignore with an opinion decides."""
    for level in reversed(levels):
        if not relative.startswith(level.prefix):
            continue
        sub = relative[len(level.prefix) :] + ("/" if is_dir else "")
        include = level.rules.verdict(sub)
        if include is not None:
            return include
    return False


@dataclass(frozen=True)
class WalkEntry:
    """A file met by a walk; ``dir_fd`` is open only until the walk moves on."""

    relative: str  # from the workspace root
    below: str  # from the directory the walk started at
    dir_fd: int
    name: str


class WorkspaceWalk:
    """Files under a directory in sorted depth-first order, skipping ``.git`` and ignored paths.

    Ignore rules come from the workspace's .gitignore files (the root and every directory
    on the way). Walking inside a directory that is itself ignored shows its contents.
    Every directory is opened by descriptor without following links; symbolic links are
    listed but never followed. Stops after ``max_entries`` entries.
    """

    def __init__(
        self, root: Root, start_fd: int, start: tuple[str, ...], max_entries: int = SCAN_MAX_ENTRIES
    ) -> None:
        self.root = root
        self.start_fd = start_fd
        self.start = start
        self.max_entries = max_entries
        self.scanned = 0
        self.cut_short = False

    def __iter__(self) -> Iterator[WalkEntry]:
        yield from self._walk(self.start_fd, "/".join(self.start), self._levels_above())

    def _levels_above(self) -> list[_IgnoreLevel]:
        """The .gitignore rules from the root down to the start directory (included)."""
        levels: list[_IgnoreLevel] = []
        fd = os.open(self.root.path, OPEN_ROOT)
        try:
            for depth in range(len(self.start) + 1):
                prefix = "".join(f"{p}/" for p in self.start[:depth])
                if depth and _ignored(levels, prefix.rstrip("/"), is_dir=True):
                    return []  # explicitly asked for an ignored directory: show it all
                if depth:
                    child = os.open(self.start[depth - 1], OPEN_DIR, dir_fd=fd)
                    os.close(fd)
                    fd = child
                level = _load_gitignore(fd, prefix)
                if level is not None:
                    levels.append(level)
        except OSError:
            pass  # the tree changed meanwhile: fewer rules, never another tree
        finally:
            os.close(fd)
        return levels

    def _walk(self, dir_fd: int, relative: str, levels: list[_IgnoreLevel]) -> Iterator[WalkEntry]:
        try:
            with os.scandir(dir_fd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        prefix = f"{relative}/" if relative else ""
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
            path = prefix + entry.name
            if _ignored(levels, path, is_dir):
                continue
            if is_dir:
                try:
                    child = os.open(entry.name, OPEN_DIR, dir_fd=dir_fd)
                except OSError:
                    continue  # gone, or swapped for a link since the listing: skipped
                try:
                    level = _load_gitignore(child, path + "/")
                    yield from self._walk(
                        child, path, levels if level is None else [*levels, level]
                    )
                finally:
                    os.close(child)
            else:
                below = path[len(self.start_prefix) :]
                yield WalkEntry(path, below, dir_fd, entry.name)
            if self.cut_short:
                return

    @property
    def start_prefix(self) -> str:
        return "".join(f"{p}/" for p in self.start)


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
                        "minLength": 1,
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
        pattern: str | None = tool_input.get("pattern")
        glob = GlobFilter.of(pattern) if pattern is not None else None
        found = BoundedLines(self.max_entries)
        cut_short = False
        where: list[str] = []
        for root, raw in ctx.roots_to_search(tool_input.get("path")):
            shown, cut = self._list(root, raw, glob, found)
            where.append(shown)
            cut_short = cut_short or cut
            if found.full:
                break
        if not found.lines:
            what = f"matching {pattern!r} " if pattern is not None else ""
            return ToolResult(f"No files {what}under {' or '.join(where)}")
        notes: list[str] = []
        if found.full:
            notes.append(
                f"… [truncated: showing the first {len(found.lines)} paths; narrow the path "
                "or pattern]"
            )
        if cut_short:
            notes.append(
                f"… [stopped after scanning {self.max_scanned} entries; list a subdirectory]"
            )
        return ToolResult(cap_output("\n".join([*found.lines, *notes])))

    def _list(
        self, root: Root, raw: str, glob: GlobFilter | None, found: BoundedLines
    ) -> tuple[str, bool]:
        """Add the files under ``raw`` in ``root``; where that was, and whether cut short."""
        with root.locate(raw) as spot:
            st = spot.lstat()
            if st is None:
                raise ToolInputError(f"{spot.shown} does not exist")
            if not stat.S_ISDIR(st.st_mode):
                raise ToolInputError(f"{spot.shown} is a file, not a directory: use read_file")
            start_fd = open_dir_at(spot.dir_fd, spot.name, spot.shown)
            try:
                walk = WorkspaceWalk(root, start_fd, spot.parts, self.max_scanned)
                for entry in walk:
                    if glob is not None and not glob.matches(entry.below):
                        continue
                    if not found.add(root.show(entry.relative)):
                        break
            finally:
                os.close(start_fd)
        return spot.shown, walk.cut_short
