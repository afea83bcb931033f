"""grep: a regular-expression search over the workspace's text files, bounded."""

from __future__ import annotations

import asyncio
import os
import re
import stat
from dataclasses import dataclass, field

from tiller.errors import ToolInputError
from tiller.jsontypes import JSON
from tiller.tools.base import Preview, ToolContext, ToolKind, ToolResult, cap_output
from tiller.tools.files import (
    SNIFF_BYTES,
    WHOLE_READ_MAX_BYTES,
    BoundedLines,
    GlobFilter,
    WalkEntry,
    WorkspaceWalk,
    guarded,
    looks_binary,
    split_lines,
)
from tiller.workspace.confined import (
    OPEN_READ,
    Root,
    Spot,
    open_dir_at,
    open_regular,
    read_all,
    refuse_hard_links,
)

MAX_MATCHES = 500
MAX_MATCH_LINE_CHARS = 500
SCAN_MAX_FILES = 50_000


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolInputError(
            f"invalid regular expression {pattern!r}: {exc} (Python `re` syntax; escape "
            "special characters such as ( [ { . * + ? with a backslash to match them literally)"
        ) from exc


def _decoded(data: bytes) -> str | None:
    if looks_binary(data[:SNIFF_BYTES]):
        return None
    return data.decode("utf-8", errors="replace")


@dataclass
class _Skipped:
    """Files a search left out because they have other hard links (maybe outside)."""

    hard_links: int = 0


def _text_at(entry: WalkEntry, skipped: _Skipped) -> str | None:
    """The file's text, or None when it is binary, too large, not regular or unreadable.

    Opened by descriptor without following links; FIFOs and devices are never opened.
    """
    try:
        st = os.stat(entry.name, dir_fd=entry.dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or st.st_size > WHOLE_READ_MAX_BYTES:
            return None
        fd = os.open(entry.name, OPEN_READ, dir_fd=entry.dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > WHOLE_READ_MAX_BYTES:
            return None
        if st.st_nlink > 1:
            skipped.hard_links += 1
            return None
        data = read_all(fd, WHOLE_READ_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return _decoded(data)


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
                "file, or a directory recursively, skipping .git, gitignored paths, binary "
                "files and files with other hard links. Output lines are `path:line:text`, "
                "paths relative to the workspace. "
                f"At most {self.max_matches} matches; narrow the pattern, path or glob if cut."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Regular expression to search for, e.g. 'def \\w+_test'.",
                    },
                    "path": {
                        "type": "string",
                        "description": "File or directory to search (default: the workspace root).",
                    },
                    "glob": {
                        "type": "string",
                        "minLength": 1,
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
        pattern: str = tool_input["pattern"]
        raw_glob: str | None = tool_input.get("glob")
        regex = _compile(pattern)
        glob = GlobFilter.of(raw_glob) if raw_glob is not None else None
        hits = BoundedLines(self.max_matches)
        skipped = _Skipped()
        where: list[str] = []
        cut_short = False
        for root, raw in ctx.roots_to_search(tool_input.get("path")):
            shown, cut = self._search_under(root, raw, regex, glob, hits, skipped)
            where.append(shown)
            cut_short = cut_short or cut
            if hits.full:
                break
        return self._answer(
            hits, pattern, " or ".join(where), raw_glob, cut_short, skipped.hard_links
        )

    def _search_under(
        self,
        root: Root,
        raw: str,
        regex: re.Pattern[str],
        glob: GlobFilter | None,
        hits: BoundedLines,
        skipped: _Skipped,
    ) -> tuple[str, bool]:
        """Search the file or directory ``raw`` of ``root``: where that was, and whether the
        walk was cut short."""
        with root.locate(raw) as spot:
            st = spot.lstat()
            if st is None:
                raise ToolInputError(f"{spot.shown} does not exist")
            if not stat.S_ISDIR(st.st_mode):
                self._search(regex, spot.shown, self._one_file(spot.shown, spot), hits)
                return spot.shown, False
            start_fd = open_dir_at(spot.dir_fd, spot.name, spot.shown)
            try:
                walk = WorkspaceWalk(root, start_fd, spot.parts, self.max_scanned)
                for entry in walk:
                    if glob is not None and not glob.matches(entry.below):
                        continue
                    text = _text_at(entry, skipped)
                    if text is not None and self._search(
                        regex, root.show(entry.relative), text, hits
                    ):
                        break
            finally:
                os.close(start_fd)
        return spot.shown, walk.cut_short

    def _one_file(self, shown: str, spot: Spot) -> str:
        with open_regular(spot) as (fd, st):
            refuse_hard_links(st, shown, "grep")
            text = None
            if st.st_size <= WHOLE_READ_MAX_BYTES:
                text = _decoded(read_all(fd, WHOLE_READ_MAX_BYTES + 1))
        if text is None:
            raise ToolInputError(
                f"{shown} is binary or larger than "
                f"{WHOLE_READ_MAX_BYTES // 1_048_576} MB: grep searches text files only"
            )
        return text

    def _search(self, regex: re.Pattern[str], shown: str, text: str, hits: BoundedLines) -> bool:
        """Add the matching lines of ``text``; True once the output is full."""
        for number, line in enumerate(split_lines(text), start=1):
            if regex.search(line) is None:
                continue
            if not hits.add(f"{shown}:{number}:{_cut(line, self.max_line_chars)}"):
                return True
        return False

    def _answer(
        self,
        hits: BoundedLines,
        pattern: str,
        where: str,
        raw_glob: str | None,
        cut_short: bool,
        skipped: int,
    ) -> ToolResult:
        notes: list[str] = []
        if skipped:
            notes.append(
                f"… [skipped {skipped} file(s) with other hard links: they may be outside "
                "the workspace]"
            )
        if not hits.lines:
            within = f" in files matching {raw_glob!r}" if raw_glob is not None else ""
            return ToolResult(
                "\n".join([f"No matches for {pattern!r} under {where}{within}", *notes])
            )
        if hits.full:
            notes.insert(
                0,
                f"… [truncated: showing the first {len(hits.lines)} matches; narrow the "
                "pattern, path or glob]",
            )
        if cut_short:
            notes.append(
                f"… [stopped after scanning {self.max_scanned} entries; search a subdirectory]"
            )
        return ToolResult(cap_output("\n".join([*hits.lines, *notes])))
