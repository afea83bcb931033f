"""The rule vocabulary end to end (the client denies every confirmation): Claude Code's tool
names in a deny rule refuse the Tiller tool that does that work (a task of an agent kind, a
skill, a notebook edit), a deny rule that cannot be read makes even a read-only command ask,
an ``@`` mention of a denied path is refused, and web domains reach the API in one spelling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use
from test_web_fetch_rules import web_fetch_tools
from test_web_tools import without_cache_control
from tiller.model.server_tools import WEB_FETCH_TYPE, WEB_SEARCH_TYPE

CLAUDE = ".claude/settings.json"


def write_rules(workspace: Path, **effects: list[str]) -> None:
    path = workspace / CLAUDE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": effects}))


def row(tiller: Tiller, turn_id: str, tool_use_id: str) -> dict[str, Any]:
    rows = {e["toolUseId"]: e for e in tiller.events_of("toolStarted", turn_id)}
    return rows[tool_use_id]


async def test_a_deny_agent_explore_rule_refuses_the_task_call(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(workspace, deny=["Agent(Explore)"])
    api.enqueue(
        {"content": [tool_use("task", "t1", description="look", prompt="find it",
                              subagent_type="explore")]},
        {"content": [text("done")]},
    )  # fmt: skip
    ended = await tiller.run("explore")
    assert row(tiller, ended["turnId"], "t1")["permission"] == {
        "decision": "deny",
        "by": f"rule: Agent(Explore) (workspace {CLAUDE})",
    }
    assert tiller.events_of("agentStarted") == []
    (result,) = results_of(api, 1)
    assert result["is_error"] is True and "Agent(Explore)" in str(result["content"])


async def test_a_deny_skill_rule_refuses_loading_that_skill(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    skill = workspace / ".claude" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Ship it\n---\nRun ./ship --prod.\n")
    write_rules(workspace, deny=["Skill(deploy)"])
    api.enqueue(
        {
            "content": [
                {"type": "tool_use", "id": "s1", "name": "skill", "input": {"name": "deploy"}}
            ]
        },
        {"content": [text("done")]},
    )
    ended = await tiller.run("ship")
    assert row(tiller, ended["turnId"], "s1")["permission"]["decision"] == "deny"
    (result,) = results_of(api, 1)
    assert result["is_error"] is True
    assert "./ship --prod" not in str(result["content"])


async def test_a_deny_notebook_edit_rule_refuses_an_ipynb_edit_and_only_that(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller: Tiller = await start(permissionMode="acceptEdits")
    write_rules(workspace, deny=["NotebookEdit"])
    api.enqueue(
        {
            "content": [
                tool_use("write_file", "w1", path="analysis.ipynb", content="{}"),
                tool_use("write_file", "w2", path="analysis.py", content="x = 1\n"),
            ]
        },
        {"content": [text("done")]},
    )
    ended = await tiller.run("write both")
    assert row(tiller, ended["turnId"], "w1")["permission"] == {
        "decision": "deny",
        "by": f"rule: NotebookEdit (workspace {CLAUDE})",
    }
    assert not (workspace / "analysis.ipynb").exists()
    assert row(tiller, ended["turnId"], "w2")["permission"]["decision"] == "allow"
    assert (workspace / "analysis.py").read_text() == "x = 1\n"


async def test_a_deny_rule_that_cannot_be_read_makes_even_ls_ask_and_is_told(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(workspace, deny=["Bash(rm:*"])
    api.enqueue({"content": [tool_use("bash", "b1", command="ls")]}, {"content": [text("ok")]})
    ended = await tiller.run("list")
    assert row(tiller, ended["turnId"], "b1")["permission"] == {
        "decision": "ask",
        "by": f"unreadable deny rule: Bash(rm:* (workspace {CLAUDE})",
    }
    assert [p["toolUseId"] for m, p in tiller.asked if m == "tiller/confirmTool"] == ["b1"]
    notices = [e["text"] for e in tiller.events_of("notice")]
    assert (
        f"Permission rules: {CLAUDE}: permissions.deny[0]: 'Bash(rm:*': no closing "
        "parenthesis; until it is fixed, every Bash call is asked"
    ) in notices


async def test_a_mention_of_a_path_a_read_deny_rule_covers_is_refused_naming_the_rule(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / ".env").write_text("TOKEN=secret\n")
    write_rules(workspace, deny=["Read(./.env)"])
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await tiller.request(
            "tiller/prompt",
            {"text": "look", "attachments": [{"kind": "file", "name": ".env", "path": ".env"}]},
        )
    assert (
        "params.attachments[0]: cannot mention '.env': denied by the permission rule: "
        f"Read(./.env) (workspace {CLAUDE})"
    ) in str(caught.value)
    assert api.message_requests() == []


async def test_web_domains_reach_the_api_in_one_spelling_and_websearch_rules_hold(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(
        workspace,
        deny=["WebFetch(domain:bücher.example)", "WebFetch(domain:https://evil.example:443/x)"],
        ask=["WebSearch"],
    )
    tiller: Tiller = await start(
        model="claude-sonnet-4-5",
        webFetch={"enabled": True, "blockedDomains": ["ADS.example:8443"]},
        webSearch={"enabled": True},
    )
    api.enqueue({"content": [text("fine")]})
    ended = await tiller.run("anything new?")
    assert ended["outcome"] == "completed"
    (sent,) = api.message_requests()
    assert web_fetch_tools(sent.body) == [
        {
            "type": WEB_FETCH_TYPE,
            "name": "web_fetch",
            "blocked_domains": ["ads.example", "xn--bcher-kva.example", "evil.example"],
        }
    ]
    types = [t.get("type") for t in without_cache_control(sent.body["tools"])]
    assert WEB_SEARCH_TYPE not in types  # an ask rule cannot ask inside a response: left out
