"""Permission rules hold against the shell, end to end: each command that ran unasked on the
real server in the attack on issue 34 is sent again through the protocol, with the client
denying every confirmation (the harness default), and checked on disk and on its row's
``permission``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use

USER = "rule: {rule} (user {path})"


def user_rules(tmp_path: Path, **effects: list[str]) -> Path:
    """The user's own settings file (CLAUDE_CONFIG_DIR, set by the harness): trusted always."""
    path = tmp_path / "data" / "user-claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": effects}))
    return path


def rows(tiller: Tiller, turn: str) -> dict[str, dict[str, Any]]:
    return {e["toolUseId"]: e["permission"] for e in tiller.events_of("toolStarted", turn)}


def outputs(tiller: Tiller, turn: str) -> dict[str, str]:
    return {e["toolUseId"]: e["output"] for e in tiller.events_of("toolFinished", turn)}


async def run_commands(tiller: Tiller, api: FakeMessagesAPI, lines: list[str]) -> str:
    """One response calling bash once per line; the turn's id."""
    calls = [tool_use("bash", f"t{i}", command=line) for i, line in enumerate(lines)]
    api.enqueue({"content": calls}, {"content": [text("done")]})
    ended = await tiller.run("go", timeout=60)
    return str(ended["turnId"])


async def test_commands_hidden_where_the_old_splitter_never_looked_are_asked(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    user_rules(tmp_path, allow=["Bash(git diff:*)", "Bash(echo:*)", "Bash(cat:*)",
                                "Bash(trap:*)"])  # fmt: skip
    lines = [
        "git diff <<EOF\n$(touch P0)\nEOF",
        "echo ${x:-$(touch P1)}",
        "echo ${x:=$(touch P2)}",
        "echo ${x/$(touch P3)/y}",
        'echo "${x:-`touch P4`}"',
        "cat <<EOF\n$(touch P5)\nEOF",
        "trap 'touch P6' EXIT",
    ]
    turn = await run_commands(tiller, api, lines)
    permissions = rows(tiller, turn)
    for i in range(len(lines)):
        assert permissions[f"t{i}"] == {"decision": "ask", "by": "mode default"}, lines[i]
        assert not (workspace / f"P{i}").exists(), lines[i]
    asked = [p for m, p in tiller.asked if m == "tiller/confirmTool"]
    assert len(asked) == len(lines)
    card = next(p for p in asked if p["toolUseId"] == "t0")["preview"]["segments"]
    assert [s["text"] for s in card] == ["git diff <<EOF\n$(touch P0)\nEOF", "touch P0"]
    assert [s["decision"] for s in card] == ["allow", "mode"]


async def test_a_deny_rule_holds_against_every_form_of_its_command_under_allow_bash(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    path = user_rules(tmp_path, allow=["Bash"], deny=["Bash(rm:*)", "Bash(git push:*)"])
    (workspace / "t").mkdir()
    (workspace / "t" / "keep").write_text("kept\n")
    lines = [
        "timeout 5 rm -rf t",
        "FOO=1 rm -rf t",
        "/bin/rm -rf t",
        "rm -rf t > out.log",
        "case x in x) rm -rf t;; esac",
        "env rm -rf t",
        "nice rm -rf t",
        "nohup rm -rf t",
        "time rm -rf t",
        "echo t | xargs rm -rf",
        "eval 'rm -rf t'",
        "sh -c 'rm -rf t'",
        "command rm -rf t",
        "git push --force origin main 2>/tmp/e",
    ]
    turn = await run_commands(tiller, api, lines)
    permissions = rows(tiller, turn)
    for i, line in enumerate(lines):
        rule = "Bash(git push:*)" if "push" in line else "Bash(rm:*)"
        assert permissions[f"t{i}"] == {
            "decision": "deny",
            "by": USER.format(rule=rule, path=path),
        }, line
    assert (workspace / "t" / "keep").read_text() == "kept\n"
    assert not (workspace / "out.log").exists()
    assert tiller.asked == []  # denied: nobody was asked


async def test_a_read_deny_rule_stops_cat_of_the_file_in_default_and_plan_mode(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    path = user_rules(tmp_path, deny=["Read(./.env)"])
    (workspace / ".env").write_text("API_SECRET=hunter2\n")
    for mode in ("default", "plan"):
        tiller: Tiller = await start(permissionMode=mode)
        turn = await run_commands(tiller, api, ["cat .env", "head -n1 ./.env", "cat .e*"])
        permissions, said = rows(tiller, turn), outputs(tiller, turn)
        for call in ("t0", "t1", "t2"):
            assert permissions[call] == {
                "decision": "deny",
                "by": USER.format(rule="Read(./.env)", path=path),
            }, (mode, call)
            assert "hunter2" not in said[call]
        read = await run_commands(tiller, api, ["cat README.md 2>/dev/null; true"])
        assert rows(tiller, read)["t0"]["decision"] == "allow", mode


def git(ws: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=ws,
        check=True,
        capture_output=True,
    )


def repository_with_an_external_diff(ws: Path) -> None:
    """A repository whose config names a diff program that leaves a marker when it runs."""
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-qm", "a")
    (ws / "a.txt").write_text("b\n")
    script = ws.parent / "evil-diff.sh"
    script.write_text(f"#!/bin/sh\ntouch {ws.parent / 'RAN'}\n")
    script.chmod(0o755)
    git(ws, "config", "diff.external", str(script))


async def test_rule_allowed_git_never_runs_a_program_the_repository_names(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    user_rules(tmp_path, allow=["Bash(git diff:*)"])
    repository_with_an_external_diff(workspace)
    lines = ["git diff", "git diff --ext-diff", "git diff --output=F", "timeout 5 git diff"]
    turn = await run_commands(tiller, api, lines)
    permissions = rows(tiller, turn)
    for call in ("t0", "t3"):  # allowed by the rule, stopped by the git-config check
        assert permissions[call]["decision"] == "ask"
        assert "configuration may run a program" in permissions[call]["by"]
    for call in ("t1", "t2"):  # a writing or executing option: never by a prefix rule
        assert permissions[call] == {"decision": "ask", "by": "mode default"}
    assert not (tmp_path / "RAN").exists()
    assert not (workspace / "F").exists()


async def test_rule_allowed_commands_get_the_unasked_git_overrides(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    path = user_rules(tmp_path, allow=["Bash(printenv:*)"])
    turn = await run_commands(tiller, api, ["printenv GIT_CONFIG_KEY_1 GIT_PAGER"])
    assert rows(tiller, turn)["t0"] == {
        "decision": "allow",
        "by": USER.format(rule="Bash(printenv:*)", path=path),
    }
    assert outputs(tiller, turn)["t0"].split() == ["core.hooksPath", "cat"]


async def test_a_line_the_parser_cannot_read_is_asked_even_under_allow_bash(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    user_rules(tmp_path, allow=["Bash"], deny=["Bash(curl:*)"])
    # the last one bashlex reads, and the read-only proof passed: bash runs touch Q in it
    lines = ['echo "${x:-`touch P`}"', 'echo "${x:-`curl -s x`}"', "test -v 'a[$(touch Q)]'"]
    turn = await run_commands(tiller, api, lines)
    permissions = rows(tiller, turn)
    assert permissions["t0"] == {"decision": "ask", "by": "mode default"}
    assert permissions["t1"]["decision"] == "deny"
    assert permissions["t2"] == {"decision": "ask", "by": "mode default"}
    assert not (workspace / "P").exists() and not (workspace / "Q").exists()
