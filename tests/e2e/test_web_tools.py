"""Web search through the real server and the fake Messages API: the call shows in the tool
log, its blocks go back in the history unchanged, and the search is counted and priced."""

from __future__ import annotations

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
