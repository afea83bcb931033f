"""WebFetch permission rules through the real server and the fake Messages API: the API runs
web fetch itself, so the rules shape the web_fetch definition each request carries (fixed for
the session), and the tool row names them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_prefix_stays_append_only import assert_no_400, thinking_sent_back, tool_turn, turns
from test_turn_basics import text
from test_web_tools import without_cache_control
from tiller.jsontypes import JSON
from tiller.model.server_tools import WEB_FETCH_TYPE

MODEL = "claude-sonnet-4-5"
PREFIX_MODEL = "claude-sonnet-5-5"  # the fake binds its thinking blocks to their prefix
FETCH_ID = "srvtoolu_01F"
# As the web fetch tool docs show a call and its result
# (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-fetch-tool, "Response").
FETCH_USE: JSON = {
    "type": "server_tool_use",
    "id": FETCH_ID,
    "name": "web_fetch",
    "input": {"url": "https://pypi.org/project/pygls/"},
}
FETCH_RESULT: JSON = {
    "type": "web_fetch_tool_result",
    "tool_use_id": FETCH_ID,
    "content": {
        "type": "web_fetch_result",
        "url": "https://pypi.org/project/pygls/",
        "content": {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "pygls 2.0.0"},
            "title": "pygls on PyPI",
        },
        "retrieved_at": "2026-11-27T04:00:00Z",
    },
}


def write_rules(path: Path, **effects: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": effects}))


def web_fetch_tools(body: JSON) -> list[Any]:
    tools = [t for t in body["tools"] if t.get("type") == WEB_FETCH_TYPE]
    return list(without_cache_control(tools))


async def test_deny_and_ask_rules_land_in_blocked_domains_and_name_themselves_on_the_row(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(workspace / ".claude" / "settings.json", deny=["WebFetch(domain:evil.example)"])
    write_rules(workspace / ".tiller" / "settings.json", ask=["WebFetch(domain:*.corp.example)"])
    tiller: Tiller = await start(
        model=MODEL, webFetch={"enabled": True, "blockedDomains": ["ads.example"]}
    )
    api.enqueue({"content": [FETCH_USE, FETCH_RESULT, text("pygls 2 is out.")]})
    ended = await tiller.run("is there a new pygls?")
    assert ended["outcome"] == "completed"
    (sent,) = api.message_requests()
    assert web_fetch_tools(sent.body) == [
        {
            "type": WEB_FETCH_TYPE,
            "name": "web_fetch",
            "blocked_domains": ["ads.example", "evil.example", "corp.example"],
        }
    ]
    (row,) = tiller.events_of("toolStarted", ended["turnId"])
    assert row["permission"] == {
        "decision": "allow",
        "by": "server tool; rule: WebFetch(domain:evil.example) (workspace .claude/settings.json)"
        "; rule: WebFetch(domain:*.corp.example) (workspace .tiller/settings.json)",
    }


async def test_a_rule_added_mid_session_is_told_and_the_tools_list_stays(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(workspace / ".tiller" / "settings.json", deny=["WebFetch(domain:evil.example)"])
    tiller: Tiller = await start(model=MODEL, webFetch={"enabled": True})
    api.enqueue({"content": [text("first")]}, {"content": [text("second")]})
    await tiller.run("one")
    write_rules(
        workspace / ".tiller" / "settings.json",
        deny=["WebFetch(domain:evil.example)", "WebFetch(domain:new.example)"],
    )
    ended = await tiller.run("two")
    assert ended["outcome"] == "completed"
    first, second = api.message_requests()
    assert without_cache_control(first.body["tools"]) == without_cache_control(second.body["tools"])
    assert web_fetch_tools(second.body)[0]["blocked_domains"] == ["evil.example"]
    notices = [e["text"] for e in tiller.events_of("notice")]
    assert any("WebFetch or WebSearch permission rules changed" in n for n in notices), notices


async def test_an_allowed_list_loses_the_denied_domains_and_never_gains_allowed_ones(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_rules(
        workspace / ".claude" / "settings.json",
        deny=["WebFetch(domain:docs.example.com)"],
        allow=["WebFetch(domain:evil.example)"],
    )
    tiller: Tiller = await start(
        model=MODEL, webFetch={"enabled": True, "allowedDomains": ["example.com", "pypi.org"]}
    )
    api.enqueue({"content": [FETCH_USE, FETCH_RESULT, text("pygls 2 is out.")]})
    ended = await tiller.run("is there a new pygls?")
    assert ended["outcome"] == "completed"  # the fake refuses both lists at once: one was sent
    (sent,) = api.message_requests()
    assert web_fetch_tools(sent.body) == [
        {"type": WEB_FETCH_TYPE, "name": "web_fetch", "allowed_domains": ["pypi.org"]}
    ]


async def test_rules_changed_mid_session_and_across_a_restart_keep_the_thinking_valid(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """The folded web_fetch is fixed at the first turn and stored with the session: a later
    rule, even across a restart with resume, never changes the prefix the fake binds each
    thinking block to (its 400 "bound to a different conversation")."""
    (workspace / "notes.txt").write_text("notes\n")
    rules = workspace / ".tiller" / "settings.json"
    write_rules(rules, deny=["WebFetch(domain:evil.example)"])
    options: dict[str, Any] = {
        "model": PREFIX_MODEL,
        "thinking": {"enabled": True},
        "webFetch": {"enabled": True},
    }
    first: Tiller = await start(**options)
    api.enqueue(*tool_turn(0), *tool_turn(1), *tool_turn(2))
    await turns(first, api, 0, 1)
    write_rules(rules, deny=["WebFetch(domain:evil.example)", "WebFetch(domain:new.example)"])
    await turns(first, api, 1, 2)
    session_id = (await first.request("tiller/getState"))["sessionId"]
    second: Tiller = await start(**options)
    await second.request("tiller/session/resume", {"sessionId": session_id})
    await turns(second, api, 2, 3)
    assert_no_400(api)
    bodies = [r.body for r in api.message_requests()]
    assert all(
        without_cache_control(b["tools"]) == without_cache_control(bodies[0]["tools"])
        for b in bodies
    )
    assert web_fetch_tools(bodies[-1])[0]["blocked_domains"] == ["evil.example"]
    assert thinking_sent_back(api) == 5  # every earlier thinking block still valid
    told = [e["text"] for e in second.events_of("notice")]
    assert any("WebFetch or WebSearch permission rules changed" in n for n in told), told


async def test_a_new_session_takes_the_changed_rules(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    rules = workspace / ".tiller" / "settings.json"
    write_rules(rules, deny=["WebFetch(domain:evil.example)"])
    tiller: Tiller = await start(model=MODEL, webFetch={"enabled": True})
    api.enqueue({"content": [text("first")]}, {"content": [text("second")]})
    await tiller.run("one")
    write_rules(rules, deny=["WebFetch(domain:new.example)"])
    await tiller.request("tiller/session/new", {})
    await tiller.run("two")
    first, second = api.message_requests()
    assert web_fetch_tools(first.body)[0]["blocked_domains"] == ["evil.example"]
    assert web_fetch_tools(second.body)[0]["blocked_domains"] == ["new.example"]
