"""Hooks in Claude Code's format, end to end: scripts written to its documented stdin/stdout
(tests/e2e/hook_scripts) configured as Claude Code configures them, run by the real server."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from processes import alive
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use

SCRIPTS = Path(__file__).parent / "hook_scripts"


def scripts_in(folder: Path) -> Path:
    """A copy of the hook scripts (they record their input next to themselves)."""
    target = folder / "hooks"
    shutil.copytree(SCRIPTS, target)
    return target


def python_hook(script: Path, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": f"{sys.executable} {script}", **extra}


def settings(workspace: Path, hooks: dict[str, Any]) -> None:
    """A project's .claude/settings.json, as Claude Code reads it."""
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


def acts(tiller: Tiller) -> list[tuple[str, str, str]]:
    """The ``hookActed`` events: (event, outcome, message)."""
    return [(e["event"], e["outcome"], e["message"]) for e in tiller.events_of("hookActed")]


async def test_pre_tool_use_hook_denies_rm_with_its_reason_on_the_row_and_in_the_result(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    hooks = scripts_in(tmp_path)
    settings(workspace, {"PreToolUse": [
        {"matcher": "Bash|Write", "hooks": [python_hook(hooks / "guard_rm.py")]}
    ]})  # fmt: skip
    (workspace / "keep.txt").write_text("precious\n")
    tiller: Tiller = await start(permissionMode="acceptEdits")
    api.enqueue(
        {"content": [tool_use("bash", "b1", command="rm -f keep.txt")]},
        {"content": [text("ok")]},
    )
    ended = await tiller.run("clean up")
    assert ended["outcome"] == "completed"
    assert (workspace / "keep.txt").exists()
    result = results_of(api, 1)[0]
    assert result["is_error"] is True
    assert "rm is not allowed in this project" in str(result["content"])
    started = tiller.events_of("toolStarted")[0]
    assert started["permission"]["decision"] == "deny"
    assert started["permission"]["by"].startswith("hook: ")
    denied = tiller.events_of("hookActed")[0]
    assert (denied["outcome"], denied["toolUseId"]) == ("denied", "b1")
    assert not [m for m, _ in tiller.asked if m == "tiller/confirmTool"]
    given = json.loads((hooks / "hook-input-PreToolUse.jsonl").read_text().splitlines()[0])
    assert given["hook_event_name"] == "PreToolUse"
    assert given["tool_name"] == "Bash"
    assert given["tool_input"] == {"command": "rm -f keep.txt"}
    assert given["tool_use_id"] == "b1"
    assert given["cwd"] == str(workspace)
    assert given["session_id"].startswith("ses_")
    assert given["permission_mode"] == "acceptEdits"


async def test_pre_tool_use_hook_rewrites_the_input_and_allow_skips_the_question(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    hooks = scripts_in(tmp_path)
    tiller: Tiller = await start(hooks={"PreToolUse": [
        {"matcher": "Bash|Write", "hooks": [python_hook(hooks / "guard_rm.py")]}
    ]})  # fmt: skip
    api.enqueue(
        {"content": [tool_use("bash", "b1", command="echo original")]},
        {"content": [tool_use("write_file", "w1", path="notes/a.md", content="hi\n")]},
        {"content": [text("ok")]},
    )
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed"
    assert "rewritten" in str(results_of(api, 1)[0]["content"])
    assert (workspace / "notes" / "a.md").read_text() == "hi\n"  # default mode, not asked
    assert not [m for m, _ in tiller.asked if m == "tiller/confirmTool"]
    write_row = tiller.events_of("toolStarted")[1]
    assert write_row["permission"] == {"decision": "allow", "by": write_row["permission"]["by"]}
    assert write_row["permission"]["by"].startswith("hook: ")
    assert ("PreToolUse", "rewroteInput", "the call runs with the hook's input") in acts(tiller)
    assert ("PreToolUse", "allowed", "notes are free to write") in acts(tiller)
    log = (hooks / "hook-input-PreToolUse.jsonl").read_text().splitlines()
    given = [json.loads(line) for line in log]
    assert given[1]["tool_name"] == "Write"
    assert given[1]["tool_input"]["file_path"] == str(workspace / "notes" / "a.md")


async def test_a_hooks_allow_never_overrides_plan_modes_denial(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    hooks = scripts_in(tmp_path)
    tiller: Tiller = await start(permissionMode="plan", hooks={"PreToolUse": [
        {"matcher": "Write", "hooks": [python_hook(hooks / "guard_rm.py")]}
    ]})  # fmt: skip
    api.enqueue(
        {"content": [tool_use("write_file", "w1", path="notes/a.md", content="hi\n")]},
        {"content": [text("ok")]},
    )
    await tiller.run("go")
    assert not (workspace / "notes").exists()
    assert tiller.events_of("toolStarted")[0]["permission"]["decision"] == "deny"
    assert results_of(api, 1)[0]["is_error"] is True


async def test_post_tool_use_context_is_appended_to_the_tool_result(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    hooks = scripts_in(tmp_path)
    tiller: Tiller = await start(permissionMode="acceptEdits", hooks={"PostToolUse": [
        {"matcher": "Write", "hooks": [python_hook(hooks / "post_context.py")]}
    ]})  # fmt: skip
    api.enqueue(
        {"content": [tool_use("write_file", "w1", path="a.py", content="x=1\n")]},
        {"content": [text("ok")]},
    )
    await tiller.run("go")
    content = str(results_of(api, 1)[0]["content"])
    assert f"{workspace / 'a.py'} was written; run the formatter before finishing." in content
    assert [a[:2] for a in acts(tiller)] == [("PostToolUse", "addedContext")]
    assert tiller.events_of("hookActed")[0]["toolUseId"] == "w1"


async def test_user_prompt_submit_blocks_a_prompt_or_adds_context_before_it(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    hooks = scripts_in(tmp_path)
    settings(workspace, {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": str(hooks / "prompt_guard.sh")}]}
    ]})  # fmt: skip
    tiller: Tiller = await start()
    ended = await tiller.run("my password is hunter2")
    assert ended["outcome"] == "stopped"
    blocked = ("UserPromptSubmit", "blockedPrompt", "prompts must not contain passwords")
    assert blocked in acts(tiller)
    assert api.message_requests() == []  # the model never saw it
    api.enqueue({"content": [text("ok")]})
    await tiller.run("what sprint is it?")
    sent = api.message_requests()[0].body["messages"]
    assert len(sent) == 1  # the blocked prompt left no trace
    blocks = sent[0]["content"]
    assert "sprint-42" in blocks[0]["text"]
    assert blocks[-1]["text"] == "what sprint is it?"


async def test_a_hook_that_times_out_is_stopped_and_the_turn_goes_on(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(hooks={"PreToolUse": [
        {"matcher": "*", "hooks": [{"type": "command", "command": "sleep 30", "timeout": 1}]}
    ]})  # fmt: skip
    api.enqueue({"content": [tool_use("list_files", "l1")]}, {"content": [text("ok")]})
    ended = await tiller.run("go")
    assert ended["outcome"] == "completed"
    assert any("timed out after 1 s" in message for _, _, message in acts(tiller))
    assert results_of(api, 1)[0].get("is_error") is not True


async def test_stop_hook_in_claude_codes_format_continues_once(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    hooks = scripts_in(tmp_path)
    tiller: Tiller = await start(hooks={"Stop": [
        {"hooks": [python_hook(hooks / "stop_once.py")]}
    ]})  # fmt: skip
    api.enqueue({"content": [text("done")]}, {"content": [text("tests pass, done")]})
    ended = await tiller.run("go")
    assert ended["final"] == "tests pass, done"
    follow_up = api.message_requests()[1].body["messages"][-1]["content"][-1]["text"]
    assert follow_up == "Stop hook feedback: run the tests before you stop"
    assert ("Stop", "continued", "run the tests before you stop") in acts(tiller)


async def test_a_broken_hooks_setting_is_refused_naming_the_entry(start: Any) -> None:
    try:
        await start(hooks={"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": ""}]}]})
    except Exception as err:  # initialize answers with the config error
        assert "hooks" in str(err) and "command" in str(err)
    else:
        raise AssertionError("a hook without a command was accepted")


async def test_an_interrupt_during_a_hook_ends_the_turn_at_once_and_stops_the_hook(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    started = tmp_path / "hook-started"
    hook = f"sleep 30 & echo $! > {started}.tmp; mv {started}.tmp {started}; wait"
    tiller: Tiller = await start(hooks={"PreToolUse": [
        {"matcher": "Glob", "hooks": [{"type": "command", "command": hook}]}
    ]})  # fmt: skip
    api.enqueue({"content": [tool_use("list_files", "l1")]}, {"content": [text("ok")]})
    begun = await tiller.prompt("go")
    await tiller.wait_for(started.exists)
    await tiller.request("tiller/interrupt", {})
    ended = await tiller.turn_end(begun["turnId"])
    assert ended["outcome"] == "interrupted"
    api.enqueue({"content": [text("next")]})
    await tiller.run("again")  # the history stayed valid: the call got its result
    sent = api.message_requests()[-1].body["messages"]
    results = [b for m in sent for b in m["content"] if b.get("type") == "tool_result"]
    assert results and results[0]["is_error"] is True
    sleeper = int(started.read_text())
    # Stopped with the turn, its children too (SIGKILL is sent before the turn ends; the
    # kernel may take a moment to carry it out on a loaded machine).
    assert await tiller.wait_for(lambda: not alive(sleeper))
