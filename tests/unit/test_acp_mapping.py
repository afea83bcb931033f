"""The pure parts of the ACP face: events -> updates, outcomes -> stop reasons, prompts."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from tiller.acp.agent import advertised_commands, prompt_text
from tiller.acp.updates import ToolCalls, describe_tool, event_updates, replay, turn_end

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
    calls = ToolCalls(WS, lambda name, tool_input: name == "grep")
    started = {"type": "toolStarted", "toolUseId": "t1", "name": "grep", "input": {"pattern": "x"}}
    updates = event_updates(started, calls)
    assert [(u.session_update, u.status) for u in updates] == [
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
    ]
    asked = {"type": "toolStarted", "toolUseId": "t2", "name": "bash", "input": {"command": "rm x"}}
    assert [u.status for u in event_updates(asked, calls)] == ["pending"]
    denied = {"type": "toolFinished", "toolUseId": "t2", "status": "denied", "output": "Denied"}
    (finished,) = event_updates(denied, calls)
    assert finished.status == "failed"
    assert "Denied" in finished.content[0].content.text


def test_the_plan_call_stays_open_until_it_finishes() -> None:
    calls = ToolCalls(WS, lambda name, tool_input: True)
    plan = {
        "type": "toolStarted",
        "toolUseId": "p",
        "name": "exit_plan_mode",
        "input": {"plan": "1."},
    }
    assert [u.status for u in event_updates(plan, calls)] == ["pending"]
    assert calls.open_plan_call() == "p"
    event_updates({"type": "toolFinished", "toolUseId": "p", "status": "ok", "output": ""}, calls)
    assert calls.open_plan_call() is None


def test_replay_redraws_prompts_text_tools_and_failures() -> None:
    entries = [
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


def test_session_switching_commands_are_not_advertised() -> None:
    commands = {c.name: c for c in advertised_commands()}
    assert {"help", "mode", "model", "plan"} <= commands.keys()
    assert not commands.keys() & {"clear", "resume", "fork", "queue"}
    hint = commands["mode"].input
    assert hint is not None and hint.root.hint == "[name]"


def test_prompt_blocks_become_one_text_with_mentions_and_context() -> None:
    blocks = [
        TextContentBlock(type="text", text="look at "),
        ResourceContentBlock(type="resource_link", name="a.py", uri="file:///work/ws/src/a.py"),
        TextContentBlock(type="text", text=" and "),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(uri="file:///work/ws/b.txt", text="B"),
        ),
    ]
    assert prompt_text(blocks, WS) == (
        'look at @src/a.py and @b.txt\n\n<context ref="b.txt">\nB\n</context>'
    )


def test_an_image_in_a_prompt_is_refused_as_advertised() -> None:
    image = ImageContentBlock(type="image", data="AAAA", mime_type="image/png")
    with pytest.raises(RequestError) as err:
        prompt_text([image], WS)
    assert err.value.code == -32602
