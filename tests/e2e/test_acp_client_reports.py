"""Regressions found by real ACP clients (CodeCompanion.nvim, agent-shell, acpx) against
``tiller acp``; driven through the protocol by the SDK's client side, as in test_acp.py."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    PermissionOption,
    ToolCallUpdate,
)

from fakeapi import FakeMessagesAPI
from test_acp import SERVER, Editor, agent_env, allow_once, as_client, assert_valid_history
from test_acp import start as start  # the fixture
from test_turn_basics import text, tool_use


async def test_a_new_session_is_listed_and_loadable_before_its_first_prompt(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    # acpx's "sessions new, then prompt" loads the new session in a fresh agent process:
    # it got -32602 "nothing stored under it" and silently made a second session.
    api.enqueue({"content": [text("Hello again.")]})
    first = Editor()
    async with start(first) as agent:
        session_id = await agent.new()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="acceptEdits")
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [session_id]
        assert listed.sessions[0].title is None  # no prompt yet, so no title

    second = Editor()
    async with start(second) as agent:
        listed = await agent.conn.list_sessions()
        assert [s.session_id for s in listed.sessions] == [session_id]
        loaded = await agent.conn.load_session(
            cwd=str(workspace), session_id=session_id, mcp_servers=[]
        )
        assert loaded.modes is not None and loaded.modes.current_mode_id == "acceptEdits"
        assert await agent.say(session_id, "first words") == "end_turn"
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [(s.session_id, s.title) for s in listed.sessions] == [(session_id, "first words")]

    assert second.message_text() == "Hello again."
    [request] = api.message_requests()
    assert [m["role"] for m in request.body["messages"]] == ["user"]
    assert request.body["messages"][0]["content"][0]["text"] == "first words"


async def test_a_binary_embedded_resource_is_a_note_to_the_model_not_a_refusal(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    # agent-shell sends any binary @-mention as an embedded blob: the whole prompt was
    # refused with -32602 "resource content is not supported".
    picture = bytes(range(256)) * 4
    uri = (workspace / "logo.png").as_uri()
    api.enqueue({"content": [text("Noted.")]})
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        blob = EmbeddedResourceContentBlock(
            type="resource",
            resource=BlobResourceContents(
                uri=uri, blob=base64.b64encode(picture).decode(), mime_type="image/png"
            ),
        )
        answer = await agent.conn.prompt(
            session_id=session_id, prompt=[text_block("what is in "), blob]
        )
        assert answer.stop_reason == "end_turn"

    [request] = api.message_requests()
    sent = request.body["messages"][0]["content"][0]["text"]
    assert sent.startswith("what is in @logo.png")
    assert f"[binary resource {uri}, image/png, 1024 bytes: not shown to the model]" in sent
    assert editor.message_text() == "Noted."


async def test_a_permission_answered_cancelled_cancels_the_turn(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    # The answer {"outcome": "cancelled"} was a plain "no": a new model request started at
    # once and the turn could end end_turn before the client's session/cancel arrived.
    async def cancelled(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> None:
        return None  # the Editor answers {"outcome": {"outcome": "cancelled"}}

    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="x.txt", content="x")]},
        {"content": [text("Back.")]},
    )
    editor = Editor(choose=cancelled)
    async with start(editor) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "write x") == "cancelled"
        # The turn has ended (its answer came after turnEnded): no request followed.
        assert len(api.message_requests()) == 1
        assert editor.statuses("toolu_w")[-1] == "failed"
        editor.choose = allow_once
        assert await agent.say(session_id, "never mind") == "end_turn"

    assert not (workspace / "x.txt").exists()
    assert len(api.message_requests()) == 2
    assert editor.message_text() == "Back."
    assert_valid_history(api)


async def test_the_sdk_starts_loading_right_after_initialize(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    # The first prompt waited 1.3-3.7 s for the Anthropic SDK to be imported: it must be
    # loading (and here loaded) before any session or prompt exists.
    env = agent_env(api, tmp_path / "data")
    env["TILLER_LOG_LEVEL"] = "INFO"
    async with spawn_agent_process(
        as_client(Editor()),
        *SERVER,
        env=env,
        cwd=workspace,
        transport_kwargs={"stderr": asyncio.subprocess.PIPE},
    ) as (conn, process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        stderr = process.stderr
        assert stderr is not None
        logged: list[str] = []

        async def imported() -> None:
            while line := (await stderr.readline()).decode():
                logged.append(line)
                if "imported tiller.model.anthropic_provider" in line:
                    return
            raise AssertionError(f"the agent exited without loading the SDK: {logged}")

        await asyncio.wait_for(imported(), 30)
    assert api.message_requests() == []
