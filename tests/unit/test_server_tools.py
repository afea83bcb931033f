"""Web search and web fetch as Messages API server tools: the settings, the request's tool
list (stable, omitted in plan mode unless allowed), the stream kept whole, and their cost."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
import pytest_asyncio

from fakeapi import FakeMessagesAPI
from recording_listener import RecordingListener
from tiller.core.config import parse_config
from tiller.core.turn.events import Event, ToolFinished, ToolStarted
from tiller.core.turn.setup import TurnHost
from tiller.core.turn.step import Draft
from tiller.errors import ConfigError
from tiller.jsontypes import JSON
from tiller.model.anthropic_provider import AnthropicClient, StreamAccumulator
from tiller.model.history import Message, text_block
from tiller.model.models import price, resolve
from tiller.model.provider import ModelRequest, api_params
from tiller.model.server_tools import (
    ServerTools,
    WebToolSettings,
    beta_headers,
    server_result,
)
from tiller.model.usage import Usage
from tiller.protocol import Thinking

MODEL = "claude-sonnet-5-5"
SEARCH_ID = "srvtoolu_01"
RESULTS: list[JSON] = [
    {
        "type": "web_search_result",
        "url": "https://example.com/a",
        "title": "Page A",
        "encrypted_content": "EqgfCioIARgBIiQ3",
        "page_age": "April 30, 2025",
    },
    {
        "type": "web_search_result",
        "url": "https://example.org/b",
        "title": "Page B",
        "encrypted_content": "EqgfCioIARgBIiQ4",
        "page_age": None,
    },
]
CITATION: JSON = {
    "type": "web_search_result_location",
    "url": "https://example.com/a",
    "title": "Page A",
    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ",
    "cited_text": "A says so.",
}
SEARCH_USE: JSON = {
    "type": "server_tool_use",
    "id": SEARCH_ID,
    "name": "web_search",
    "input": {"query": "tiller agent"},
}
SEARCH_RESULT: JSON = {
    "type": "web_search_tool_result",
    "tool_use_id": SEARCH_ID,
    "content": RESULTS,
}
CITED_TEXT: JSON = {"type": "text", "text": "A says so.", "citations": [CITATION]}


def on(**web_search: Any) -> ServerTools:
    return ServerTools(web_search=WebToolSettings(**web_search))


def request(server_tools: tuple[JSON, ...] = ()) -> ModelRequest:
    return ModelRequest(
        model=MODEL,
        system="system",
        tools=({"name": "read_file", "input_schema": {"type": "object"}},),
        messages=(Message("user", (text_block("search"),)),),
        max_tokens=4096,
        thinking=Thinking(),
        server_tools=server_tools,
    )


# --- settings ---------------------------------------------------------------------------------


def test_web_tools_are_off_unless_enabled() -> None:
    config = parse_config({})
    assert config.server_tools == ServerTools()
    assert config.server_tools.definitions("default") == ()


def test_the_settings_become_the_tool_definitions() -> None:
    config = parse_config(
        {
            "webSearch": {"enabled": True, "allowedDomains": ["docs.python.org"], "maxUses": 3},
            "webFetch": {"enabled": True, "blockedDomains": ["example.com"]},
        }
    )
    assert config.server_tools.definitions("default") == (
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "allowed_domains": ["docs.python.org"],
            "max_uses": 3,
        },
        {"type": "web_fetch_20250910", "name": "web_fetch", "blocked_domains": ["example.com"]},
    )


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ({"enabled": "yes"}, "webSearch"),
        ({"enabled": True, "allowedDomains": ["a.com"], "blockedDomains": ["b.com"]}, "webSearch"),
        ({"enabled": True, "allowedDomains": ["a b.com"]}, "webSearch.allowedDomains"),
        ({"enabled": True, "blockedDomains": ["evil.example:x"]}, "webSearch.blockedDomains"),
        ({"enabled": True, "maxUses": 0}, "webSearch.maxUses"),
        ({"enabled": True, "maxUses": True}, "webSearch.maxUses"),
        ({"enabled": True, "allowInPlanMode": 1}, "webSearch.allowInPlanMode"),
        ({"enabled": True, "userLocation": {}}, "webSearch"),
    ],
)
def test_a_wrong_web_tool_setting_is_refused_naming_its_key(value: Any, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"webSearch": value})
    assert err.value.key == key


# --- the request ------------------------------------------------------------------------------


def test_without_the_setting_the_request_has_only_the_client_tools() -> None:
    sent = api_params(request(), resolve(MODEL))
    assert [t["name"] for t in sent["tools"]] == ["read_file"]
    assert beta_headers(sent["tools"]) == {}


def test_server_tools_come_last_under_the_tools_breakpoint() -> None:
    tools = ServerTools(WebToolSettings(True), WebToolSettings(True)).definitions("default")
    sent = api_params(request(tools), resolve(MODEL))
    assert [t["name"] for t in sent["tools"]] == ["read_file", "web_search", "web_fetch"]
    assert [("cache_control" in t) for t in sent["tools"]] == [False, False, True]
    assert beta_headers(sent["tools"]) == {"anthropic-beta": "web-fetch-2025-09-10"}


def test_the_tool_list_is_the_same_on_every_request_outside_plan_mode() -> None:
    tools = on(enabled=True)
    assert tools.definitions("default") == tools.definitions("acceptEdits")


def test_plan_mode_omits_server_tools_unless_allowed() -> None:
    assert on(enabled=True).definitions("plan") == ()
    allowed = on(enabled=True, allow_in_plan_mode=True).definitions("plan")
    assert [t["name"] for t in allowed] == ["web_search"]


# --- the stream -------------------------------------------------------------------------------


def events_of(blocks: list[JSON], usage: JSON) -> list[JSON]:
    """The events the API streams for ``blocks`` (web search docs, "Streaming")."""
    out: list[JSON] = [{"type": "message_start", "message": {"usage": {"input_tokens": 10}}}]
    for index, block in enumerate(blocks):
        if block["type"] == "server_tool_use":
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": '{"query": "tiller agent"}'}]
        elif block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}] + [
                {"type": "citations_delta", "citation": c} for c in block.get("citations", [])
            ]
        else:
            start, deltas = block, []
        out.append({"type": "content_block_start", "index": index, "content_block": start})
        out += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        out.append({"type": "content_block_stop", "index": index})
    delta = {"stop_reason": "end_turn"}
    out.append({"type": "message_delta", "delta": delta, "usage": usage})
    out.append({"type": "message_stop"})
    return out


def test_the_accumulator_keeps_server_tool_blocks_whole_and_citations_on_text() -> None:
    listener = RecordingListener()
    acc = StreamAccumulator(listener, max_tool_input_bytes=1 << 20)
    usage = {"output_tokens": 40, "server_tool_use": {"web_search_requests": 1}}
    for event in events_of([SEARCH_USE, SEARCH_RESULT, CITED_TEXT], usage):
        acc.feed(event)
    response = acc.finish()
    assert list(response.content) == [SEARCH_USE, SEARCH_RESULT, CITED_TEXT]
    assert listener.blocks == [SEARCH_USE, SEARCH_RESULT, CITED_TEXT]
    assert response.usage.web_search_requests == 1


def test_a_paused_server_tool_call_is_kept_to_be_sent_back_as_it_is() -> None:
    """After ``pause_turn`` the call may have no result yet: the API goes on from it."""
    acc = StreamAccumulator(RecordingListener(), max_tool_input_bytes=1 << 20)
    for event in events_of([SEARCH_USE], {"output_tokens": 5}):
        acc.feed(event)
    assert list(acc.finish().content) == [SEARCH_USE]


def test_a_result_whose_call_was_in_the_paused_response_still_finishes_its_call() -> None:
    host = Host()
    Draft(cast(TurnHost, host)).block(SEARCH_RESULT)
    (finished,) = host.events
    assert isinstance(finished, ToolFinished)
    assert (finished.tool_use_id, finished.name, finished.status) == (SEARCH_ID, "web_search", "ok")


def test_the_tool_log_lists_result_titles_and_urls_or_the_error() -> None:
    shown = server_result(SEARCH_RESULT)
    assert shown is not None and shown.ok
    assert shown.output == "Page A — https://example.com/a\nPage B — https://example.org/b"
    error = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
    failed = server_result({**SEARCH_RESULT, "content": error})
    assert failed is not None and not failed.ok and "max_uses_exceeded" in failed.output


@dataclass
class Host:
    events: list[Event] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        self.events.append(event)


def test_the_draft_shows_a_server_tool_call_as_started_then_finished() -> None:
    host = Host()
    draft = Draft(cast(TurnHost, host))
    for block in (SEARCH_USE, SEARCH_RESULT, CITED_TEXT):
        draft.block(block)
    started, finished = host.events
    assert isinstance(started, ToolStarted) and isinstance(finished, ToolFinished)
    assert (started.tool_use_id, started.name, started.input) == (
        SEARCH_ID,
        "web_search",
        {"query": "tiller agent"},
    )
    assert (finished.tool_use_id, finished.status) == (SEARCH_ID, "ok")
    assert "https://example.org/b" in finished.output


def test_an_interrupted_server_tool_call_finishes_as_interrupted_and_is_dropped() -> None:
    host = Host()
    draft = Draft(cast(TurnHost, host))
    draft.block(SEARCH_USE)
    assert draft.salvage() == []
    finished = host.events[-1]
    assert isinstance(finished, ToolFinished) and finished.status == "interrupted"


# --- usage and cost ---------------------------------------------------------------------------


def test_web_searches_cost_ten_dollars_a_thousand_and_fetches_only_tokens() -> None:
    spec = resolve(MODEL)
    base = price(Usage(1000, 100), spec).cost_usd
    searched = price(Usage(1000, 100, web_search_requests=3), spec).cost_usd
    fetched = price(Usage(1000, 100, web_fetch_requests=3), spec).cost_usd
    assert base is not None and searched is not None
    assert searched - base == pytest.approx(0.03)
    assert fetched == base


def test_usage_reads_the_server_tool_counts_and_adds_them_up() -> None:
    api = {
        "input_tokens": 1,
        "server_tool_use": {"web_search_requests": 2, "web_fetch_requests": 1},
    }
    once = Usage.from_api(api)
    twice = once + once
    assert (twice.web_search_requests, twice.web_fetch_requests) == (4, 2)
    wire = twice.to_wire()
    assert (wire["webSearchRequests"], wire["webFetchRequests"]) == (4, 2)
    assert Usage.from_wire(wire) == Usage(2, 0, web_search_requests=4, web_fetch_requests=2)
    assert "webSearchRequests" not in Usage(1).to_wire()


# --- through the real SDK and the fake API ----------------------------------------------------


@pytest_asyncio.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI(api_key="k") as fake:
        yield fake


async def test_a_web_fetch_request_carries_its_beta_header(api: FakeMessagesAPI) -> None:
    tools = ServerTools(WebToolSettings(True), WebToolSettings(True)).definitions("default")
    api.enqueue({"content": [SEARCH_USE, SEARCH_RESULT, CITED_TEXT]})
    client = AnthropicClient(api.base_url, "k")
    response = await client.stream(request(tools), RecordingListener(), resolve(MODEL))
    assert list(response.content) == [SEARCH_USE, SEARCH_RESULT, CITED_TEXT]
    assert response.usage.web_search_requests == 1
    (sent,) = api.message_requests()
    assert sent.headers["anthropic-beta"] == "web-fetch-2025-09-10"


async def test_the_fake_refuses_a_server_tool_it_does_not_know(api: FakeMessagesAPI) -> None:
    unknown = ({"type": "web_browse_20990101", "name": "web_browse"},)
    client = AnthropicClient(api.base_url, "k")
    with pytest.raises(Exception, match="web_browse_20990101"):
        await client.stream(request(unknown), RecordingListener(), resolve(MODEL))


async def test_the_fake_refuses_allowed_and_blocked_domains_in_one_tool(
    api: FakeMessagesAPI,
) -> None:
    both = WebToolSettings(True, allowed_domains=("a.example",), blocked_domains=("b.example",))
    tools = ServerTools(web_fetch=both).definitions("default")
    client = AnthropicClient(api.base_url, "k")
    with pytest.raises(Exception, match="either allowed_domains or blocked_domains"):
        await client.stream(request(tools), RecordingListener(), resolve(MODEL))
