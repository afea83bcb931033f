"""Hooks in Claude Code's shape: configuration, matchers, the tool mapping, and what exit
codes and JSON replies mean."""

from __future__ import annotations

from pathlib import Path

from tiller.core.hooks.claude_names import claude_name, from_claude_input, to_claude_input
from tiller.core.hooks.config import HookCommand, parse_hooks
from tiller.core.hooks.replies import Verdict, combine, read_reply
from tiller.core.hooks.run import HookRun
from tiller.core.permissions.modes import Allow, Ask, Deny
from tiller.core.turn.tool_hooks import with_hook

WS = Path("/work/project")


def hook(event: str = "PreToolUse", matcher: str = "") -> HookCommand:
    config, problems = parse_hooks(
        {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": "check"}]}]}, "t"
    )
    assert problems == []
    return config.hooks[0]


def test_matchers_are_exact_names_regexes_or_everything() -> None:
    assert hook(matcher="Bash").matches("Bash")
    assert not hook(matcher="Bash").matches("BashOutput")
    assert hook(matcher="Edit|Write").matches("Write")
    assert hook(matcher="mcp__.*").matches("mcp__github__list")
    assert hook(matcher="*").matches("Read") and hook(matcher="").matches("Read")
    assert hook("Stop", matcher="Bash").matches(None)  # events without tools ignore matchers


def test_a_bad_entry_is_named_and_the_others_are_kept() -> None:
    config, problems = parse_hooks(
        {
            "PreToolUse": [
                {"matcher": "(", "hooks": [{"type": "command", "command": "a"}]},
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "b", "timeout": 0}]},
                {"hooks": [{"type": "command", "command": "c", "timeout": 5}]},
            ],
            "PostToolUseFailure": [],
        },
        "settings.json",
    )
    assert [(h.command, h.timeout) for h in config.hooks] == [("c", 5.0)]
    assert any("hooks.PreToolUse[0].matcher" in p for p in problems)
    assert any("hooks.PreToolUse[1].hooks[0].timeout" in p for p in problems)
    assert any("PostToolUseFailure: unknown event" in p for p in problems)


def test_the_same_command_twice_runs_once() -> None:
    config, _ = parse_hooks({"Stop": [{"hooks": [{"type": "command", "command": "x"}]}] * 2}, "t")
    assert len(config.for_event("Stop")) == 1


def test_tools_and_inputs_map_to_claude_codes_and_back() -> None:
    assert [claude_name(n) for n in ("bash", "edit_file", "list_files", "mcp__s__t")] == [
        "Bash", "Edit", "Glob", "mcp__s__t",
    ]  # fmt: skip
    edit = {"path": "src/a.py", "old_string": "a", "new_string": "b"}
    claude = to_claude_input("edit_file", edit, WS)
    assert claude == {"file_path": "/work/project/src/a.py", "old_string": "a", "new_string": "b"}
    assert from_claude_input("edit_file", claude, WS) == edit
    bash = to_claude_input("bash", {"command": "make", "timeout_seconds": 5}, WS)
    assert bash == {"command": "make", "timeout": 5000}
    assert from_claude_input("bash", bash, WS) == {"command": "make", "timeout_seconds": 5}
    assert to_claude_input("list_files", {}, WS) == {"path": "/work/project"}
    outside = from_claude_input("read_file", {"file_path": "/etc/passwd"}, WS)
    assert outside == {"path": "/etc/passwd"}  # the tool then refuses it


def test_exit_codes_mean_what_claude_code_documents() -> None:
    pre, post, prompt = hook(), hook("PostToolUse"), hook("UserPromptSubmit")
    denied = read_reply("PreToolUse", pre, HookRun(2, "", "no rm here\n"))
    assert (denied.permission, denied.reason) == ("deny", "no rm here")
    fed = read_reply("PostToolUse", post, HookRun(2, "", "lint failed"))
    assert fed.blocked and fed.reason == "lint failed"
    failed = read_reply("PreToolUse", pre, HookRun(1, "", "oops"))
    assert failed.permission is None and "failed (exit 1): oops" in failed.messages[0]
    context = read_reply("UserPromptSubmit", prompt, HookRun(0, "today is Friday\n", ""))
    assert context.context == ("today is Friday",)
    plain = read_reply("PreToolUse", pre, HookRun(0, "just a log line", ""))
    assert plain == Verdict()


def test_json_replies_decide_rewrite_and_stop() -> None:
    pre = hook()
    reply = read_reply(
        "PreToolUse",
        pre,
        HookRun(
            0,
            '{"continue": false, "stopReason": "enough", "hookSpecificOutput": '
            '{"permissionDecision": "ask", "permissionDecisionReason": "sure?",'
            ' "updatedInput": {"command": "ls"}}}',
            "",
        ),
    )
    assert reply.permission == "ask" and reply.reason == "sure?"
    assert reply.updated_input == {"command": "ls"} and reply.halt == "enough"
    legacy = read_reply("PreToolUse", pre, HookRun(0, '{"decision": "approve"}', ""))
    assert legacy.permission == "allow"


def test_deny_wins_over_ask_over_allow_and_contexts_add_up() -> None:
    allow = Verdict(permission="allow", permission_by="hook: a", acted=("hook: a",))
    deny = Verdict(permission="deny", permission_by="hook: b", reason="no", acted=("hook: b",))
    ask = Verdict(permission="ask", permission_by="hook: c", context=("x",), acted=("hook: c",))
    combined = combine([allow, deny, ask, Verdict(context=("y",))])
    assert (combined.permission, combined.permission_by) == ("deny", "hook: b")
    assert combined.context == ("x", "y")


def test_a_hook_never_gives_more_rights_than_the_mode() -> None:
    allow = Verdict(permission="allow", permission_by="hook: a")
    assert with_hook(Ask("mode default"), allow) == Allow("hook: a")
    plan = Deny("writes are denied", "mode plan")
    assert with_hook(plan, allow) == plan
    assert isinstance(with_hook(Allow("read-only"), Verdict(permission="deny")), Deny)
    assert with_hook(Allow("read-only"), Verdict(permission="ask", permission_by="h")) == Ask("h")


def test_disable_all_hooks_in_a_settings_file_turns_the_files_hooks_off(tmp_path: Path) -> None:
    from tiller.core.hooks.session_hooks import session_hooks
    from tiller.extend.settings_layer import read_settings
    from tiller.extend.trust import Trust

    trusted = Trust(True, "the test")
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}'
    )
    found, _ = session_hooks(parse_hooks(None, "t")[0], read_settings(tmp_path, trusted), {}, "s")
    assert found.configured("Stop")
    (tmp_path / ".claude" / "settings.local.json").write_text('{"disableAllHooks": true}')
    found, _ = session_hooks(parse_hooks(None, "t")[0], read_settings(tmp_path, trusted), {}, "s")
    assert not found.configured("Stop")


def test_an_untrusted_folders_hooks_never_run_but_its_disable_all_hooks_counts(
    tmp_path: Path,
) -> None:
    from tiller.core.hooks.session_hooks import session_hooks
    from tiller.extend.settings_layer import read_settings
    from tiller.extend.trust import Trust

    untrusted = Trust(False, "not trusted yet")
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "settings.json").write_text(
        '{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "touch M"}]}],'
        ' "SessionStart": [{"hooks": [{"type": "command", "command": "touch M"}]}]}}'
    )
    (ws / ".claude" / "settings.local.json").write_text(
        '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "touch M"}]}]}}'
    )
    user = tmp_path / "user"  # the user's own settings: their hooks run
    user.mkdir()
    (user / "settings.json").write_text(
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}}'
    )
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(user)}
    settings = read_settings(ws, untrusted, env)
    found, _ = session_hooks(parse_hooks(None, "t")[0], settings, {}, "s")
    assert not found.configured("UserPromptSubmit")
    assert not found.configured("SessionStart")
    assert not found.configured("PreToolUse", "bash")
    assert found.configured("Stop")  # the user's own file
    assert settings.withheld() == (
        ".claude/settings.json (hooks)", ".claude/settings.local.json (hooks)",
    )  # fmt: skip
    (ws / ".claude" / "settings.local.json").write_text('{"disableAllHooks": true}')
    settings = read_settings(ws, untrusted, env)
    found, _ = session_hooks(parse_hooks(None, "t")[0], settings, {}, "s")
    assert not found.configured("Stop")  # taking away is allowed to any file


def test_every_face_draws_hook_acted_as_one_line() -> None:
    from tiller.faces.acp.updates import SessionUpdates, ToolCalls
    from tiller.faces.common.render import hook_line

    denied = {
        "type": "hookActed",
        "event": "PreToolUse",
        "hooks": "hook: ./guard.py",
        "outcome": "denied",
        "message": "no rm here\nmore",
        "toolUseId": "b1",
    }
    assert hook_line(denied) == "PreToolUse hook: ./guard.py denied the call: no rm here"
    said = {**denied, "outcome": "message", "message": "hook: x timed out after 1 s"}
    assert hook_line(said) == "PreToolUse: hook: x timed out after 1 s"
    updates = SessionUpdates(ToolCalls(WS)).updates(denied)
    assert len(updates) == 1 and "denied the call" in str(updates[0])


def test_a_hooks_allow_never_skips_an_ask_rule_or_a_rules_file_write() -> None:
    allow = Verdict(permission="allow", permission_by="hook: a")
    asked = Ask("rule Bash(git push:*)")
    assert with_hook(asked, allow, firm_ask=True) == asked
