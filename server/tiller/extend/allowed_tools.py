"""A custom command's ``allowed-tools`` (Claude Code's syntax): the tools that command's turn
may use without asking. ``Read``, ``Edit``, ``Bash`` name tools (Claude Code's names or
Tiller's); ``Bash(git status)`` allows that command exactly, ``Bash(git add:*)`` any command
that starts with ``git add`` — only a simple command (no ``;``, ``&``, ``|``, redirection,
substitution or second line), so ``git add . && rm -rf x`` is never allowed by it.

It only skips the question: what the mode denies (plan mode's writes) stays denied.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tiller.extend.hook_tools import claude_name
from tiller.jsontypes import JSON

_ENTRY = re.compile(r"\s*([A-Za-z0-9_]+)\s*(?:\((.*)\))?\s*", re.DOTALL)
_COMPOUND = re.compile(r"[;&|<>`\n]|\$\(")


def allows(entries: Sequence[str], tool: str, tool_input: JSON) -> bool:
    """Whether ``entries`` let a call of ``tool`` with ``tool_input`` run without a question."""
    for entry in entries:
        match = _ENTRY.fullmatch(entry)
        if match is None:
            continue
        name, pattern = match.groups()
        if name not in (tool, claude_name(tool)):
            continue
        if pattern is None or pattern.strip() in ("", "*"):
            return True
        if tool == "bash" and _command_matches(pattern.strip(), tool_input.get("command")):
            return True
    return False


def _command_matches(pattern: str, command: object) -> bool:
    if not isinstance(command, str) or _COMPOUND.search(command):
        return False
    command = command.strip()
    if pattern.endswith(":*"):
        prefix = pattern[:-2].strip()
        return command == prefix or command.startswith(prefix + " ")
    return command == pattern
