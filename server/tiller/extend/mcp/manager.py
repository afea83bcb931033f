"""The MCP servers of one workspace, shared by its sessions, and the tools they offer.

``McpManager`` owns the servers (from ``config.read_mcp_config`` plus what ACP clients pass);
none starts until something needs it: a tool search, a call, ``/mcp``. ``Toolset`` is what a
turn sees as its tools: the built-ins, ``tool_search`` when any server is configured, and
the deferred MCP tools of the servers running now (looked up live, so a server started by a
search in this step is callable in the next).
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Callable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from typing import Any

from tiller.extend.mcp.config import McpConfig, read_mcp_config, tool_name
from tiller.extend.mcp.server import (
    CallOutcome,
    McpServer,
    McpSettings,
    McpUnavailable,
    NotStarted,
    Running,
    ServerState,
    ToolInfo,
    state_text,
)
from tiller.extend.mcp.tools import McpTool, ToolSearch
from tiller.extend.settings_layer import Settings
from tiller.jsontypes import JSON
from tiller.model.history import Message
from tiller.workspace.tools.base import Preview, Tool, ToolContext, ToolKind, ToolResult
from tiller.workspace.tools.registry import tools_by_name


def matches(name: str, patterns: Sequence[str]) -> bool:
    """``name`` against the user's patterns (``mcp__time__*``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    source: str
    state: ServerState

    @property
    def text(self) -> str:
        return state_text(self.state)

    def to_wire(self) -> JSON:
        tools = self.state.tools if isinstance(self.state, Running) else ()
        kind = type(self.state).__name__
        state = {"NotStarted": "notStarted", "Running": "running", "Failed": "failed"}.get(
            kind, "blocked"
        )
        wire: JSON = {
            "name": self.name, "transport": self.transport, "source": self.source,
            "state": state, "tools": [tool_name(self.name, t.name) for t in tools],
        }  # fmt: skip
        why = getattr(self.state, "why", None)
        if why:
            wire["error"] = why
        return wire


class McpManager:
    """Every MCP server of one workspace."""

    def __init__(
        self, config: McpConfig, settings: McpSettings, read_only: Sequence[str] = ()
    ) -> None:
        self.settings = settings
        self.read_only = tuple(read_only)  # mcpReadOnly patterns: run concurrently, plan mode
        self.problems = config.problems
        self.servers: dict[str, McpServer] = {
            name: McpServer(server, settings) for name, server in config.servers.items()
        }

    @staticmethod
    def read(
        sources: Settings,
        settings: McpSettings,
        client: Mapping[str, Any] | None = None,
        enable: Mapping[str, Any] | None = None,
        read_only: Sequence[str] = (),
    ) -> McpManager:
        return McpManager(read_mcp_config(sources, client, None, enable), settings, read_only)

    async def reconfigure(self, config: McpConfig) -> None:
        """The files read again (the folder's trust changed): a server whose entry changed
        (its launch, or whether it may start) is replaced, stopped first if it ran; a new one
        joins; the others, running or not, stay as they are."""
        self.problems = config.problems
        for name, server in config.servers.items():
            known = self.servers.get(name)
            if known is not None and known.config == server:
                continue
            if known is not None:
                await known.stop()
            self.servers[name] = McpServer(server, self.settings)

    @property
    def configured(self) -> bool:
        return bool(self.servers)

    async def add_session_servers(self, config: McpConfig) -> tuple[str, ...]:
        """Servers an ACP client passed: a new name joins; a name whose launch differs replaces
        the server of that name (stopped first if it ran). Returns the problems."""
        for name, server in config.servers.items():
            known = self.servers.get(name)
            if known is not None and known.config.launch == server.launch:
                continue
            if known is not None:
                await known.stop()
            self.servers[name] = McpServer(server, self.settings)
        return config.problems

    def status(self) -> list[ServerStatus]:
        return [
            ServerStatus(s.name, s.config.transport, s.config.source, s.state)
            for s in self.servers.values()
        ]

    async def refresh(self) -> McpManager:
        """Every server started if it can be (``/mcp``, a refresh of the client's view)."""
        await self.all_tools()
        return self

    def tools_now(self) -> list[McpTool]:
        """The tools of the servers that have run (nothing is started): a server that failed
        since keeps its tools, whose calls start it again."""
        return [self._tool(t) for server in self.servers.values() for t in server.known]

    async def all_tools(self) -> list[McpTool]:
        """Every server started (concurrently) if it can be; the tools of those that run."""
        await asyncio.gather(*(self._tools_of(s) for s in self.servers.values()))
        return self.tools_now()

    async def _tools_of(self, server: McpServer) -> tuple[ToolInfo, ...]:
        try:
            return await server.tools()
        except McpUnavailable:
            return ()

    def unavailable(self) -> list[str]:
        return [
            f"MCP server {s.name} ({s.config.source}): {state_text(s.state)}"
            for s in self.servers.values()
            if not isinstance(s.state, Running | NotStarted)
        ]

    async def call(self, server: str, tool: str, arguments: JSON) -> CallOutcome:
        found = self.servers.get(server)
        if found is None:
            return CallOutcome(error=f"No MCP server named {server!r} is configured.")
        return await found.call(tool, arguments)

    def _tool(self, info: ToolInfo) -> McpTool:
        name = tool_name(info.server, info.name)
        return McpTool(name, info, self, matches(name, self.read_only))

    def server_of(self, name: str) -> McpServer | None:
        """The server a tool name belongs to (``mcp__<server>__...``)."""
        return next(
            (s for s in self.servers.values() if name.startswith(tool_name(s.name, ""))), None
        )

    async def close(self) -> None:
        """Stop every server (the Tiller server is stopping)."""
        await asyncio.gather(*(s.stop() for s in self.servers.values()))


NO_SERVERS = (
    "No MCP servers are configured. Add them to .mcp.json in the workspace (Claude Code's "
    'format: {"mcpServers": {"name": {"command": ..., "args": [...]}}}), to ~/.claude.json, to '
    "Tiller's settings.json (mcpServers), or to the client's initializationOptions.mcpServers."
)


def status_text(manager: McpManager) -> str:
    """``/mcp``: each server with its state and source, then what is wrong in the config."""
    if not manager.servers and not manager.problems:
        return NO_SERVERS
    lines = ["MCP servers:"] if manager.servers else []
    for status in manager.status():
        lines.append(f"  {status.name} ({status.transport}, {status.source}): {status.text}")
        if isinstance(status.state, Running) and status.state.tools:
            names = ", ".join(tool_name(status.name, t.name) for t in status.state.tools)
            lines.append(f"    {names}")
    if manager.problems:
        lines += ["Configuration problems:", *(f"  {p}" for p in manager.problems)]
    return "\n".join(lines)


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


@dataclass(frozen=True)
class Absent:
    """A tool the history loaded whose server is not running now (a resumed session): still
    defined, deferred, so the history stays valid; a call starts the servers first."""

    name: str
    manager: McpManager
    kind: ToolKind = field(default="mcp", init=False)

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": "An MCP tool whose server is not running yet.",
            "input_schema": {"type": "object", "additionalProperties": True},
            "defer_loading": True,
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return matches(self.name, self.manager.read_only)

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": f"MCP tool {self.name}\n{tool_input}"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        found = {t.name: t for t in await self.manager.all_tools()}.get(self.name)
        if found is None:
            server = self.manager.server_of(self.name)
            why = state_text(server.state) if server is not None else "no such server"
            return ToolResult(f"MCP tool {self.name} is not available ({why}).", True)
        return await found.run(tool_input, ctx)


class Toolset(Mapping[str, Tool]):
    """A turn's tools, live: built-ins (+ ``tool_search``), then the deferred MCP tools."""

    def __init__(
        self,
        builtins: Sequence[Tool],
        manager: McpManager | None,
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
        known = {tool.name for tool in self._manager.tools_now()}
        if referenced_tools(self._history()) - known - self._fixed.keys():
            await self._manager.all_tools()

    def _all(self) -> dict[str, Tool]:
        tools: dict[str, Tool] = dict(self._fixed)
        if self._manager is None or not self._manager.configured:
            return tools
        for tool in self._manager.tools_now():
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
