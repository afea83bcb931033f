"""ACP sessions with ``additionalDirectories`` (ACP's session/new and session/load, advertised
with ``sessionCapabilities.additionalDirectories``): each directory is a root after ``cwd``,
its files named by the folder's name, and the editor's tool call locations point into it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from fakeapi import FakeMessagesAPI
from test_acp import Editor, allow_once
from test_acp import start as start  # the fixture
from test_turn_basics import text, tool_use


async def test_additional_directories_are_roots_of_the_acp_session(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    api_root = tmp_path / "api"
    api_root.mkdir()
    (api_root / "server.py").write_text("PORT = 8000\n")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_r", path="api/server.py")]},
        {
            "content": [
                tool_use(
                    "edit_file", "toolu_e", path="api/server.py", old_string="8000",
                    new_string="9000",
                )
            ]
        },
        {"content": [text("Moved it.")]},
    )  # fmt: skip
    editor = Editor(choose=allow_once)
    async with start(editor) as agent:
        init = await agent.conn.initialize(protocol_version=1)
        assert init.agent_capabilities.session_capabilities.additional_directories is not None
        with pytest.raises(RequestError):
            await agent.conn.new_session(
                cwd=str(workspace), additional_directories=["relative/dir"], mcp_servers=[]
            )
        session = await agent.conn.new_session(
            cwd=str(workspace), additional_directories=[str(api_root)], mcp_servers=[]
        )
        assert await agent.say(session.session_id, "move the port") == "end_turn"
    assert (api_root / "server.py").read_text() == "PORT = 9000\n"
    read = editor.call("toolu_r")
    assert read.locations[0].path == str(api_root / "server.py")
    system = "".join(b["text"] for b in api.message_requests()[0].body["system"])
    assert f"- api: {api_root}" in system


async def test_a_loaded_session_keeps_its_stored_directories_and_list_reports_them(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """Issue 22 item 5: roots were not stored with a session; a session/load without
    additionalDirectories lost them, and session/list could not report them."""
    api_root = tmp_path / "api"
    api_root.mkdir()
    (api_root / "server.py").write_text("PORT = 8000\n")
    api.enqueue(
        {"content": [text("Two folders.")]},
        {"content": [tool_use("read_file", "toolu_r", path="api/server.py")]},
        {"content": [text("Read it.")]},
    )
    async with start(Editor()) as agent:
        session = await agent.conn.new_session(
            cwd=str(workspace), additional_directories=[str(api_root)], mcp_servers=[]
        )
        assert await agent.say(session.session_id, "hello") == "end_turn"

    second = Editor(choose=allow_once)
    async with start(second) as agent:
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.additional_directories for s in listed.sessions] == [[str(api_root)]]
        await agent.conn.load_session(
            cwd=str(workspace), session_id=session.session_id, mcp_servers=[]
        )
        assert await agent.say(session.session_id, "read the port") == "end_turn"
    assert second.statuses("toolu_r")[-1] == "completed"
    read = second.call("toolu_r")
    assert read.locations[0].path == str(api_root / "server.py")  # the stored root's file
    result = api.message_requests()[-1].body["messages"][-1]["content"][0]
    assert "PORT = 8000" in str(result["content"])
