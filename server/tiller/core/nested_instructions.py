"""Nested instruction files reach the model when it works under their folder: the first call
that reads, writes, lists or searches under a folder with its own AGENTS.md (else CLAUDE.md)
gets that file's text (imports expanded, cut to the budget) appended to its result, once per
conversation. Append-only: never in the system prompt. What was told is read back from the
history, so it holds across restarts; a compaction that drops it lets it be told again."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from tiller.core.history import Message
from tiller.extend.instructions import load, nested_files
from tiller.jsontypes import JSON

TOLD = "Instructions for {folder}/ (from {file}); they apply to work under that folder:\n\n"
_TOLD = re.compile(r"Instructions for (.+?)/ \(from .+?\); they apply to work under that folder:")
_PATH_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_files", "grep"})


def told_folders(messages: Sequence[Message]) -> set[str]:
    """The folders whose instructions are already in the conversation."""
    told: set[str] = set()
    for message in messages:
        for block in message.content:
            for text in _texts(block):
                told.update(m.group(1) for m in _TOLD.finditer(text))
    return told


def _texts(block: JSON) -> list[str]:
    match block.get("type"), block.get("content"):
        case "text", _:
            return [str(block.get("text", ""))]
        case "tool_result", str(content):
            return [content]
        case "tool_result", list(parts):
            return [str(p.get("text", "")) for p in parts if isinstance(p, dict)]
        case _:
            return []


def nested_context(
    workspace: Path, tool: str, tool_input: JSON, told: set[str]
) -> list[tuple[str, str]]:
    """(folder, text) for each nested instruction file the call reaches that the model was
    not told of yet (``told`` is updated)."""
    raw = tool_input.get("path")
    if tool not in _PATH_TOOLS or not isinstance(raw, str) or not raw:
        return []
    home = Path(os.environ.get("HOME") or Path.home())
    found = []
    for folder, path in nested_files(workspace, workspace / raw):
        key = folder.as_posix()
        if key in told:
            continue
        file = f"{key}/{path.name}"
        loaded = load(path, file, workspace, home)
        if loaded is None:
            continue
        told.add(key)
        found.append((key, TOLD.format(folder=key, file=file) + loaded.text))
    return found
