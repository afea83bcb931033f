"""Tiller's MCP client against real servers nobody here wrote (server-everything,
server-filesystem, mcp-server-git, mcp-server-time) and a misbehaving one of our own: tools,
images, resources, a crash mid-call, a server that never answers, stderr in the log, and no
secret in a server's environment."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from mcp_servers import (
    EVERYTHING,
    INSTALLED,
    NOT_INSTALLED,
    everything,
    filesystem,
    git,
    misbehaving,
    time_server,
)
from tiller.extend.mcp.config import McpConfig, ServerConfig, parse_server
from tiller.extend.mcp.manager import McpManager
from tiller.extend.mcp.server import Failed, McpServer, McpSettings, Running
from tiller.jsontypes import JSON
from tiller.model.history import Message, text_block
from tiller.tools.mcp import Absent, McpTool
from tiller.tools.mcp_results import convert
from tiller.tools.registry import Toolset, default_tools

pytestmark = pytest.mark.skipif(not INSTALLED, reason=NOT_INSTALLED)


@pytest_asyncio.fixture
async def servers() -> AsyncIterator[list[McpServer]]:
    started: list[McpServer] = []
    yield started
    await asyncio.gather(*(s.stop() for s in started))


def make(
    started: list[McpServer], name: str, raw: JSON, settings: McpSettings | None = None
) -> McpServer:
    config = ServerConfig(name, parse_server(raw, {}).launch, "test", "client")
    server = McpServer(config, settings or McpSettings())
    started.append(server)
    return server


def texts(content: tuple[JSON, ...]) -> str:
    return "\n".join(str(c.get("text", "")) for c in content)


async def test_time_server_lists_and_runs_its_tools(servers: list[McpServer]) -> None:
    time = make(servers, "time", time_server())
    assert {t.name for t in await time.tools()} >= {"get_current_time", "convert_time"}
    outcome = await time.call("get_current_time", {"timezone": "Europe/Paris"})
    assert outcome.error is None and not outcome.is_error
    assert '"timezone": "Europe/Paris"' in texts(outcome.content)


async def test_git_server_reads_the_repository(servers: list[McpServer], tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(repo)], check=True)
    (repo / "new.txt").write_text("hello\n")
    server = make(servers, "git", git(repo))
    outcome = await server.call("git_status", {"repo_path": str(repo)})
    assert outcome.error is None, outcome.error
    assert "new.txt" in texts(outcome.content)


async def test_filesystem_server_reads_inside_its_root_only(
    servers: list[McpServer], tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("the notes\n")
    server = make(servers, "fs", filesystem(tmp_path))
    inside = await server.call("read_text_file", {"path": str(tmp_path / "notes.md")})
    assert "the notes" in texts(inside.content)
    outside = await server.call("read_text_file", {"path": "/etc/hostname"})
    assert outside.is_error or outside.error is not None


async def test_an_image_result_becomes_an_image_block(servers: list[McpServer]) -> None:
    server = make(servers, "everything", everything())
    outcome = await server.call("get-tiny-image", {})
    converted = convert(outcome.content)
    images = [b for b in converted.blocks if b["type"] == "image"]
    assert len(images) == 1
    assert images[0]["source"]["type"] == "base64"
    assert images[0]["source"]["media_type"] == "image/png"
    assert "[image image/png]" in converted.text


async def test_an_embedded_resource_becomes_text_naming_its_uri(servers: list[McpServer]) -> None:
    server = make(servers, "everything", everything())
    outcome = await server.call("get-resource-reference", {"resourceType": "Text", "resourceId": 1})
    converted = convert(outcome.content)
    assert any(
        b["type"] == "text" and b["text"].startswith("Resource <") for b in converted.blocks
    ), converted.blocks


async def test_resource_links_become_text(servers: list[McpServer]) -> None:
    server = make(servers, "everything", everything())
    outcome = await server.call("get-resource-links", {"count": 2})
    converted = convert(outcome.content)
    assert sum(b["text"].startswith("Resource link ") for b in converted.blocks) == 2


async def test_no_secret_reaches_a_server_unless_configured(
    servers: list[McpServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BILLING_API_KEY", "sekrit-not-for-servers")
    monkeypatch.setenv("DEPLOY_TOKEN", "sekrit-configured")
    monkeypatch.setenv("PLAIN_SETTING", "plain-value")
    raw = {**everything(), "env": {"GIVEN_TOKEN": "${DEPLOY_TOKEN}"}}
    server = McpServer(
        ServerConfig("everything", parse_server(raw, {"DEPLOY_TOKEN": "sekrit-configured"}).launch,
                     "test", "client"),
        McpSettings(),
    )  # fmt: skip
    servers.append(server)
    shown = texts((await server.call("get-env", {})).content)
    assert "PLAIN_SETTING" in shown  # the tools' environment, minus secrets
    assert "sekrit-not-for-servers" not in shown
    assert "BILLING_API_KEY" not in shown
    assert '"GIVEN_TOKEN": "sekrit-configured"' in shown
    assert "DEPLOY_TOKEN" not in shown


async def test_a_server_that_crashes_mid_call_is_named_and_restarts(
    servers: list[McpServer],
) -> None:
    server = make(servers, "crashy", misbehaving("crash"))
    assert [t.name for t in await server.tools()] == ["work"]
    outcome = await server.call("work", {"what": "x"})
    assert outcome.error is not None
    assert "'crashy' stopped during the call" in outcome.error
    assert "restarts on the next call" in outcome.error
    assert isinstance(server.state, Failed)
    assert [t.name for t in server.known] == ["work"]  # still defined for the model
    assert [t.name for t in await server.tools()] == ["work"]  # started again
    assert isinstance(server.state, Running)


async def test_a_server_that_never_answers_times_out_with_an_error(
    servers: list[McpServer],
) -> None:
    server = make(servers, "silent", misbehaving("silent"), McpSettings(call_seconds=1))
    outcome = await server.call("work", {})
    assert outcome.error is not None
    assert "'silent' did not answer 'work' within 1 s" in outcome.error


async def test_a_call_in_flight_is_cancelled_at_once(servers: list[McpServer]) -> None:
    server = make(servers, "silent", misbehaving("silent"))
    await server.tools()
    call = asyncio.ensure_future(server.call("work", {}))
    await asyncio.sleep(0)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_a_missing_command_fails_with_its_name(servers: list[McpServer]) -> None:
    server = make(servers, "ghost", {"command": "no-such-mcp-server-here"})
    outcome = await server.call("anything", {})
    assert outcome.error is not None
    assert "'ghost' is not available: command not found (no-such-mcp-server-here)" in outcome.error


async def test_a_servers_stderr_goes_to_the_log_under_its_name(
    servers: list[McpServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tiller.extend.mcp.server")
    server = make(servers, "noisy", misbehaving("crash"))
    await server.tools()
    wanted = "MCP server noisy: misbehaving server (crash) started"
    for _ in range(500):  # the pump thread logs as the line arrives
        if any(wanted in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.01)
    assert any(wanted in r.getMessage() for r in caplog.records)


@contextlib.asynccontextmanager
async def everything_over(transport: str) -> AsyncIterator[str]:
    """server-everything serving ``transport`` (streamableHttp | sse) on a free local port;
    yields its base URL once it says it listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        str(EVERYTHING), transport, env={**os.environ, "PORT": str(port)},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    try:
        line = b""
        while not any(w in line for w in (b"running on port", b"listening on port")):
            line = await asyncio.wait_for(process.stderr.readline(), 30)
            assert line, "server-everything ended before it listened"
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        await process.wait()


async def test_a_streamable_http_server_lists_and_runs_tools(servers: list[McpServer]) -> None:
    async with everything_over("streamableHttp") as base:
        server = make(servers, "web", {"type": "http", "url": f"{base}/mcp"})
        assert "echo" in {t.name for t in await server.tools()}
        outcome = await server.call("echo", {"message": "over http"})
        assert texts(outcome.content) == "Echo: over http"
        await server.stop()


async def test_an_sse_server_lists_and_runs_tools(servers: list[McpServer]) -> None:
    async with everything_over("sse") as base:
        server = make(servers, "old", {"type": "sse", "url": f"{base}/sse"})
        outcome = await server.call("echo", {"message": "over sse"})
        assert texts(outcome.content) == "Echo: over sse"
        await server.stop()


async def test_a_resumed_history_gets_its_loaded_tools_real_definitions_back(
    tmp_path: Path,
) -> None:
    """A session resumed in a new process: its history loaded mcp__time__get_current_time;
    before the turn, the servers start, so the real definition is sent, not a placeholder."""
    name = "mcp__time__get_current_time"
    config = McpConfig(
        {"time": ServerConfig("time", parse_server(time_server(), {}).launch, "t", "client")}
    )
    manager = McpManager(config, McpSettings())
    history = (
        Message("user", (text_block("hi"),)),
        Message("assistant", ({"type": "tool_use", "id": "t1", "name": "tool_search",
                               "input": {"query": "time"}},)),
        Message("user", ({"type": "tool_result", "tool_use_id": "t1",
                          "content": [{"type": "tool_reference", "tool_name": name}]},)),
    )  # fmt: skip
    toolset = Toolset(default_tools(), manager, lambda: history)
    try:
        assert isinstance(toolset[name], Absent)
        await toolset.prepare()
        assert isinstance(toolset[name], McpTool)
        assert "timezone" in json.dumps(toolset[name].spec()["input_schema"])
    finally:
        await manager.close()
