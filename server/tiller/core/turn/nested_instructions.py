"""Nested instruction files reach the model when it works under their folder: the first call
that reads, writes, lists or searches under a folder with its own AGENTS.md (else CLAUDE.md)
gets that file's text (imports expanded, cut to the budget) appended to its result, once per
conversation. Append-only: never in the system prompt. What was told is read back from the
history, so it holds across restarts; a compaction that drops it lets it be told again.

Confined: a nested file (or its imports) is read beneath the workspace's roots; one that is a
symlink out of the workspace is not read (``Nested.refused`` says so, once per call site's
``told``)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tiller.extend.confined_material import Confined, Refused
from tiller.extend.instructions import load, nested_files
from tiller.jsontypes import JSON
from tiller.model.history import Message
from tiller.workspace.roots import WorkspaceRoots

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


@dataclass(frozen=True)
class Nested:
    """What a call reached: (folder, text) to tell the model, and notices of what was not
    read (a nested file or an import that leads out of the workspace)."""

    found: list[tuple[str, str]]
    refused: list[str]


def nested_material(
    workspace: Path | WorkspaceRoots, tool: str, tool_input: JSON, told: set[str]
) -> Nested:
    """The nested instruction files the call reaches that the model was not told of yet, read
    beneath the workspace's roots (``told`` is updated, with the folders of refused files
    too, so a refusal is told once)."""
    raw = tool_input.get("path")
    if tool not in _PATH_TOOLS or not isinstance(raw, str) or not raw:
        return Nested([], [])
    confined = Confined.of(workspace)
    home = Path(os.environ.get("HOME") or Path.home())
    found, refused = [], []
    for folder, path in nested_files(confined.primary, confined.primary / raw):
        key = folder.as_posix()
        if key in told:
            continue
        file = f"{key}/{path.name}"
        loaded = load(path, file, confined, home)
        if isinstance(loaded, Refused):
            told.add(key)
            refused.append(loaded.notice)
        if loaded is None or isinstance(loaded, Refused):
            continue
        told.add(key)
        refused += loaded.refused
        found.append((key, TOLD.format(folder=key, file=file) + loaded.text))
    return Nested(found, refused)
