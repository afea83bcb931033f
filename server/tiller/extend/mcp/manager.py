"""The MCP servers of one workspace, shared by its sessions, and the tools they offer.

``McpManager`` owns the servers (from ``config.read_mcp_config`` plus what ACP clients pass);
none starts until something needs it: a tool search, a call, ``/mcp``. What the servers
offer is told as ``ToolInfo``; ``tools.mcp`` makes tools of them and ``tools.registry.Toolset``
offers them to a turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from tiller.extend.settings_layer import Settings
from tiller.jsontypes import JSON


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
        self.config_problems = config.problems
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
        self.config_problems = config.problems
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

    @property
    def problems(self) -> tuple[str, ...]:
        """What a session is told when it opens and ``tiller/mcp/list`` lists: what is wrong in
        the configuration, then each server held back until the user acts (trusts the folder,
        approves the server), with the file and key to edit."""
        held = (s.config.notice for s in self.servers.values())
        return (*self.config_problems, *(n for n in held if n is not None))

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
        await self.all_infos()
        return self

    def infos_now(self) -> list[ToolInfo]:
        """The tools of the servers that have run (nothing is started): a server that failed
        since keeps its tools, whose calls start it again."""
        return [t for server in self.servers.values() for t in server.known]

    async def all_infos(self) -> list[ToolInfo]:
        """Every server started (concurrently) if it can be; the tools of those that run."""
        await asyncio.gather(*(self._tools_of(s) for s in self.servers.values()))
        return self.infos_now()

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
    if not manager.servers and not manager.config_problems:
        return NO_SERVERS
    lines = ["MCP servers:"] if manager.servers else []
    for status in manager.status():
        lines.append(f"  {status.name} ({status.transport}, {status.source}): {status.text}")
        if isinstance(status.state, Running) and status.state.tools:
            names = ", ".join(tool_name(status.name, t.name) for t in status.state.tools)
            lines.append(f"    {names}")
    if manager.config_problems:
        lines += ["Configuration problems:", *(f"  {p}" for p in manager.config_problems)]
    return "\n".join(lines)
