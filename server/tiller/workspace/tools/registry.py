"""The tools a session offers the model, in the order the model sees them."""

from __future__ import annotations

from collections.abc import Iterable

from tiller.workspace.tools.base import Tool
from tiller.workspace.tools.files import EditFile, ListFiles, ReadFile, WriteFile
from tiller.workspace.tools.plan import EnterPlanMode, ExitPlanMode
from tiller.workspace.tools.search import Grep
from tiller.workspace.tools.shell import Bash
from tiller.workspace.tools.todo import TodoWrite


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
