"""Regressions found by real ACP clients (CodeCompanion.nvim, agent-shell, acpx) against
``tiller acp``; driven through the protocol by the SDK's client side, as in test_acp.py."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    PermissionOption,
    ResourceContentBlock,
    ToolCallUpdate,
)

from fakeapi import FakeMessagesAPI
from test_acp import (
    EXIT_WAIT,
    SERVER,
    Editor,
    agent_env,
    allow_once,
    as_client,
    assert_valid_history,
)
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
        transport_kwargs={"stderr": asyncio.subprocess.PIPE, **EXIT_WAIT},
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


# --- issue 36: three real ACP clients -----------------------------------------------------


def named(options: list[PermissionOption]) -> list[tuple[str, str, str]]:
    return [(o.option_id, o.kind, o.name) for o in options]


async def test_permission_options_tell_a_session_answer_from_a_rule_kept_in_a_file(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    # The docs said commands offer allowSession; the server sent allowAlways ("Always allow"),
    # which writes a lasting rule, and nothing said so. The modes read "Default", not the
    # words every other face uses.
    async def kept_if_offered(
        tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> str | None:
        ids = [o.option_id for o in options]
        return "allowAlways" if "allowAlways" in ids else "allowSession"

    api.enqueue(
        {"content": [tool_use("bash", "toolu_1", command="touch one")]},
        {"content": [text("One.")]},
        {"content": [tool_use("write_file", "toolu_w", path="a.txt", content="a\n")]},
        {"content": [tool_use("bash", "toolu_2", command="touch two")]},
        {"content": [text("Two.")]},
    )
    editor = Editor(choose=kept_if_offered)
    async with start(editor) as agent:
        created = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert created.modes is not None
        modes = [(m.id, m.name) for m in created.modes.available_modes]
        assert modes == [("default", "Ask before edits"), ("acceptEdits", "Accept edits"),
                         ("plan", "Plan")]  # fmt: skip
        session_id = created.session_id
        # Not trusted yet: a rule in the folder's file would grant nothing, so none is offered.
        assert await agent.say(session_id, "make one") == "end_turn"
        assert await agent.say(session_id, "/trust yes") == "end_turn"
        assert await agent.say(session_id, "make a.txt and two") == "end_turn"

    untrusted, edit, trusted = (options for _call, options in editor.asked)
    session_only = "Allow this command for this session"
    assert named(untrusted) == [
        ("allow", "allow_once", "Allow once"),
        ("allowSession", "allow_always", session_only),
        ("deny", "reject_once", "Reject"),
    ]
    assert named(edit) == [
        ("allow", "allow_once", "Allow once"),
        ("allowSession", "allow_always", "Allow all edits for this session"),
        ("deny", "reject_once", "Reject"),
    ]
    rule = "Always allow this command (writes a rule to .tiller/settings.local.json)"
    assert named(trusted) == [
        ("allow", "allow_once", "Allow once"),
        ("allowSession", "allow_always", session_only),
        ("allowAlways", "allow_always", rule),
        ("deny", "reject_once", "Reject"),
    ]
    kept = json.loads((workspace / ".tiller" / "settings.local.json").read_text())
    assert kept["permissions"]["allow"] == ["Bash(touch two)"]  # the session answer kept none
    assert (workspace / "one").exists() and (workspace / "two").exists()


async def test_a_custom_commands_notice_is_a_line_of_its_own_and_a_load_shows_what_was_typed(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    # The notice ran into the answer (`/greet (project: …/greet.md)GREETED-OK`); a load replayed
    # the expanded text as a user message nobody typed, and it was the session's title.
    commands = workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text("Say GREETED-OK to $ARGUMENTS.\n")
    api.enqueue({"content": [text("GREETED-OK")]})
    first = Editor()
    async with start(first) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "/greet World") == "end_turn"
    notice = f"*/greet (project: {commands / 'greet.md'})*\n\n"
    assert first.message_text() == f"{notice}GREETED-OK"
    assert api.message_requests()[0].body["messages"][0]["content"][0]["text"] == (
        "Say GREETED-OK to World."
    )

    second = Editor()
    async with start(second) as agent:
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.title for s in listed.sessions] == ["/greet World"]
        await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        typed = [u.content.text for u in second.of("user_message_chunk")]
        assert typed == ["/greet World"]
        assert second.message_text() == f"{notice}GREETED-OK"


async def test_separate_text_blocks_of_a_prompt_reach_the_model_as_paragraphs(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    # Two text blocks were glued: `Talk slowly.Go on.`
    (workspace / "a.py").write_text("x = 1\n")
    link = ResourceContentBlock(
        type="resource_link", name="a.py", uri=(workspace / "a.py").as_uri()
    )
    api.enqueue({"content": [text("Fine.")]}, {"content": [text("Seen.")]})
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        blocks = [text_block("Talk slowly."), text_block("Go on.")]
        assert (await agent.conn.prompt(session_id=session_id, prompt=blocks)).stop_reason == (
            "end_turn"
        )
        # A sentence split around a mention keeps the spaces the client put in.
        mention = [text_block("look at "), link, text_block(" please")]
        assert (await agent.conn.prompt(session_id=session_id, prompt=mention)).stop_reason == (
            "end_turn"
        )
    first, second = api.message_requests()
    assert first.body["messages"][0]["content"][-1]["text"] == "Talk slowly.\n\nGo on."
    assert second.body["messages"][-1]["content"][-1]["text"] == "look at @a.py please"


async def test_an_unchanged_plan_is_not_sent_again_at_the_end_of_every_turn(
    start: Any, api: FakeMessagesAPI
) -> None:
    # agent-shell draws every `plan` update as a new Plan block: one came under every answer.
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
    ]
    api.enqueue(
        {"content": [tool_use("todo_write", "toolu_t", todos=todos)]},
        {"content": [text("Planned.")]},
        {"content": [text("Still on it.")]},
        {"content": [text("And still.")]},
    )
    editor = Editor()
    async with start(editor) as agent:
        session_id = await agent.new()
        assert await agent.say(session_id, "make a plan") == "end_turn"
        plans = len(editor.of("plan"))
        assert await agent.say(session_id, "go on") == "end_turn"
        assert await agent.say(session_id, "and on") == "end_turn"
        assert "And still." in editor.message_text()
    assert plans == 2  # while the turn ran, then with nobody on the item in progress
    assert len(editor.of("plan")) == plans


async def test_a_load_replays_the_last_50_prompts_after_a_line_saying_earlier_ones_are_left_out(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    # A load replayed the whole transcript: ~350 turns a session took up to 1.1 s a load.
    prompts = [f"question {n}" for n in range(51)]
    api.enqueue(*({"content": [text(f"answer {n}")]} for n in range(51)))
    first = Editor()
    async with start(first) as agent:
        session_id = await agent.new()
        for words in prompts:
            assert await agent.say(session_id, words) == "end_turn"
        assert await agent.say(session_id, "/mode plan") == "end_turn"  # a prompt too

    second = Editor()
    async with start(second) as agent:
        await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    shown = [u.content.text for u in second.of("user_message_chunk")]
    assert shown == [*prompts[2:], "/mode plan"]
    said = [u.content.text for u in second.of("agent_message_chunk")]
    left_out = "*Earlier turns are not shown here: a loaded session shows its last 50 prompts.*"
    assert said == [f"{left_out}\n\n", *(f"answer {n}" for n in range(2, 51)), "Mode: plan"]
