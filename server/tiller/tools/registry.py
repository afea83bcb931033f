"""The tools a session offers the model, in the order the model sees them."""

from __future__ import annotations

from collections.abc import Iterable

from .base import Tool
from .files import EditFile, ListFiles, ReadFile, WriteFile
from .plan import EnterPlanMode, ExitPlanMode
from .search import Grep
from .shell import Bash
from .todo import TodoWrite


def default_tools() -> list[Tool]:
    """Fresh instances of every built-in tool; names are part of the protocol."""
    return [
        ReadFile(),
        ListFiles(),
        Grep(),
        WriteFile(),
        EditFile(),
        Bash(),
        TodoWrite(),
        EnterPlanMode(),
        ExitPlanMode(),
    ]


def tools_by_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    """Index tools by name; a duplicate name is a programming error."""
    index: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in index:
            raise ValueError(f"two tools are named {tool.name!r}")
        index[tool.name] = tool
    return index
