"""Permission rules end to end: the settings files of each scope, judged per segment, the
deciding rule on every toolStarted, the split on the approval card, allow for session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text, tool_use


def write_rules(path: Path, **effects: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": effects}))


def started(tiller: Tiller, turn: str) -> dict[str, dict[str, Any]]:
    return {e["toolUseId"]: e for e in tiller.events_of("toolStarted", turn)}


async def test_rules_from_every_scope_decide_with_deny_over_ask_over_allow(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    user = tmp_path / "data" / "user-claude" / "settings.json"  # CLAUDE_CONFIG_DIR (harness)
    write_rules(user, allow=["Bash(echo:*)", "Bash(touch:*)"])
    write_rules(workspace / ".claude" / "settings.json", deny=["Bash(touch forbidden)"])
    write_rules(workspace / ".tiller" / "settings.local.json", ask=["Bash(echo ask:*)"])
    api.enqueue(
        {
            "content": [
                tool_use("bash", "t1", command="echo hi > /dev/null && touch made"),
                tool_use("bash", "t2", command="touch forbidden"),
                tool_use("bash", "t3", command="echo ask me"),
            ]
        },
        {"content": [text("done")]},
    )
    ended = await tiller.run("go")
    rows = started(tiller, ended["turnId"])
    assert rows["t1"]["permission"] == {
        "decision": "allow",
        "by": f"rule: Bash(echo:*) (user {user}); rule: Bash(touch:*) (user {user})",
    }
    assert (workspace / "made").exists()
    assert rows["t2"]["permission"]["decision"] == "deny"
    assert rows["t2"]["permission"]["by"] == (
        "rule: Bash(touch forbidden) (workspace .claude/settings.json)"
    )
    assert not (workspace / "forbidden").exists()
    assert rows["t3"]["permission"] == {
        "decision": "ask",
        "by": "rule: Bash(echo ask:*) (local .tiller/settings.local.json)",
    }
    asked = [p for m, p in tiller.asked if m == "tiller/confirmTool"]
    assert [p["toolUseId"] for p in asked] == ["t3"]  # the harness denies it


async def test_compound_command_with_one_unallowed_segment_asks_with_the_split(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(workspace / ".claude" / "settings.json", allow=["Bash(git status:*)"])
    (workspace / "tmp").mkdir()
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="git status && rm -rf ./tmp")]},
        {"content": [text("done")]},
    )
    ended = await tiller.run("go")
    assert started(tiller, ended["turnId"])["t1"]["permission"] == {
        "decision": "ask",
        "by": "mode default",
    }
    (_, params), *_ = tiller.asked
    assert params["preview"]["segments"] == [
        {
            "text": "git status",
            "decision": "allow",
            "rule": "rule: Bash(git status:*) (workspace .claude/settings.json)",
        },
        {"text": "rm -rf ./tmp", "decision": "mode"},
    ]
    requested = tiller.events_of("confirmRequested", ended["turnId"])
    assert requested[0]["preview"]["segments"][1]["text"] == "rm -rf ./tmp"  # journaled
    assert (workspace / "tmp").is_dir()


async def test_allow_for_session_allows_exactly_the_segments_shown(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    async def allow_session(params: Any) -> Any:
        return {"decision": "allowSession"}

    tiller.on_confirm = allow_session
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch a && touch b")]},
        {"content": [tool_use("bash", "t2", command="touch b; touch a")]},
        {"content": [tool_use("bash", "t3", command="touch c")]},
        {"content": [text("done")]},
    )
    ended = await tiller.run("go")
    rows = started(tiller, ended["turnId"])
    assert rows["t2"]["permission"] == {
        "decision": "allow",
        "by": "rule: Bash(touch b) (session); rule: Bash(touch a) (session)",
    }
    assert rows["t3"]["permission"] == {"decision": "ask", "by": "mode default"}
    assert [p["toolUseId"] for m, p in tiller.asked] == ["t1", "t3"]


async def test_the_model_cannot_write_a_rules_file_without_asking_even_in_accept_edits(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="acceptEdits")
    body = json.dumps({"permissions": {"allow": ["Bash"]}})
    api.enqueue(
        {"content": [tool_use("write_file", "t1", path=".claude/settings.local.json",
                              content=body)]},
        {"content": [text("done")]},
    )  # fmt: skip
    ended = await tiller.run("go")
    assert started(tiller, ended["turnId"])["t1"]["permission"] == {
        "decision": "ask",
        "by": "protected: writes a permission rules file",
    }
    assert not (workspace / ".claude" / "settings.local.json").exists()


async def test_a_broken_rule_is_a_notice_naming_file_and_rule(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(workspace / ".tiller" / "settings.json", allow=["Bash(git"])
    api.enqueue({"content": [tool_use("bash", "t1", command="true")]}, {"content": [text("done")]})
    ended = await tiller.run("go")
    notices = [e["text"] for e in tiller.events_of("notice", ended["turnId"])]
    assert (
        "Permission rules: .tiller/settings.json: permissions.allow[0]: 'Bash(git': no closing "
        "parenthesis" in notices
    )


async def test_permissions_command_lists_adds_and_removes_and_the_next_call_follows(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(workspace / ".claude" / "settings.json", deny=["Bash(rm:*)"])
    added = await tiller.request("tiller/prompt", {"text": "/permissions add allow Bash(touch:*)"})
    assert added == {
        "status": "handled",
        "message": "Added allow Bash(touch:*) to .tiller/settings.local.json.",
    }
    listed = await tiller.request("tiller/prompt", {"text": "/permissions"})
    assert listed["message"].splitlines() == [
        "deny   Bash(rm:*)  (workspace .claude/settings.json)",
        "allow  Bash(touch:*)  (local .tiller/settings.local.json)",
    ]
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="touch made")]}, {"content": [text("ok")]}
    )
    ended = await tiller.run("go")
    assert started(tiller, ended["turnId"])["t1"]["permission"]["by"] == (
        "rule: Bash(touch:*) (local .tiller/settings.local.json)"
    )
    removed = await tiller.request("tiller/permissions/remove", {"rule": "Bash(touch:*)"})
    assert removed["message"] == "Removed Bash(touch:*) from .tiller/settings.local.json."
    assert [r["rule"] for r in removed["rules"]] == ["Bash(rm:*)"]
    claude = await tiller.request("tiller/permissions/remove", {"rule": "Bash(rm:*)"})
    assert "Tiller does not rewrite it" in claude["message"]
    assert "Bash(rm:*)" in (workspace / ".claude" / "settings.json").read_text()
    listing = await tiller.request("tiller/permissions")
    assert listing == {
        "rules": [
            {
                "effect": "deny",
                "rule": "Bash(rm:*)",
                "scope": "workspace",
                "source": ".claude/settings.json",
            }
        ],
        "problems": [],
    }
    bad = await tiller.request(
        "tiller/permissions/add", {"effect": "allow", "rule": "Bash(git", "scope": "workspace"}
    )
    assert bad["message"] == "'Bash(git': no closing parenthesis"


async def test_always_allow_keeps_exactly_the_segments_shown_as_local_rules(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    async def always(params: Any) -> Any:
        return {"decision": "allowAlways"}

    tiller.on_confirm = always
    write_rules(workspace / ".claude" / "settings.json", allow=["Bash(git status:*)"])
    local = workspace / ".tiller" / "settings.local.json"
    api.enqueue(
        {"content": [tool_use("bash", "t1", command="git status && touch a *.o")]},
        {"content": [tool_use("bash", "t2", command="touch b")]},
        {"content": [tool_use("bash", "t3", command="touch b && git status")]},
        {"content": [text("done")]},
    )
    ended = await tiller.run("go")
    turn = ended["turnId"]
    assert [p["toolUseId"] for m, p in tiller.asked if m == "tiller/confirmTool"] == ["t1", "t2"]
    # A segment with * is not written down: in a file it would be a wildcard.
    notices = [e["text"] for e in tiller.events_of("notice", turn)]
    assert any(n.startswith("Bash(touch a *.o) is allowed for this session only") for n in notices)
    assert "Always allowed (.tiller/settings.local.json): Bash(touch b)" in notices
    assert json.loads(local.read_text()) == {"permissions": {"allow": ["Bash(touch b)"]}}
    assert started(tiller, turn)["t3"]["permission"] == {
        "decision": "allow",
        "by": "rule: Bash(touch b) (local .tiller/settings.local.json); "
        "rule: Bash(git status:*) (workspace .claude/settings.json)",
    }
