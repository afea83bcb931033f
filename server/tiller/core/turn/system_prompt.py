"""The system prompt: stable text (cacheable), the user's instruction files, the skills, and the
workspace's AGENTS.md or CLAUDE.md (``extend/instructions.py``: imports, budget).

Append-only (docs/protocol.md): the system prompt is built once per session, kept with it, and
sent byte for byte at every request, since current models bind each thinking block to
everything before it (system, tools, earlier messages). A later edit of the instruction file
reaches the model as a message at the start of the next turn (``instructions_update``); what
the model last saw is read back from the history (or, before any update, from the system
prompt itself), so it stays right across rewinds, compactions and restarts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tiller.core.turn.roots_prompt import roots_section
from tiller.extend import instructions as instruction_files
from tiller.extend.skills import read_skills, skills_section
from tiller.model.history import Message
from tiller.workspace.roots import WorkspaceRoots

BASE = """You are Tiller, a coding agent working inside the user's workspace at {root}.
Use the tools to read, search, edit files and run commands. Paths are relative to the workspace.
Read a file before editing it. Prefer small, verifiable steps, and verify your work (run tests,
linters or the program) before you finish. Keep answers short; the user sees every tool call.
In plan mode you may only explore with read-only tools. When the task is a change, present
your plan by calling exit_plan_mode (again with the revised plan after a rejection) and wait for
approval before changing anything; a question, a review or an explanation is answered in plain
text, which ends the turn."""

MEMORY_FILES = instruction_files.MEMORY_FILES
SECTION = "\n\n# Project instructions ("  # then "{name})\n\n{text}"; always the last section
USER_SECTION = "\n\n# User instructions ({name})\n\n"  # then the text
CHANGED = "{name} changed. The project instructions now read:\n\n"  # then the new text
REMOVED = "{name} was removed: its project instructions no longer apply."


@dataclass(frozen=True)
class Instructions:
    """The instruction file the model is told about: its name and text (imports expanded,
    cut to the budget)."""

    name: str
    text: str


def read_instructions(workspace: Path | WorkspaceRoots) -> Instructions | None:
    """The workspace's AGENTS.md, else its CLAUDE.md, as it is now (None: neither), read
    beneath the workspace's roots."""
    found = instruction_files.root_file(workspace)
    return None if found is None else Instructions(found.name, found.text)


def system_prompt(roots: WorkspaceRoots) -> str:
    """Built once per session (then kept with it): never rebuilt for a running session.

    The workspace folders when there are several, the user's instruction files, the skills
    (names and descriptions), then the primary folder's instruction file, last
    (``instructions_in`` reads it back from there)."""
    workspace = roots.primary
    text = BASE.format(root=workspace) + roots_section(roots)
    for loaded in instruction_files.user_files():
        text += USER_SECTION.format(name=loaded.name) + loaded.text
    # The primary folder alone, as the updates at later turns read them (``turn_start``).
    text += skills_section(list(read_skills(workspace)[0].values()))
    found = read_instructions(workspace)
    if found is not None:
        text += f"{SECTION}{found.name})\n\n{found.text}"
    return text


def instructions_in(system: str) -> Instructions | None:
    """The instruction file a system prompt built by ``system_prompt`` carries."""
    at = system.find(SECTION)
    if at < 0:
        return None
    name, sep, text = system[at + len(SECTION) :].partition(")\n\n")
    return Instructions(name, text) if sep else None


def _update_in(text: str) -> tuple[bool, Instructions | None]:
    """(True, what it says) when ``text`` is an update written by ``update_text``."""
    for name in MEMORY_FILES:
        head = CHANGED.format(name=name)
        if text.startswith(head):
            return True, Instructions(name, text[len(head) :])
        if text == REMOVED.format(name=name):
            return True, None
    return False, None


def seen_instructions(system: str, messages: Sequence[Message]) -> Instructions | None:
    """What the model was last told of the instruction file: the last update in the
    history, else the system prompt's copy."""
    for message in reversed(messages):
        if message.role != "user":
            continue
        for block in reversed(message.content):
            if block.get("type") == "text":
                found, instructions = _update_in(str(block.get("text", "")))
                if found:
                    return instructions
    return instructions_in(system)


def update_text(seen: Instructions | None, now: Instructions | None) -> str | None:
    """The message that tells the model the file changed (None: it did not)."""
    if seen == now:
        return None
    if now is None:
        assert seen is not None
        return REMOVED.format(name=seen.name)
    return CHANGED.format(name=now.name) + now.text


def instructions_update(
    system: str, messages: Sequence[Message], workspace: Path | WorkspaceRoots
) -> tuple[str, str] | None:
    """(the file's name, the update message) when the instruction file is no longer what
    the model was last told; None when it is."""
    seen = seen_instructions(system, messages)
    now = read_instructions(workspace)
    text = update_text(seen, now)
    if text is None:
        return None
    name = now.name if now is not None else seen.name if seen is not None else MEMORY_FILES[0]
    return name, text
