"""Append-only through the real server: against the fake Messages API, which binds each thinking
block's signature to its prefix and answers 400 "bound to a different conversation" when that
prefix changed (as the API does for Sonnet 5.5 and the other preserved-thinking models), no
operation draws the 400: AGENTS.md edits, mode and model changes, /compact, slices, rewinds,
and a restart with resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_compaction import is_summary_request
from test_turn_basics import text, tool_use

MODEL = "claude-sonnet-5-5"


def thinking(value: str) -> dict[str, object]:
    return {"type": "thinking", "thinking": value}  # the fake signs it, bound to its prefix


def tool_turn(n: int) -> list[dict[str, Any]]:
    """A turn of two steps, each with thinking: the second request sends the first's back."""
    return [
        {"content": [thinking(f"look {n}"), tool_use("read_file", f"r{n}", path="notes.txt")]},
        {"content": [thinking(f"done {n}"), text(f"answer {n}")]},
    ]


def answering(specs: list[dict[str, Any]]) -> list[Any]:
    """``specs`` for turns; a summary request (compaction, slice) gets a summary instead."""
    queue = list(specs)

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        if is_summary_request(body):
            return {"content": [text("SUMMARY")]}
        return queue.pop(0)

    return [respond] * (len(specs) + 4)


async def started(start: Any, workspace: Path) -> Tiller:
    (workspace / "notes.txt").write_text("notes\n")
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    tiller: Tiller = await start(model=MODEL, thinking={"enabled": True})
    return tiller


async def turns(tiller: Tiller, api: FakeMessagesAPI, first: int, last: int) -> None:
    for n in range(first, last):
        ended = await tiller.run(f"prompt {n}")
        assert ended["outcome"] == "completed", ended


def assert_no_400(api: FakeMessagesAPI) -> None:
    refused = [r for r in api.requests if r.status == 400]
    assert refused == [], [r.body for r in refused]


def thinking_sent_back(api: FakeMessagesAPI) -> int:
    body = api.message_requests()[-1].body
    return sum(b.get("type") == "thinking" for m in body["messages"] for b in m["content"])


async def test_an_agents_md_edit_is_a_message_and_the_system_prompt_stays(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await started(start, workspace)
    api.enqueue(*tool_turn(0), *tool_turn(1))
    await turns(tiller, api, 0, 1)
    (workspace / "AGENTS.md").write_text("Use spaces.\n")
    ended = await tiller.run("prompt 1")
    assert ended["outcome"] == "completed", ended
    assert_no_400(api)
    bodies = [r.body for r in api.message_requests()]
    assert all(b["system"] == bodies[0]["system"] for b in bodies)
    assert "Use tabs." in bodies[0]["system"][0]["text"]
    prompt = bodies[2]["messages"][-1]["content"]
    assert prompt[0]["text"] == (
        "AGENTS.md changed. The project instructions now read:\n\nUse spaces.\n"
    )
    assert prompt[-1]["text"].startswith("prompt 1")
    notices = [e["text"] for e in tiller.events_of("notice", ended["turnId"])]
    assert any(n.startswith("AGENTS.md changed") for n in notices)
    assert thinking_sent_back(api) == 3  # every earlier block still valid


async def test_mode_and_model_changes_keep_system_and_tools(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await started(start, workspace)
    api.models.append("claude-opus-5-5")
    api.enqueue(*tool_turn(0), *tool_turn(1), *tool_turn(2))
    await turns(tiller, api, 0, 1)
    await tiller.request("tiller/setMode", {"mode": "acceptEdits"})
    await turns(tiller, api, 1, 2)
    await tiller.request("tiller/setModel", {"model": "claude-opus-5-5"})
    await turns(tiller, api, 2, 3)
    assert_no_400(api)
    bodies = [r.body for r in api.message_requests()]
    assert {b["model"] for b in bodies} == {MODEL, "claude-opus-5-5"}
    assert all(
        (b["system"], b["tools"]) == (bodies[0]["system"], bodies[0]["tools"]) for b in bodies
    )
    assert thinking_sent_back(api) == 5


async def test_compaction_starts_a_new_prefix_without_the_thinking_it_invalidates(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await started(start, workspace)
    api.enqueue(*answering([*tool_turn(0), *tool_turn(1), *tool_turn(2), *tool_turn(3)]))
    await turns(tiller, api, 0, 3)
    answer = await tiller.prompt("/compact")
    assert answer["status"] == "handled" and "Compacted" in answer["message"], answer
    await turns(tiller, api, 3, 4)
    assert_no_400(api)
    body = api.message_requests()[-1].body
    assert body["messages"][0]["content"][0]["text"].startswith("Summary of the earlier")
    assert thinking_sent_back(api) == 1  # only the block produced after the compaction


async def test_a_slice_is_a_new_prefix_without_thinking(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await started(start, workspace)
    api.enqueue(*answering([*tool_turn(0), *tool_turn(1), *tool_turn(2)]))
    await turns(tiller, api, 0, 2)
    parent = (await tiller.request("tiller/getState"))["sessionId"]
    state = await tiller.request("tiller/session/slice", {"spec": "0:1, summarize:1:2"})
    assert state["sessionId"] != parent
    await turns(tiller, api, 2, 3)
    assert_no_400(api)
    assert thinking_sent_back(api) == 1


async def test_a_conversation_rewind_keeps_a_true_prefix_and_its_thinking(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await started(start, workspace)
    api.enqueue(*tool_turn(0), *tool_turn(1), *tool_turn(2), *tool_turn(3))
    await turns(tiller, api, 0, 1)
    second = await tiller.run("prompt 1")
    done = await tiller.request(
        "tiller/rewind", {"turnId": second["turnId"], "files": False, "conversation": True}
    )
    await turns(tiller, api, 2, 3)
    assert_no_400(api)
    assert thinking_sent_back(api) == 3  # turn 0's two blocks, and this turn's first
    await tiller.request("tiller/undoRewind", {"undoId": done["undoId"]})
    await turns(tiller, api, 3, 4)
    assert_no_400(api)


async def test_a_restart_with_resume_sends_the_same_system_prompt_after_an_agents_md_edit(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    first = await started(start, workspace)
    api.enqueue(*tool_turn(0), *tool_turn(1))
    await turns(first, api, 0, 1)
    session_id = (await first.request("tiller/getState"))["sessionId"]
    (workspace / "AGENTS.md").write_text("Use spaces.\n")
    second = await start(model=MODEL, thinking={"enabled": True})
    await second.request("tiller/session/resume", {"sessionId": session_id})
    await turns(second, api, 1, 2)
    assert_no_400(api)
    bodies = [r.body for r in api.message_requests()]
    assert bodies[-1]["system"] == bodies[0]["system"]
    assert "AGENTS.md changed. The project instructions now read:\\n\\nUse spaces." in str(
        bodies[-1]["messages"]
    )
    assert thinking_sent_back(api) == 3


async def test_hooks_nested_instructions_skills_and_commands_never_change_the_prefix(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """Everything issue 19 adds reaches the model as appended text: a SessionStart and a
    UserPromptSubmit hook's context, a PostToolUse hook's context, a nested AGENTS.md, a skill
    added mid-session, a custom command with its own model's turn in between."""
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "AGENTS.md").write_text("In pkg, no globals.\n")
    (workspace / "pkg" / "notes.txt").write_text("pkg notes\n")
    (workspace / ".claude" / "commands").mkdir(parents=True)
    (workspace / ".claude" / "commands" / "again.md").write_text("Read the notes again.\n")
    context = 'echo \'{"hookSpecificOutput": {"additionalContext": "hook says hi"}}\''
    tiller: Tiller = await started(start, workspace)
    await stop_tiller_quietly(tiller)
    tiller = await start(
        model=MODEL,
        thinking={"enabled": True},
        hooks={
            event: [{"hooks": [{"type": "command", "command": context}]}]
            for event in ("SessionStart", "UserPromptSubmit", "PostToolUse")
        },
    )
    pkg_turn = [
        {"content": [thinking("look"), tool_use("read_file", "p1", path="pkg/notes.txt")]},
        {"content": [thinking("done"), text("pkg read")]},
    ]
    api.enqueue(*tool_turn(0), *pkg_turn, *tool_turn(2), *tool_turn(3))
    await turns(tiller, api, 0, 2)
    (workspace / ".tiller" / "skills" / "lint").mkdir(parents=True)
    (workspace / ".tiller" / "skills" / "lint" / "SKILL.md").write_text(
        "---\ndescription: Lint it\n---\nRun ruff.\n"
    )
    await turns(tiller, api, 2, 3)
    ended = await tiller.run("/again")
    assert ended["outcome"] == "completed", ended
    assert_no_400(api)
    bodies = [r.body for r in api.message_requests()]
    assert all(b["system"] == bodies[0]["system"] for b in bodies)
    assert all(b["tools"] == bodies[0]["tools"] for b in bodies)
    sent = str(bodies[-1]["messages"])
    for told in ("hook says hi", "In pkg, no globals.", "The skills available changed"):
        assert told in sent
    assert thinking_sent_back(api) == 7  # every earlier thinking block still valid


async def stop_tiller_quietly(tiller: Tiller) -> None:
    from harness import stop_tiller

    await stop_tiller(tiller)
