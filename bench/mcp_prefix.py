"""How much MCP servers add to the fixed prefix of every request (system + loaded tools).

Ten stdio servers (``_mcp_tools_server.py``) with ten tools each, run by Tiller's MCP client:
the request Tiller sends (``api_params``, as the provider builds it) is measured with no
server configured, with the ten configured but not started, and once all ten run. MCP tools
are deferred (``defer_loading``) behind ``tool_search``, so only that one tool joins the prefix;
for comparison, the 100 tools sent as ordinary tools. Tokens are the fake API's estimate (a
JSON block's characters / 4, ``tests/fakeapi.py`` ``PromptBlock.tokens``), not the API's
tokenizer. Not a test: nothing fails on a big number.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _common import Figure, main
from fakeapi import prompt_blocks
from tiller.extend.mcp.config import McpConfig, ServerConfig, Stdio
from tiller.extend.mcp.manager import McpManager
from tiller.extend.mcp.server import McpSettings
from tiller.jsontypes import JSON
from tiller.model.provider import ModelRequest, api_params
from tiller.protocol import Thinking
from tiller.tools.registry import Toolset, default_tools

SERVERS, TOOLS_EACH = 10, 10
SERVER = Path(__file__).with_name("_mcp_tools_server.py")
SYSTEM = "You are Tiller, a coding agent."  # the same text in every measure


def prefix_tokens(specs: tuple[JSON, ...]) -> int:
    request = ModelRequest("claude-sonnet-5-5", SYSTEM, specs, (), 1024, Thinking(False))
    body = api_params(request)
    return sum(b.tokens for b in prompt_blocks(body) if b.section in ("tools", "system"))


def specs(toolset: Toolset) -> tuple[JSON, ...]:
    return tuple(tool.spec() for tool in toolset.values())


async def measure() -> list[Figure]:
    with tempfile.TemporaryDirectory() as scratch:
        servers = {
            f"svc{i}": ServerConfig(
                f"svc{i}",
                Stdio(sys.executable, (str(SERVER), f"svc{i}", str(TOOLS_EACH))),
                str(Path(scratch) / ".mcp.json"),
                "client",
            )
            for i in range(SERVERS)
        }
        manager = McpManager(McpConfig(servers), McpSettings())
        try:
            none = prefix_tokens(specs(Toolset(default_tools(), None)))
            toolset = Toolset(default_tools(), manager)
            configured = prefix_tokens(specs(toolset))
            tools = await manager.all_infos()
            started = specs(toolset)
            running = prefix_tokens(started)
            eager = tuple({k: v for k, v in s.items() if k != "defer_loading"} for s in started)
            all_loaded = prefix_tokens(eager)
        finally:
            await manager.close()
    deferred = sum(1 for s in started if s.get("defer_loading"))
    note = f"{len(tools)} tools of {SERVERS} servers, {deferred} deferred"
    return [
        Figure("prefix without MCP", none, "tokens"),
        Figure("prefix growth, 10 servers configured", configured - none, "tokens", 1000, "<="),
        Figure("prefix growth, 10 servers running", running - none, "tokens", 1000, "<=", note),
        Figure(
            "prefix change when the servers start",
            running - configured,
            "tokens",
            note="0: the prefix is append-only",
        ),
        Figure("the same 100 tools loaded eagerly would add", all_loaded - none, "tokens"),
    ]


if __name__ == "__main__":
    main("MCP tools and the request prefix", measure)
