"""MCP tools as the loop sees tools: ``mcp__<server>__<tool>`` (deferred) and ``tool_search``.

Deferred tools follow the Messages API's tool search
(https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool, "Custom tool
search implementation"): every MCP tool is sent with ``defer_loading: true``, which keeps its
definition out of the prompt until a ``tool_reference`` block names it; ``tool_search`` is an
ordinary client tool whose result is those ``tool_reference`` blocks. The prompt's fixed part
(system + non-deferred tools) therefore holds one small tool whatever the number of servers,
and a server that starts late adds deferred definitions only, which the prefix does not contain.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from tiller.extend.mcp.config import tool_name
from tiller.extend.mcp.server import CallOutcome, McpServer, ToolInfo, state_text
from tiller.jsontypes import JSON
from tiller.tools.base import Preview, ToolContext, ToolKind, ToolResult, cap_output
from tiller.tools.mcp_results import convert


class Servers(Protocol):
    """What the tools need of the servers (``extend.mcp.manager.McpManager``): a call, the
    tools they offer (now, or after starting every server), which cannot be reached, the
    user's read-only patterns and the server a tool name belongs to."""

    @property
    def configured(self) -> bool: ...
    @property
    def read_only(self) -> tuple[str, ...]: ...
    async def call(self, server: str, tool: str, arguments: JSON) -> CallOutcome: ...
    def infos_now(self) -> list[ToolInfo]: ...
    async def all_infos(self) -> list[ToolInfo]: ...
    def unavailable(self) -> list[str]: ...
    def server_of(self, name: str) -> McpServer | None: ...


def matches(name: str, patterns: Sequence[str]) -> bool:
    """``name`` against the user's patterns (``mcp__time__*``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def tools_now(servers: Servers) -> list[McpTool]:
    """The tools of the servers that have run (nothing is started)."""
    return [_tool(info, servers) for info in servers.infos_now()]


async def all_tools(servers: Servers) -> list[McpTool]:
    """Every server started if it can be; the tools of those that run."""
    return [_tool(info, servers) for info in await servers.all_infos()]


def _tool(info: ToolInfo, servers: Servers) -> McpTool:
    name = tool_name(info.server, info.name)
    return McpTool(name, info, servers, matches(name, servers.read_only))


TOOL_SEARCH = "tool_search"
MAX_RESULTS = 5
PREVIEW_CHARS = 2_000
_WORD = re.compile(r"[a-z0-9]+")

SEARCH_DESCRIPTION = (
    "Find tools of the user's MCP servers (named mcp__<server>__<tool>). Their definitions are "
    "not loaded until found: search first, then call what it returns. query: keywords matched "
    'against tool names, descriptions and argument names; "select:<name>,<name>" loads tools '
    'by exact name; "list" names every tool of every server (starting servers not running).'
)


def safe_schema(schema: object) -> JSON:
    """The tool's input schema if it is a valid JSON Schema object, else an open object (the
    API needs ``type: object``; a server's broken schema must not break the request)."""
    if isinstance(schema, dict) and schema.get("type") == "object":
        try:
            Draft202012Validator.check_schema(schema)
            return schema
        except SchemaError:
            pass
    return {"type": "object", "additionalProperties": True}


@dataclass(frozen=True)
class McpTool:
    """One tool of one server, called through the manager (which starts the server)."""

    name: str  # mcp__<server>__<tool>
    info: ToolInfo
    manager: Servers
    read_only_by_user: bool  # the user marked it read-only (mcpReadOnly); hints never count
    kind: ToolKind = field(default="mcp", init=False)

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": self.info.description or f"{self.info.name} ({self.info.server})",
            "input_schema": safe_schema(self.info.input_schema),
            "defer_loading": True,
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return self.read_only_by_user

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        args = json.dumps(tool_input, ensure_ascii=False, indent=2)
        if len(args) > PREVIEW_CHARS:
            args = args[:PREVIEW_CHARS] + "\n…"
        hint = " (the server says it only reads)" if self.info.read_only_hint else ""
        text = f"MCP server {self.info.server!r}, tool {self.info.name!r}{hint}\n{args}"
        return Preview("text", {"text": text})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        outcome = await self.manager.call(self.info.server, self.info.name, tool_input)
        if outcome.error is not None:
            return ToolResult(outcome.error, True)
        converted = convert(outcome.content)
        return ToolResult(converted.text, outcome.is_error, blocks=converted.blocks)


@dataclass(frozen=True)
class Absent:
    """A tool the history loaded whose server is not running now (a resumed session): still
    defined, deferred, so the history stays valid; a call starts the servers first."""

    name: str
    manager: Servers
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
        found = {t.name: t for t in await all_tools(self.manager)}.get(self.name)
        if found is None:
            server = self.manager.server_of(self.name)
            why = state_text(server.state) if server is not None else "no such server"
            return ToolResult(f"MCP tool {self.name} is not available ({why}).", True)
        return await found.run(tool_input, ctx)


@dataclass(frozen=True)
class ToolSearch:
    """``tool_search``: answers with ``tool_reference`` blocks for the tools that match."""

    manager: Servers
    name: str = TOOL_SEARCH
    kind: ToolKind = field(default="read", init=False)

    def spec(self) -> JSON:
        return {
            "name": self.name,
            "description": SEARCH_DESCRIPTION,
            "input_schema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "keywords, select:<names> or list"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        }

    def is_read_only(self, tool_input: JSON) -> bool:
        return True

    async def preview(self, tool_input: JSON, ctx: ToolContext) -> Preview:
        return Preview("text", {"text": f"search MCP tools: {tool_input.get('query', '')}"})

    async def run(self, tool_input: JSON, ctx: ToolContext) -> ToolResult:
        query = str(tool_input.get("query", "")).strip()
        limit = int(tool_input.get("max_results") or MAX_RESULTS)
        tools = await all_tools(self.manager)
        problems = self.manager.unavailable()
        if query.lower() in ("list", "*", ""):
            return ToolResult(cap_output(_listing(tools, problems)))
        found = _select(query[7:], tools) if query.startswith("select:") else _rank(query, tools)
        found = found[:limit]
        if not found:
            return ToolResult(_nothing(query, tools, problems))
        refs = tuple({"type": "tool_reference", "tool_name": t.name} for t in found)
        return ToolResult("Found: " + ", ".join(t.name for t in found), blocks=refs)


def _select(names: str, tools: Sequence[McpTool]) -> list[McpTool]:
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    by_name = {t.name: t for t in tools}
    return [by_name[n] for n in wanted if n in by_name]


def _rank(query: str, tools: Sequence[McpTool]) -> list[McpTool]:
    """Tools by how many of the query's words their name, server, description and argument
    names contain (a word in the name counts double); ties keep the servers' order."""
    words = set(_WORD.findall(query.lower()))
    scored: list[tuple[int, int, McpTool]] = []
    for index, tool in enumerate(tools):
        name = set(_WORD.findall(tool.name.lower()))
        args = tool.info.input_schema.get("properties")
        text = " ".join([tool.info.description, *(args if isinstance(args, dict) else ())])
        rest = set(_WORD.findall(text.lower()))
        score = sum(2 if w in name else 1 if w in rest or _prefix_of(w, rest) else 0 for w in words)
        if score:
            scored.append((-score, index, tool))
    return [tool for _, _, tool in sorted(scored, key=lambda s: (s[0], s[1]))]


def _prefix_of(word: str, words: set[str]) -> bool:
    return len(word) >= 4 and any(w.startswith(word) for w in words)


def _listing(tools: Sequence[McpTool], problems: Sequence[str]) -> str:
    lines = [f"{t.name}: {_first_line(t.info.description)}" for t in tools]
    if not lines:
        lines = ["No MCP tools."]
    return "\n".join([*lines, *problems, "Load tools with select:<name>,<name>."])


def _nothing(query: str, tools: Sequence[McpTool], problems: Sequence[str]) -> str:
    servers = sorted({t.info.server for t in tools})
    known = ", ".join(servers) or "none running"
    return "\n".join(
        [f"No MCP tool matches {query!r}. Servers: {known}. Try other words or 'list'.",
         *problems]
    )  # fmt: skip


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:120]
