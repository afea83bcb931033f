"""MCP tools under permissions, as results, and as found by tool_search: a server's hints
are never grants; plan mode runs only what the user allowed as read-only; images stay
images; the tool search answers tool_reference blocks; the request keeps deferred tools out
of the cached prefix and asks for the beta."""

from __future__ import annotations

from pathlib import Path

from tiller.core.permissions.call_rules import Ruled
from tiller.core.permissions.modes import Allow, Ask, Deny, Grants, McpRules, judge_mcp
from tiller.core.turn.scheduler import ToolCall, partition
from tiller.extend.mcp.config import McpConfig, ServerConfig, Stdio
from tiller.extend.mcp.manager import McpManager
from tiller.extend.mcp.server import McpSettings, ToolInfo
from tiller.model.history import Message, text_block
from tiller.model.provider import ModelRequest, api_params
from tiller.model.server_tools import TOOL_SEARCH_BETA, beta_headers
from tiller.protocol import Thinking
from tiller.tools.base import ReadLedger, ToolContext
from tiller.tools.mcp import McpTool, ToolSearch, _rank
from tiller.tools.mcp_results import convert
from tiller.tools.registry import Toolset, default_tools
from tiller.workspace.roots import WorkspaceRoots

NAME = "mcp__time__get_current_time"
MANAGER = McpManager(McpConfig({}), McpSettings(), read_only=("mcp__time__*",))


def tool(name: str, description: str = "", read_only_hint: bool = True) -> McpTool:
    server, own = name.split("__")[1:]
    info = ToolInfo(server, own, description, {"type": "object"}, read_only_hint)
    return McpTool(name, info, MANAGER, False)


def test_an_mcp_tool_is_asked_for_by_default_whatever_the_server_claims() -> None:
    for mode in ("default", "acceptEdits"):
        assert judge_mcp(NAME, mode, Grants(), McpRules()) == Ask(f"mode {mode}")


def test_allow_session_remembers_that_tool_only() -> None:
    grants = Grants().allow_mcp_tool(NAME)
    assert judge_mcp(NAME, "default", grants, McpRules()) == Allow("session grant")
    assert isinstance(judge_mcp("mcp__time__convert_time", "default", grants, McpRules()), Ask)
    assert isinstance(judge_mcp(NAME, "plan", grants, McpRules()), Deny)


def test_plan_mode_runs_only_what_the_user_allowed_as_read_only() -> None:
    allowed = McpRules(allow=("mcp__time__*",))
    assert isinstance(judge_mcp(NAME, "plan", Grants(), allowed), Deny)
    assert judge_mcp(NAME, "default", Grants(), allowed) == Allow("mcpAllow")
    read_only = McpRules(read_only=("mcp__time__*",))
    assert judge_mcp(NAME, "plan", Grants(), read_only) == Allow("mcpReadOnly")


def test_the_scheduler_runs_mcp_tools_alone_unless_marked_read_only() -> None:
    hinted = tool("mcp__other__look", read_only_hint=True)  # the server's claim only
    marked = McpTool(NAME, tool(NAME).info, MANAGER, True)
    assert not hinted.is_read_only({}) and marked.is_read_only({})
    calls = [ToolCall("1", hinted.name, {}), ToolCall("2", hinted.name, {})]
    batches = partition(calls, lambda call: hinted.is_read_only(call.input))
    assert [len(b.calls) for b in batches] == [1, 1]


def test_an_image_stays_an_image_and_text_is_bounded() -> None:
    converted = convert(
        [
            {"type": "text", "text": "x" * 40_000},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "image", "mimeType": "image/tiff", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a.png", "mimeType": "image/png",
                                              "blob": "iVBORw0KGgo="}},
        ]
    )  # fmt: skip
    kinds = [b["type"] for b in converted.blocks]
    assert kinds.count("image") == 2
    texts = [b["text"] for b in converted.blocks if b["type"] == "text"]
    assert sum(len(t) for t in texts) < 31_000
    assert "image/tiff" in converted.text


def test_the_search_ranks_by_name_first() -> None:
    tools = [
        tool("mcp__a__list_issues", "List issues of a repository"),
        tool("mcp__b__get_time", "The current time in a timezone"),
        tool("mcp__c__send", "Send a message; mentions time"),
    ]
    assert [t.name for t in _rank("time now", tools)] == ["mcp__b__get_time", "mcp__c__send"]
    assert _rank("weather", tools) == []


async def test_the_search_answers_tool_references(tmp_path: Path) -> None:
    search = ToolSearch(MANAGER)
    ctx = ToolContext(WorkspaceRoots.of(tmp_path), ReadLedger())
    found = await search.run({"query": "select:mcp__nope__x"}, ctx)
    assert found.blocks == () and "No MCP tool matches" in found.output


def test_deferred_tools_go_last_and_the_breakpoint_stays_on_the_prefix() -> None:
    toolset = Toolset(default_tools(), McpManager(McpConfig({}), McpSettings()))
    specs = (*(t.spec() for t in toolset.values()), tool(NAME).spec())
    request = ModelRequest(
        model="claude-sonnet-5-5", system="s", tools=specs, messages=(), max_tokens=1000,
        thinking=Thinking(False),
    )  # fmt: skip
    params = api_params(request)
    tools = params["tools"]
    assert tools[-1]["name"] == NAME and tools[-1]["defer_loading"] is True
    marked = [t["name"] for t in tools if "cache_control" in t]
    assert marked == [tools[-2]["name"]]
    assert beta_headers(tools) == {"anthropic-beta": TOOL_SEARCH_BETA}


def test_a_tool_the_history_loaded_stays_defined_while_its_server_is_down() -> None:
    config = McpConfig({"gone": ServerConfig("gone", Stdio("gone-server"), "x", "client")})
    manager = McpManager(config, McpSettings())
    history = (
        Message("user", (text_block("hi"),)),
        Message("assistant", ({"type": "tool_use", "id": "t1", "name": "tool_search",
                               "input": {"query": "x"}},)),
        Message("user", ({"type": "tool_result", "tool_use_id": "t1",
                          "content": [{"type": "tool_reference", "tool_name": "mcp__gone__x"}]},)),
    )  # fmt: skip
    toolset = Toolset(default_tools(), manager, lambda: history)
    assert "tool_search" in toolset
    absent = toolset["mcp__gone__x"]
    assert absent.spec()["defer_loading"] is True
    assert absent.kind == "mcp"
    assert "tool_search" not in Toolset(default_tools(), McpManager(McpConfig({}), McpSettings()))


def test_permission_rules_decide_before_the_mcp_settings() -> None:
    denied = Ruled(effect="deny", by="deny rule mcp__time__*")
    read_only = McpRules(read_only=("mcp__time__*",))
    assert isinstance(judge_mcp(NAME, "default", Grants(), read_only, denied), Deny)
    allowed = Ruled(effect="allow", by="allow rule mcp__time__*")
    assert judge_mcp(NAME, "default", Grants(), McpRules(), allowed) == Allow(
        "allow rule mcp__time__*"
    )
    assert isinstance(judge_mcp(NAME, "plan", Grants(), McpRules(), allowed), Deny)
    asked = Ruled(effect="ask", by="ask rule mcp__time__*")
    assert judge_mcp(NAME, "default", Grants(), McpRules(allow=(NAME,)), asked) == Ask(
        "ask rule mcp__time__*"
    )
