"""grep: a regular-expression search over the workspace's text files, bounded."""

from __future__ import annotations

import asyncio
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ToolInputError
from .base import JSON, Preview, ToolContext, ToolKind, ToolResult, cap_output, require_str
from .files import (
    SNIFF_BYTES,
    WHOLE_READ_MAX_BYTES,
    BoundedLines,
    GlobFilter,
    WorkspaceWalk,
    guarded,
    looks_binary,
    resolve_existing,
    split_lines,
)

MAX_MATCHES = 500
MAX_MATCH_LINE_CHARS = 500
SCAN_MAX_FILES = 50_000


def _compile(pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise ToolInputError("pattern must not be empty")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolInputError(
            f"invalid regular expression {pattern!r}: {exc} (Python `re` syntax; escape "
            "special characters such as ( [ { . * + ? with a backslash to match them literally)"
        ) from exc


def _text_of(path: Path) -> str | None:
    """The file's text, or None when it is binary, too large or unreadable."""
    try:
        st = path.lstat()  # symbolic links are not followed; FIFOs and devices not read
        if not stat.S_ISREG(st.st_mode) or st.st_size > WHOLE_READ_MAX_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if looks_binary(data[:SNIFF_BYTES]):
        return None
    return data.decode("utf-8", errors="replace")


def _rel(path: Path, start: Path) -> str:
    return path.relative_to(start).as_posix()


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else f"{line[:limit]}… [cut]"


@dataclass(frozen=True)
class Grep:
    name: str = field(default="grep", init=False)
    kind: ToolKind = field(default="read", init=False)
    max_matches: int = MAX_MATCHES
    max_line_chars: int = MAX_MATCH_LINE_CHARS
    max_scanned: int = SCAN_MAX_FILES * 4

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": (
                "Search file contents with a regular expression (Python `re` syntax, "
                "case-sensitive unless the pattern starts with (?i)), line by line. Searches a "
                "file, or a directory recursively, skipping .git, gitignored paths and binary "
                "files. Output lines are `path:line:text`, paths relative to the workspace. "
                f"At most {self.max_matches} matches; narrow the pattern, path or glob if cut."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "Regular expression to search for, e.g. 'def \\w+_test'.",
                    },
                    "path": {
                        "type": "string",
                        "description": "File or directory to search (default: the workspace root).",
                    },
                    "glob": {
                        "type": "string",
                        "description": "Only search files matching this glob, relative to "
                        "path; without '/' it matches the file name at any depth "
                        "(e.g. '*.py', '*.{ts,tsx}', 'src/**/*.rs').",
                    },
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return True

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": f"grep {tool_input.get('pattern', '')!r}"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(guarded, "grep", lambda: self._run(tool_input, ctx))

    def _run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        pattern = require_str(tool_input, "pattern") or ""
        raw_path = require_str(tool_input, "path", optional=True)
        raw_glob = require_str(tool_input, "glob", optional=True)
        regex = _compile(pattern)
        glob = GlobFilter.of(raw_glob) if raw_glob is not None else None
        start = resolve_existing(ctx, raw_path)
        if start.is_file() and _text_of(start) is None:
            raise ToolInputError(
                f"{ctx.shown(start)} is binary or larger than "
                f"{WHOLE_READ_MAX_BYTES // 1_048_576} MB: grep searches text files only"
            )
        walk = WorkspaceWalk(ctx.workspace, start, self.max_scanned)
        single = start.is_file()
        files = [start] if single else walk
        hits = BoundedLines(self.max_matches)
        for path in files:
            if glob is not None and not single and not glob.matches(_rel(path, start)):
                continue
            text = _text_of(path)
            if text is None:
                continue
            shown = ctx.shown(path)
            for number, line in enumerate(split_lines(text), start=1):
                if regex.search(line) is None:
                    continue
                if not hits.add(f"{shown}:{number}:{_cut(line, self.max_line_chars)}"):
                    break
            if hits.full:
                break
        where = ctx.shown(start)
        if not hits.lines:
            within = f" in files matching {raw_glob!r}" if raw_glob is not None else ""
            return ToolResult(f"No matches for {pattern!r} under {where}{within}")
        notes: list[str] = []
        if hits.full:
            notes.append(
                f"… [truncated: showing the first {len(hits.lines)} matches; narrow the "
                "pattern, path or glob]"
            )
        if walk.cut_short:
            notes.append(
                f"… [stopped after scanning {self.max_scanned} entries; search a subdirectory]"
            )
        return ToolResult(cap_output("\n".join([*hits.lines, *notes])))
