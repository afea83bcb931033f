"""The one registry of tools: the built-ins a session offers the model, in the order the
model sees them, and ``Toolset``, what a turn sees as its tools: the session's tools,
``tool_search`` when any MCP server is configured, and the deferred MCP tools of the servers
running now (looked up live, so a server started by a search in this step is callable in the
next)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, ValuesView

from tiller.model.history import Message
from tiller.tools.base import Tool
from tiller.tools.files import EditFile, ListFiles, ReadFile, WriteFile
from tiller.tools.mcp import Absent, Servers, ToolSearch, tools_now
from tiller.tools.plan import EnterPlanMode, ExitPlanMode
from tiller.tools.search import Grep
from tiller.tools.shell import Bash
from tiller.tools.todo import TodoWrite


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


def referenced_tools(messages: Sequence[Message]) -> set[str]:
    """The tool names the history's ``tool_reference`` blocks load (they must stay defined)."""
    names: set[str] = set()
    for message in messages:
        for block in message.content:
            content = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(content, list):
                names.update(
                    str(c.get("tool_name"))
                    for c in content
                    if isinstance(c, dict) and c.get("type") == "tool_reference"
                )
    return names


class Toolset(Mapping[str, Tool]):
    """A turn's tools, live: built-ins (+ ``tool_search``), then the deferred MCP tools."""

    def __init__(
        self,
        builtins: Sequence[Tool],
        manager: Servers | None,
        history: Callable[[], Sequence[Message]] = lambda: (),
    ) -> None:
        fixed = list(builtins)
        if manager is not None and manager.configured:
            fixed.append(ToolSearch(manager))
        self._fixed = tools_by_name(fixed)
        self._manager = manager
        self._history = history

    async def prepare(self) -> None:
        """Before a turn: when the history loaded a tool whose server has not run in this
        process (a resumed session), start the servers, so the tool's own definition is sent
        again rather than a placeholder (what the history loaded must not change)."""
        if self._manager is None or not self._manager.configured:
            return
        known = {tool.name for tool in tools_now(self._manager)}
        if referenced_tools(self._history()) - known - self._fixed.keys():
            await self._manager.all_infos()

    def _all(self) -> dict[str, Tool]:
        tools: dict[str, Tool] = dict(self._fixed)
        if self._manager is None or not self._manager.configured:
            return tools
        for tool in tools_now(self._manager):
            tools.setdefault(tool.name, tool)
        for name in sorted(referenced_tools(self._history()) - tools.keys()):
            tools[name] = Absent(name, self._manager)
        return tools

    def __getitem__(self, name: str) -> Tool:
        fixed = self._fixed.get(name)
        if fixed is not None:
            return fixed
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def values(self) -> ValuesView[Tool]:  # one look at the servers, not one per tool
        return self._all().values()

    def __len__(self) -> int:
        return len(self._all())
