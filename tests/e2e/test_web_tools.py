"""Web search through the real server and the fake Messages API: the call shows in the tool
log, its blocks go back in the history unchanged, and the search is counted and priced; the
settings files turn the tools on under the client's options (extend/web_settings.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_turn_basics import text
from tiller.jsontypes import JSON
from tiller.model.models import price, resolve
from tiller.model.usage import Usage

MODEL = "claude-sonnet-4-5"
SEARCH_ID = "srvtoolu_01A"
SEARCH_USE: JSON = {
    "type": "server_tool_use",
    "id": SEARCH_ID,
    "name": "web_search",
    "input": {"query": "pygls release"},
}
SEARCH_RESULT: JSON = {
    "type": "web_search_tool_result",
    "tool_use_id": SEARCH_ID,
    "content": [
        {
            "type": "web_search_result",
            "url": "https://pypi.org/project/pygls/",
            "title": "pygls on PyPI",
            "encrypted_content": "EqgfCioIARgBIiQ3YTRm",
            "page_age": "May 2, 2026",
        }
    ],
}
CITED_TEXT: JSON = {
    "type": "text",
    "text": "pygls 2 is out.",
    "citations": [
        {
            "type": "web_search_result_location",
            "url": "https://pypi.org/project/pygls/",
            "title": "pygls on PyPI",
            "encrypted_index": "Eo8BCioIAhgBIiQy",
            "cited_text": "pygls 2.0.0",
        }
    ],
}
WEB_SEARCH = {"enabled": True, "maxUses": 2}


def without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


async def test_a_web_search_is_shown_sent_back_unchanged_and_counted(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(model=MODEL, webSearch=WEB_SEARCH)
    api.enqueue(
        {"content": [SEARCH_USE, SEARCH_RESULT, CITED_TEXT]}, {"content": [text("You're welcome.")]}
    )
    ended = await tiller.run("is there a new pygls?")
    assert ended["outcome"] == "completed"
    (started,) = tiller.events_of("toolStarted", ended["turnId"])
    (finished,) = tiller.events_of("toolFinished", ended["turnId"])
    assert (started["toolUseId"], started["name"], started["input"]) == (
        SEARCH_ID,
        "web_search",
        {"query": "pygls release"},
    )
    assert (finished["name"], finished["status"]) == ("web_search", "ok")
    assert finished["output"] == "pygls on PyPI — https://pypi.org/project/pygls/"

    usage = ended["usage"]
    assert usage["webSearchRequests"] == 1
    first_call = Usage.from_api(api.message_requests()[0].usage or {})
    assert usage["costUsd"] == pytest.approx(price(first_call, resolve(MODEL)).cost_usd, abs=1e-6)

    await tiller.run("thanks")
    first, second = api.message_requests()
    tools = [t for t in first.body["tools"] if t.get("type", "").startswith("web_search")]
    assert without_cache_control(tools) == [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    ]
    assert without_cache_control(first.body["tools"]) == without_cache_control(second.body["tools"])
    assistant = second.body["messages"][1]
    assert assistant["role"] == "assistant"
    assert without_cache_control(assistant["content"]) == [SEARCH_USE, SEARCH_RESULT, CITED_TEXT]


async def test_web_search_is_not_offered_in_plan_mode_unless_allowed(
    start: Any, api: FakeMessagesAPI
) -> None:
    tiller: Tiller = await start(model=MODEL, webSearch=WEB_SEARCH, permissionMode="plan")
    api.enqueue({"content": [text("Planning without the web.")]})
    await tiller.run("plan it")
    (sent,) = api.message_requests()
    assert not [t for t in sent.body["tools"] if "type" in t]


# --- turned on in a settings file (issue 36: `"webSearch": {"enabled": true}` in
# ~/.config/tiller/settings.json was silently ignored) --------------------------------------


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def user_settings(tmp_path: Path) -> Path:
    """The harness's user settings file (TILLER_CONFIG_DIR: see tests/harness.py)."""
    return tmp_path / "data" / "user-tiller" / "settings.json"


def web_tools_sent(api: FakeMessagesAPI) -> list[JSON]:
    (sent, *_) = api.message_requests()
    return [without_cache_control(t) for t in sent.body["tools"] if "type" in t]


async def test_web_search_turned_on_in_the_users_settings_file_is_offered(
    start: Any, api: FakeMessagesAPI, tmp_path: Path
) -> None:
    write_json(user_settings(tmp_path), {"webSearch": {"enabled": True, "maxUses": 2}})
    tiller: Tiller = await start(model=MODEL)
    api.enqueue({"content": [text("Searched nothing yet.")]})
    await tiller.run("hello")
    assert web_tools_sent(api) == [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    ]


async def test_the_clients_option_wins_over_the_settings_file_key_by_key(
    start: Any, api: FakeMessagesAPI, tmp_path: Path, workspace: Path
) -> None:
    write_json(user_settings(tmp_path), {"webFetch": {"enabled": True, "maxUses": 4}})
    write_json(workspace / ".tiller" / "settings.local.json",
               {"webFetch": {"enabled": True, "allowedDomains": ["docs.python.org"]}})  # fmt: skip
    tiller: Tiller = await start(model=MODEL, webFetch={"enabled": True, "maxUses": 1})
    api.enqueue({"content": [text("ok")]})
    await tiller.run("hello")
    assert web_tools_sent(api) == [
        {
            "type": "web_fetch_20250910",
            "name": "web_fetch",
            "allowed_domains": ["docs.python.org"],
            "max_uses": 1,
        }
    ]


async def test_an_untrusted_folder_cannot_turn_web_fetch_on_and_the_trust_notice_says_so(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    write_json(workspace / ".tiller" / "settings.json", {"webFetch": True})
    tiller: Tiller = await start(model=MODEL, workspaceTrust=None)
    api.enqueue({"content": [text("ok")]})
    await tiller.run("hello")
    assert web_tools_sent(api) == []
    told = [e["text"] for e in tiller.events_of("notice") if "not trusted" in e["text"]]
    assert len(told) == 1 and ".tiller/settings.json (webFetch)" in told[0], told


async def test_a_wrong_web_setting_in_a_settings_file_is_a_notice_not_silence(
    start: Any, api: FakeMessagesAPI, tmp_path: Path
) -> None:
    write_json(user_settings(tmp_path), {"webSearch": {"enabled": "yes"}})
    tiller: Tiller = await start(model=MODEL)
    api.enqueue({"content": [text("ok")]})
    await tiller.run("hello")
    told = [e["text"] for e in tiller.events_of("notice") if e["text"].startswith("Web tools:")]
    assert told == [
        f"Web tools: {user_settings(tmp_path)}: webSearch: expected {{enabled: bool, "
        "allowedDomains?, blockedDomains?, ...}: left out"
    ]
    assert web_tools_sent(api) == []
