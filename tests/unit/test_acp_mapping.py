"""The pure parts of the ACP face: events -> updates, outcomes -> stop reasons, prompts."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentMessageChunk,
    AudioContentBlock,
    ClientCapabilities,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileSystemCapabilities,
    ImageContentBlock,
    ReadTextFileResponse,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    ToolCallProgress,
    ToolCallStart,
    WriteTextFileResponse,
)

from tiller.core.turn.attachments import ImageAttachment, TextAttachment
from tiller.core.turn.scheduler import ToolCall
from tiller.faces.acp.agent import advertised_commands
from tiller.faces.acp.files import ClientFiles
from tiller.faces.acp.history import recent
from tiller.faces.acp.permissions import tool_options
from tiller.faces.acp.prompt_blocks import PromptBlock, prompt_of
from tiller.faces.acp.terminal import ClientTerminal, exit_code_of, terminal_env
from tiller.faces.acp.updates import SessionUpdates, ToolCalls, describe_tool, replay, turn_end
from tiller.jsontypes import JSON
from tiller.workspace.tool_env import tool_env

WS = Path("/work/ws")


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"outcome": "completed"}, "end_turn"),
        ({"outcome": "interrupted", "cause": "user"}, "cancelled"),
        ({"outcome": "stopped"}, "max_turn_requests"),
        ({"outcome": "refused"}, "refusal"),
        ({"outcome": "failed", "error": {"kind": "output_limit", "message": "cut"}}, "max_tokens"),
    ],
)
def test_turn_outcomes_map_to_stop_reasons(fields: dict[str, object], reason: str) -> None:
    assert turn_end(fields).stop_reason == reason


def test_a_failed_turn_carries_its_error_instead_of_a_stop_reason() -> None:
    error = {"kind": "overloaded", "message": "busy", "retryable": True}
    end = turn_end({"outcome": "failed", "error": error})
    assert end.stop_reason is None and end.error == error


def test_an_edit_shows_its_diff_and_absolute_location() -> None:
    view = describe_tool(
        "edit_file", {"path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"}, WS
    )
    assert (view.kind, view.title) == ("edit", "Edit src/a.py")
    assert view.locations[0].path == "/work/ws/src/a.py"
    diff = view.content[0]
    assert (diff.type, diff.old_text, diff.new_text) == ("diff", "x = 1", "x = 2")


def test_a_read_with_an_offset_points_at_the_line() -> None:
    view = describe_tool("read_file", {"path": "/work/ws/b.txt", "offset": 40}, WS)
    assert view.kind == "read"
    assert (view.locations[0].path, view.locations[0].line) == ("/work/ws/b.txt", 40)


def test_a_call_that_runs_without_asking_goes_in_progress_at_once() -> None:
    view = SessionUpdates(ToolCalls(WS))
    started = {
        "type": "toolStarted",
        "toolUseId": "t1",
        "name": "grep",
        "input": {"pattern": "x"},
        "permission": {"decision": "allow", "by": "read-only"},
    }
    updates = view.updates(started)
    assert [(u.session_update, u.status) for u in updates] == [
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
    ]
    asked = {
        "type": "toolStarted",
        "toolUseId": "t2",
        "name": "bash",
        "input": {"command": "rm x"},
        "permission": {"decision": "ask", "by": "mode default"},
    }
    assert [u.status for u in view.updates(asked)] == ["pending"]
    denied = {"type": "toolFinished", "toolUseId": "t2", "status": "denied", "output": "Denied"}
    (finished,) = view.updates(denied)
    assert finished.status == "failed"
    assert isinstance(finished, ToolCallProgress) and finished.content
    (shown,) = finished.content
    assert isinstance(shown, ContentToolCallContent)
    assert isinstance(shown.content, TextContentBlock) and "Denied" in shown.content.text


def test_the_plan_call_stays_open_until_it_finishes() -> None:
    calls = ToolCalls(WS)
    view = SessionUpdates(calls)
    plan = {
        "type": "toolStarted",
        "toolUseId": "p",
        "name": "exit_plan_mode",
        "input": {"plan": "1."},
    }
    assert [u.status for u in view.updates(plan)] == ["pending"]
    assert calls.open_plan_call() == "p"
    view.updates({"type": "toolFinished", "toolUseId": "p", "status": "ok", "output": ""})
    assert calls.open_plan_call() is None


def test_replay_redraws_prompts_text_tools_and_failures() -> None:
    entries: list[JSON] = [
        {"kind": "turnStarted", "prompt": "hi"},
        {"kind": "assistantThinking", "text": "hmm"},
        {"kind": "assistantText", "text": "Reading."},
        {"kind": "toolStarted", "toolUseId": "r", "name": "read_file", "input": {"path": "a"}},
        {"kind": "toolFinished", "toolUseId": "r", "status": "ok", "output": "1\tx"},
        {"kind": "planRequested", "plan": "ignored: the tool call shows it"},
        {"kind": "turnEnded", "outcome": "failed", "error": {"kind": "server", "message": "boom"}},
    ]  # fmt: skip
    kinds = [u.session_update for u in replay(entries, WS)]
    assert kinds == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]


def test_an_approved_call_goes_in_progress_live_and_replayed_alike() -> None:
    events: list[JSON] = [
        {"type": "toolStarted", "toolUseId": "w", "name": "write_file",
         "input": {"path": "a", "content": "x"},
         "permission": {"decision": "ask", "by": "mode default"}},
        {"type": "confirmRequested", "toolUseId": "w", "name": "write_file",
         "preview": {"kind": "diff", "path": "a"}},
        {"type": "confirmDecided", "toolUseId": "w", "decision": "allow"},
        {"type": "toolFinished", "toolUseId": "w", "name": "write_file", "status": "ok",
         "output": "wrote a"},
        {"type": "command", "text": "/mode plan", "message": "Mode: plan"},
    ]  # fmt: skip
    live = SessionUpdates(ToolCalls(WS))
    shown = [
        (u.session_update, getattr(u, "status", None)) for e in events for u in live.updates(e)
    ]
    assert shown == [
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", "completed"),
        ("agent_message_chunk", None),  # the client sent the command: its answer only
    ]
    entries = [{"kind": e["type"], **{k: v for k, v in e.items() if k != "type"}} for e in events]
    replayed = [(u.session_update, getattr(u, "status", None)) for u in replay(entries, WS)]
    assert replayed == [*shown[:3], ("user_message_chunk", None), ("agent_message_chunk", None)]


def test_session_switching_commands_are_not_advertised() -> None:
    commands = {c.name: c for c in advertised_commands()}
    assert {"help", "mode", "model", "plan"} <= commands.keys()
    assert not commands.keys() & {"clear", "resume", "fork", "queue"}
    hint = commands["mode"].input
    assert hint is not None and hint.root.hint == "[name]"


def test_prompt_blocks_become_words_with_mentions_and_attachments() -> None:
    blocks: list[PromptBlock] = [
        TextContentBlock(type="text", text="look at "),
        ResourceContentBlock(type="resource_link", name="a.py", uri="file:///work/ws/src/a.py"),
        TextContentBlock(type="text", text=" and "),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(uri="file:///work/ws/b.txt", text="B"),
        ),
        ResourceContentBlock(type="resource_link", name="x", uri="https://example.com/x"),
    ]
    asked = prompt_of(blocks, WS)
    assert asked.text == "look at @src/a.py and @b.txt @https://example.com/x"
    assert asked.links == (WS / "src" / "a.py",)  # read when the prompt starts
    assert asked.attached == (TextAttachment("file", "b.txt", "B"),)


PNG_1PX = (  # a 1×1 png
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAA"
    "AABJRU5ErkJggg=="
)


def test_an_image_in_a_prompt_is_attached_as_an_image() -> None:
    image = ImageContentBlock(type="image", data=PNG_1PX, mime_type="image/png")
    asked = prompt_of([TextContentBlock(type="text", text="what is it?"), image], WS)
    assert asked.text == "what is it?"
    assert asked.attached == (ImageAttachment("image 1", "image/png", PNG_1PX),)


def test_an_image_whose_data_is_not_its_type_is_refused_naming_the_block() -> None:
    image = ImageContentBlock(type="image", data=PNG_1PX, mime_type="image/jpeg")
    with pytest.raises(RequestError) as err:
        prompt_of([image], WS)
    assert err.value.code == -32602
    assert "prompt[0].mediaType: the image was sent as image/jpeg" in str(err.value.data)


def test_audio_in_a_prompt_is_refused_as_advertised() -> None:
    audio = AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")
    with pytest.raises(RequestError) as err:
        prompt_of([audio], WS)
    assert err.value.code == -32602


# --- the editor's files (fs/*) -------------------------------------------------------------


class FsClient:
    """The fs half of an ACP client: serves one buffer, or fails every request."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, dict[str, object]]] = []

    async def read_text_file(self, **params: object) -> ReadTextFileResponse:
        self.calls.append(("read", params))
        if self.fail:
            raise RequestError(-32603, "no such buffer")
        return ReadTextFileResponse(content="unsaved\n")

    async def write_text_file(self, **params: object) -> WriteTextFileResponse:
        self.calls.append(("write", params))
        if self.fail:
            raise RequestError(-32603, "read-only buffer")
        return WriteTextFileResponse()


def fs_caps(read: bool, write: bool) -> ClientCapabilities:
    return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=read, write_text_file=write))


def test_client_files_exist_only_when_the_client_offers_fs_methods() -> None:
    client = cast(Client, FsClient())
    assert ClientFiles.offered(client, "ses_1", ClientCapabilities()) is None
    assert ClientFiles.offered(client, "ses_1", fs_caps(False, False)) is None
    files = ClientFiles.offered(client, "ses_1", fs_caps(True, False))
    assert files is not None and (files.reads, files.writes) == (True, False)


async def test_client_files_call_fs_methods_with_the_session_and_absolute_path() -> None:
    fake = FsClient()
    files = ClientFiles.offered(cast(Client, fake), "ses_1", fs_caps(True, True))
    assert files is not None
    assert await files.read_text(WS / "a.txt") == "unsaved\n"
    assert await files.write_text(WS / "a.txt", "new\n") is True
    assert fake.calls == [
        ("read", {"session_id": "ses_1", "path": "/work/ws/a.txt"}),
        ("write", {"session_id": "ses_1", "path": "/work/ws/a.txt", "content": "new\n"}),
    ]


async def test_client_files_fall_back_to_the_disk_when_not_offered_or_failing() -> None:
    fake = FsClient()
    only_reads = ClientFiles.offered(cast(Client, fake), "ses_1", fs_caps(True, False))
    assert only_reads is not None
    assert await only_reads.write_text(WS / "a.txt", "x") is False
    assert fake.calls == []  # never asked for what it did not offer
    failing = ClientFiles.offered(cast(Client, FsClient(fail=True)), "ses_1", fs_caps(True, True))
    assert failing is not None
    assert await failing.read_text(WS / "a.txt") is None
    assert await failing.write_text(WS / "a.txt", "x") is False


# --- the editor's terminals (terminal/*) ---------------------------------------------------


@pytest.mark.parametrize(
    ("code", "name", "expected"),
    [(0, None, 0), (3, None, 3), (None, "SIGKILL", -9), (None, "TERM", -15), (None, "NOPE", None)],
)
def test_terminal_exit_statuses_map_to_tillers_exit_codes(
    code: int | None, name: str | None, expected: int | None
) -> None:
    assert exit_code_of(code, name) == expected


def test_the_terminal_blanks_tillers_secrets_and_sets_its_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    monkeypatch.setenv("PLAIN_SETTING", "kept")
    changes = {v.name: v.value for v in terminal_env(tool_env())}
    assert changes["ANTHROPIC_API_KEY"] == ""
    assert changes["GIT_TERMINAL_PROMPT"] == "0"
    assert "PLAIN_SETTING" not in changes  # the editor's own environment has what it needs


def test_client_terminals_exist_only_when_the_client_offers_them() -> None:
    client = cast(Client, FsClient())
    assert ClientTerminal.offered(client, "ses_1", ClientCapabilities()) is None
    assert ClientTerminal.offered(client, "ses_1", ClientCapabilities(terminal=True)) is not None


def test_a_replayed_prompt_shows_its_attachments_as_the_editor_sent_them() -> None:
    entries = [
        {"seq": 1, "kind": "turnStarted", "prompt": "look",
         "attachments": [
             {"kind": "file", "name": "src/a.py"},
             {"kind": "image", "name": "s.png", "thumbnail": "data:image/png;base64,AAAA"},
             {"kind": "problems", "name": "problems"},
         ]},
    ]  # fmt: skip
    chunks = [u.content for u in replay(entries, WS) if u.session_update == "user_message_chunk"]
    assert [c.type for c in chunks] == ["resource_link", "image", "text", "text"]
    assert chunks[0].uri == (WS / "src" / "a.py").as_uri()
    assert (chunks[1].mime_type, chunks[1].data) == ("image/png", "AAAA")
    assert [chunks[2].text, chunks[3].text] == ["@problems ", "look"]


def test_a_call_decided_by_a_rule_names_it_in_its_title_and_meta_and_a_steer_is_said() -> None:
    view = SessionUpdates(ToolCalls(WS))
    by = "rule: Bash(git diff:*) (workspace .claude/settings.json)"
    (start, _running) = view.updates(
        {
            "type": "toolStarted",
            "toolUseId": "t1",
            "name": "bash",
            "input": {"command": "git diff"},
            "permission": {"decision": "allow", "by": by},
        }
    )
    assert isinstance(start, ToolCallStart)
    assert start.title.endswith(f" · {by}")
    assert start.field_meta == {"tiller": {"permission": {"decision": "allow", "by": by}}}
    (moded,) = view.updates(
        {
            "type": "toolStarted",
            "toolUseId": "t2",
            "name": "bash",
            "input": {"command": "rm x"},
            "permission": {"decision": "ask", "by": "mode default"},
        }
    )
    assert isinstance(moded, ToolCallStart) and "mode default" not in moded.title
    (said,) = view.updates({"type": "steered", "text": "use tabs"})
    assert isinstance(said, AgentMessageChunk)
    assert isinstance(said.content, TextContentBlock) and "steered: use tabs" in said.content.text


# --- issue 36 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "tool_input", "title"),
    [
        ("task", {"subagent_type": "explore", "description": "Find the note"},
         "Find the note (explore agent)"),
        ("tool_search", {"query": "time zones"}, "Search the MCP tools for time zones"),
        ("bash", {"command": "git log --format=%h:%s\n  | wc"}, "`git log --format=%h:%s | wc`"),
        ("bash", {"command": "echo `date`"}, "`` echo `date` ``"),
        ("mcp__time__now", {}, "now (MCP server time)"),
    ],
)  # fmt: skip
def test_titles_say_what_matters_before_any_colon_of_their_own(
    name: str, tool_input: JSON, title: str
) -> None:
    # CodeCompanion keeps only what comes before a colon ("explore agent: Find the note" read
    # "explore agent"), or the code a title starts with.
    assert describe_tool(name, tool_input, WS).title == title


def test_only_tools_a_session_answer_widens_are_offered_one() -> None:
    read = ToolCall("t1", "read_file", {"path": ".env"})
    assert [o.option_id for o in tool_options(read, trusted=True)] == ["allow", "deny"]
    command = ToolCall("t2", "bash", {"command": "make"})
    assert [o.option_id for o in tool_options(command, trusted=False)] == [
        "allow",
        "allowSession",
        "deny",
    ]


@pytest.mark.parametrize(
    ("blocks", "words"),
    [
        (["Talk slowly.", "Go on."], "Talk slowly.\n\nGo on."),
        (["Talk slowly. ", "Go on."], "Talk slowly. Go on."),
        (["one\n", "two"], "one\ntwo"),
    ],
)
def test_text_blocks_are_paragraphs_unless_the_client_put_the_space(
    blocks: list[str], words: str
) -> None:
    asked = prompt_of([TextContentBlock(type="text", text=t) for t in blocks], WS)
    assert asked.text == words


def _entries(*kinds: tuple[str, JSON]) -> list[JSON]:
    return [{"seq": n, "kind": kind, "turnId": None, **fields} for n, (kind, fields) in
            enumerate(kinds)]  # fmt: skip


def test_a_load_keeps_the_last_prompts_and_a_custom_command_with_its_turn() -> None:
    greet = {"text": "/greet World", "message": "/greet (project: /w/.claude/commands/greet.md)"}
    log = _entries(
        ("turnStarted", {"prompt": "old"}),
        ("assistantText", {"text": "old answer"}),
        ("command", greet),
        ("notice", {"text": "a notice between them"}),
        ("turnStarted", {"prompt": "Say hello to World."}),
        ("assistantText", {"text": "hello"}),
        ("command", {"text": "/mode plan", "message": "Mode: plan"}),
    )
    kept = recent(reversed(log), 2)
    assert [e["kind"] for e in kept.entries] == [
        "command", "turnStarted", "assistantText", "command"
    ]  # fmt: skip
    assert kept.left_out.startswith("Earlier turns are not shown here")
    assert recent(reversed(log), 3).left_out == ""  # nothing older was left out
    said = replay(kept.entries, WS, kept.left_out)
    users = [u.content.text for u in said if u.session_update == "user_message_chunk"]
    assert users == ["/greet World", "/mode plan"]  # never the expanded text
    first = said[0]
    assert isinstance(first, AgentMessageChunk) and isinstance(first.content, TextContentBlock)
    assert first.content.text.startswith("*Earlier turns are not shown here")
