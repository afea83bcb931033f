"""MCP tools through the real server and the fake Messages API: the model finds a tool with
tool_search (tool_reference blocks), calls it as mcp__<server>__<tool>, the user is asked
unless they allowed it, plan mode denies what is not allowed as read-only, an image reaches
the model as an image, and the request prefix (system + loaded tools) never changes while
servers start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakeapi import TOOL_SEARCH_BETA, FakeMessagesAPI, RecordedRequest, loaded_tools
from harness import Tiller
from mcp_servers import INSTALLED, NOT_INSTALLED, everything, misbehaving
from test_turn_basics import text, tool_use
from tiller.jsontypes import JSON

pytestmark = pytest.mark.skipif(not INSTALLED, reason=NOT_INSTALLED)

# The tools called here are the npm server-everything's: its start costs less than half the CPU
# of a PyPI one (whose imports of the mcp SDK take ~1.6 s); those are test_mcp_client.py's.
ECHO_TOOL = "mcp__everything__echo"
IMAGE_TOOL = "mcp__everything__get-tiny-image"


async def allow(params: JSON) -> JSON:
    return {"decision": "allow"}


def result_of(request: RecordedRequest, tool_id: str) -> JSON:
    for block in request.body["messages"][-1]["content"]:
        if block.get("type") == "tool_result" and block["tool_use_id"] == tool_id:
            return dict(block)
    raise AssertionError(f"no result for {tool_id}")


def shown(result: JSON) -> str:
    """A tool_result's text, whether its content is a string or blocks."""
    content = result["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content)


def prefix(request: RecordedRequest) -> str:
    body = request.body
    system = [{k: v for k, v in b.items() if k != "cache_control"} for b in body["system"]]
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in loaded_tools(body)]
    return json.dumps({"system": system, "tools": tools}, sort_keys=True)


def search_then_call(tool: str, tool_input: JSON, query: str) -> list[dict[str, Any]]:
    return [
        {"content": [tool_use("tool_search", "toolu_search", query=query)]},
        {"content": [tool_use(tool, "toolu_call", **tool_input)]},
        {"content": [text("Done.")]},
    ]


async def test_a_tool_found_by_search_runs_after_the_user_allows_it(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(mcpServers={"everything": everything()})
    tiller.on_confirm = allow
    api.enqueue(*search_then_call(ECHO_TOOL, {"message": "hello"}, "echoes back the input"))
    ended = await tiller.run("say hello back", timeout=60)
    assert ended["outcome"] == "completed"
    first, second, third = api.message_requests()
    # The fixed part: the built-ins and tool_search, nothing deferred in the prefix.
    names = [t["name"] for t in first.body["tools"]]
    assert "tool_search" in names
    assert not any(t.get("defer_loading") for t in first.body["tools"])  # none started yet
    # The search started the server; its tools are deferred, and referenced.
    found = result_of(second, "toolu_search")
    assert {"type": "tool_reference", "tool_name": ECHO_TOOL} in found["content"]
    deferred = {t["name"]: t for t in second.body["tools"] if t.get("defer_loading")}
    assert ECHO_TOOL in deferred
    assert TOOL_SEARCH_BETA in second.headers.get("anthropic-beta", "")
    # The call was asked for, with a preview naming server, tool and arguments.
    ((method, asked),) = tiller.asked
    assert (method, asked["name"]) == ("tiller/confirmTool", ECHO_TOOL)
    assert asked["preview"]["kind"] == "text"
    assert "MCP server 'everything', tool 'echo'" in asked["preview"]["text"]
    assert '"message": "hello"' in asked["preview"]["text"]
    answered = result_of(third, "toolu_call")
    assert shown(answered) == "Echo: hello"
    assert not answered.get("is_error")
    # Append-only: the prefix was the same before and after the server started.
    assert prefix(first) == prefix(second) == prefix(third)


async def test_an_mcp_tool_never_runs_without_asking(start: Any, api: FakeMessagesAPI) -> None:
    tiller: Tiller = await start(mcpServers={"everything": everything()})  # the default denies
    api.enqueue(*search_then_call(ECHO_TOOL, {"message": "hello"}, "select:" + ECHO_TOOL))
    ended = await tiller.run("say hello back", timeout=60)
    assert ended["outcome"] == "completed"
    answered = result_of(api.message_requests()[2], "toolu_call")
    assert answered["is_error"] is True
    assert shown(answered).startswith("Denied by the user.")
    ((method, asked),) = tiller.asked
    assert (method, asked["name"]) == ("tiller/confirmTool", ECHO_TOOL)


async def test_an_allowed_tools_image_reaches_the_model_as_an_image(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(
        mcpServers={"everything": everything()}, mcpAllow=["mcp__everything__get-tiny-*"]
    )
    api.enqueue(*search_then_call(IMAGE_TOOL, {}, "tiny image"))
    ended = await tiller.run("show me the logo", timeout=60)
    assert ended["outcome"] == "completed"
    assert tiller.asked == []  # allowed by mcpAllow: not asked
    (started,) = [e for e in tiller.events_of("toolStarted") if e["name"] == IMAGE_TOOL]
    assert started["permission"] == {"decision": "allow", "by": "mcpAllow"}
    answered = result_of(api.message_requests()[2], "toolu_call")
    kinds = [b["type"] for b in answered["content"]]
    assert "image" in kinds
    image = next(b for b in answered["content"] if b["type"] == "image")
    assert image["source"]["media_type"] == "image/png"


async def test_plan_mode_denies_an_mcp_tool_not_allowed_as_read_only(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(
        permissionMode="plan",
        mcpServers={"everything": everything()},
        mcpAllow=[ECHO_TOOL],  # allowed, but not as read-only
    )
    api.enqueue(
        {"content": [tool_use("tool_search", "toolu_search", query="select:" + ECHO_TOOL)]},
        {"content": [tool_use(ECHO_TOOL, "toolu_call", message="hello")]},
        {"content": [tool_use("exit_plan_mode", "toolu_plan", plan="Nothing to do.")]},
    )
    ended = await tiller.run("say hello back", timeout=60)
    assert ended["outcome"] == "completed"
    answered = result_of(api.message_requests()[2], "toolu_call")
    assert answered["is_error"] is True
    assert "in plan mode an MCP tool runs only if the user allowed it as read-only" in shown(
        answered
    )
    assert tiller.asked == [("tiller/approvePlan", tiller.asked[0][1])]


async def test_plan_mode_runs_an_mcp_tool_allowed_as_read_only(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(
        permissionMode="plan",
        mcpServers={"everything": everything()},
        mcpReadOnly=["mcp__everything__*"],
    )
    api.enqueue(
        {"content": [tool_use("tool_search", "toolu_search", query="select:" + ECHO_TOOL)]},
        {"content": [tool_use(ECHO_TOOL, "toolu_call", message="hello")]},
        {"content": [tool_use("exit_plan_mode", "toolu_plan", plan="Nothing to do.")]},
    )
    ended = await tiller.run("say hello back", timeout=60)
    assert ended["outcome"] == "completed"
    answered = result_of(api.message_requests()[2], "toolu_call")
    assert not answered.get("is_error")
    assert shown(answered) == "Echo: hello"


async def test_a_crash_mid_call_is_an_error_result_naming_the_server(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(
        mcpServers={"crashy": misbehaving("crash")}, mcpAllow=["mcp__crashy__*"]
    )
    api.enqueue(*search_then_call("mcp__crashy__work", {"what": "x"}, "work"))
    ended = await tiller.run("do the work", timeout=60)
    assert ended["outcome"] == "completed"
    answered = result_of(api.message_requests()[2], "toolu_call")
    assert answered["is_error"] is True
    assert "MCP server 'crashy' stopped during the call" in shown(answered)


async def test_a_server_that_never_answers_ends_the_call_not_the_turn(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(
        mcpServers={"silent": misbehaving("silent")},
        mcpAllow=["mcp__silent__*"],
        mcpCallSeconds=1,
    )
    api.enqueue(*search_then_call("mcp__silent__work", {}, "work"))
    ended = await tiller.run("do the work", timeout=60)
    assert ended["outcome"] == "completed"
    answered = result_of(api.message_requests()[2], "toolu_call")
    assert answered["is_error"] is True
    assert "'silent' did not answer 'work' within 1 s" in shown(answered)


async def test_a_bad_server_entry_is_a_notice_naming_it_and_the_others_work(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / ".mcp.json").write_text('{"mcpServers": {"broken": {"type": "ftp"}}}')
    tiller: Tiller = await start(mcpServers={"everything": everything()}, mcpAllow=[ECHO_TOOL])
    api.enqueue(*search_then_call(ECHO_TOOL, {"message": "hello"}, "echo"))
    ended = await tiller.run("say hello back", timeout=60)
    assert ended["outcome"] == "completed"
    notices = [e["text"] for e in tiller.events_of("notice")]
    assert any(
        f"{workspace / '.mcp.json'}: MCP server 'broken':" in n and "'ftp'" in n for n in notices
    ), notices
    assert not result_of(api.message_requests()[2], "toolu_call").get("is_error")


async def test_slash_mcp_starts_the_servers_and_lists_their_state(
    start: Any, workspace: Path
) -> None:
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"repo": {"command": "run-me"}}})
    )
    tiller: Tiller = await start(
        mcpServers={"everything": everything(), "ghost": {"command": "no-such-mcp-server"}}
    )
    before = await tiller.request("tiller/mcp/list", {})
    assert {s["name"]: s["state"] for s in before["servers"]} == {
        "everything": "notStarted", "ghost": "notStarted", "repo": "blocked",
    }  # fmt: skip
    answer = await tiller.request("tiller/prompt", {"text": "/mcp"})
    assert answer["status"] == "handled"
    message = answer["message"]
    assert "everything (stdio, initializationOptions.mcpServers): running, 13 tools" in message
    assert ECHO_TOOL in message
    assert "ghost (stdio, initializationOptions.mcpServers): failed: command not found" in message
    assert f"repo (stdio, {workspace / '.mcp.json'}): blocked: not enabled" in message
    after = await tiller.request("tiller/mcp/list", {})
    (server,) = [s for s in after["servers"] if s["name"] == "everything"]
    assert server["state"] == "running" and "mcp__everything__get-sum" in server["tools"]


async def test_an_interrupt_cancels_a_hanging_mcp_call_at_once(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(
        mcpServers={"silent": misbehaving("silent")}, mcpAllow=["mcp__silent__*"]
    )  # the default call timeout (120 s) is far away: only the interrupt ends the call
    api.enqueue(*search_then_call("mcp__silent__work", {}, "work"))
    started = await tiller.prompt("do the work")
    turn_id = started["turnId"]
    await tiller.wait_for(
        lambda: any(e["name"] == "mcp__silent__work" for e in tiller.events_of("toolStarted")),
        timeout=60,
    )
    await tiller.request("tiller/interrupt")
    ended = await tiller.turn_end(turn_id)
    assert ended["outcome"] == "interrupted"
    (finished,) = [e for e in tiller.events_of("toolFinished") if e["name"] == "mcp__silent__work"]
    assert finished["status"] == "interrupted"


def thinking(value: str) -> dict[str, object]:
    return {"type": "thinking", "thinking": value}  # the fake signs it, bound to its prefix


async def test_servers_starting_and_crashing_mid_session_never_break_bound_thinking(
    start: Any, api: FakeMessagesAPI
) -> None:
    """With thinking on a model that binds thinking to its prefix (the fake answers 400
    "bound to a different conversation" when anything before a block changed): a search that
    starts two servers, a call whose server crashes, and a later turn all go through."""
    both = "select:mcp__crashy__work," + ECHO_TOOL
    tiller: Tiller = await start(
        model="claude-sonnet-5-5",
        thinking={"enabled": True},
        mcpServers={"everything": everything(), "crashy": misbehaving("crash")},
        mcpAllow=["mcp__*"],
    )
    api.enqueue(
        {"content": [thinking("find"), tool_use("tool_search", "s1", query="list")]},
        {"content": [thinking("load"), tool_use("tool_search", "s2", query=both)]},
        {"content": [thinking("work"), tool_use("mcp__crashy__work", "c1", what="x")]},
        {"content": [thinking("echo"), tool_use(ECHO_TOOL, "t1", message="hello")]},
        {"content": [thinking("done"), text("Done.")]},
        {"content": [thinking("again"), tool_use("mcp__crashy__work", "c2", what="y")]},
        {"content": [thinking("over"), text("Still crashing.")]},
    )  # fmt: skip
    first = await tiller.run("use the servers", timeout=90)
    assert first["outcome"] == "completed", first
    second = await tiller.run("once more", timeout=90)
    assert second["outcome"] == "completed", second
    refused = [r for r in api.requests if r.status == 400]
    assert refused == [], [r.body for r in refused]
    requests = api.message_requests()
    assert len({prefix(r) for r in requests}) == 1
    crashed = result_of(requests[3], "c1")
    assert "MCP server 'crashy' stopped during the call" in shown(crashed)
    # The crashed server's tool keeps its definition: the reference loaded it, unchanged.
    definitions = [
        next(t for t in r.body["tools"] if t["name"] == "mcp__crashy__work") for r in requests[2:]
    ]
    assert all(d == definitions[0] for d in definitions)


async def test_a_permission_rule_allows_an_mcp_server_without_asking(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    settings = workspace / ".tiller" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["mcp__everything"]}}))
    tiller: Tiller = await start(mcpServers={"everything": everything()})
    api.enqueue(*search_then_call(ECHO_TOOL, {"message": "hello"}, "select:" + ECHO_TOOL))
    ended = await tiller.run("say hello back", timeout=60)
    assert ended["outcome"] == "completed"
    assert tiller.asked == []
    (started,) = [e for e in tiller.events_of("toolStarted") if e["name"] == ECHO_TOOL]
    assert started["permission"]["decision"] == "allow"
    assert "mcp__everything" in started["permission"]["by"]
    assert not result_of(api.message_requests()[2], "toolu_call").get("is_error")
