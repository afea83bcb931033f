"""Streams recorded from the real API, replayed through Tiller's own provider.

The recordings are the public Python SDK's test fixtures (tests/fixtures/sdk_streams/README.md
names their source). Each is served verbatim by the fake API (spec key ``replay``) to
``tiller.model.anthropic_provider.AnthropicClient``, which talks HTTP through the real ``anthropic``
SDK. The expectations below were written from reading each recording, not from running the
provider: what the loop must get (text deltas, finished blocks in API param shape, which calls
must not run, stop reason and details, usage with the cache fields).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from fakeapi import FIXTURES, FakeMessagesAPI
from recording_listener import RecordingListener
from tiller.model.anthropic_provider import AnthropicClient
from tiller.model.history import Message
from tiller.model.models import resolve
from tiller.model.provider import ModelRequest, ModelResponse
from tiller.model.usage import Usage
from tiller.protocol import Thinking

JSON = dict[str, Any]
MODEL = "claude-sonnet-5-5"


def recorded_start(fixture: str, index: int) -> JSON:
    """The content block as the recording starts it (for blocks passed on as sent)."""
    for line in (FIXTURES / f"{fixture}.txt").read_text().splitlines():
        if line.startswith("data: "):
            data = json.loads(line.removeprefix("data: "))
            if data["type"] == "content_block_start" and data["index"] == index:
                block: JSON = data["content_block"]
                return block
    raise LookupError(f"{fixture}: no content_block_start with index {index}")


def text(value: str) -> JSON:
    return {"type": "text", "text": value}


def tool_use(tool_id: str, name: str, tool_input: JSON) -> JSON:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


@dataclass(frozen=True)
class Expected:
    text: str
    blocks: tuple[JSON, ...]
    stop_reason: str | None
    usage: Usage
    stop_details: JSON | None = None
    unrunnable: tuple[str, ...] = ()  # tool_use ids the loop must answer with an error
    notes: tuple[str, ...] = field(default_factory=tuple)


PARIS = "I'll check the current weather in Paris for you."
TAXES = (
    "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file "
    "called taxes.txt. Let me do that for you now."
)
EXPECTED: dict[str, Expected] = {
    "basic_response": Expected(
        "Hello there!", (text("Hello there!"),), "end_turn", Usage(11, 6, 0, 0)
    ),
    "container_response": Expected(
        "Hello there!", (text("Hello there!"),), "end_turn", Usage(11, 6, 0, 0)
    ),
    "extra_fields_response": Expected("Hello!", (text("Hello!"),), "end_turn", Usage(11, 3)),
    "context_management_response": Expected(
        "Hello there!", (text("Hello there!"),), "end_turn", Usage(25, 8, 0, 0)
    ),
    "fallback_credit_response": Expected(
        "Hello there!", (text("Hello there!"),), "end_turn", Usage(25, 8)
    ),
    # A beta block announcing a model fallback: passed on as sent, with the text after it.
    "fallback_response": Expected(
        "Hello there!",
        (recorded_start("fallback_response", 0), text("Hello there!")),
        "end_turn",
        Usage(25, 8),
    ),
    # A beta compaction block: its content arrives in a `compaction_delta`; if the block is
    # kept to be sent back, it must be the complete one (the API refuses nulls back).
    "compaction_response": Expected(
        "Hello there!",
        (
            {
                "type": "compaction",
                "content": "Earlier conversation summarized.",
                "encrypted_content": "EpwBCioIDxgCEAEYASJALd_opaque_compaction_payload",
            },
            text("Hello there!"),
        ),
        "end_turn",
        Usage(30, 8),
    ),
    "tool_use_response": Expected(
        PARIS,
        (
            text(PARIS),
            tool_use("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", {"location": "Paris"}),
        ),
        "tool_use",
        Usage(377, 65, 0, 0),
    ),
    # `max_tokens` in the middle of a tool call's input: no content_block_stop for it, and
    # its JSON is incomplete. The call must not run.
    "incomplete_partial_json_response": Expected(
        TAXES,
        (text(TAXES), tool_use("toolu_01EKqbqmZrGRXy18eN7m9kvY", "make_file", {})),
        "max_tokens",
        Usage(450, 124, 0, 0),
        unrunnable=("toolu_01EKqbqmZrGRXy18eN7m9kvY",),
    ),
    # Complete but invalid input JSON (`celsius` unquoted): must not run either.
    "tool_use_invalid_json_response": Expected(
        PARIS,
        (text(PARIS), tool_use("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", {})),
        "tool_use",
        Usage(377, 65, 0, 0),
        unrunnable=("toolu_01NRLabsLyVHZPKxbKvkfSMn",),
    ),
    # An empty text block then `refusal` with its details.
    "refusal_response": Expected(
        "",
        (),
        "refusal",
        Usage(20, 0),
        stop_details={
            "type": "refusal",
            "category": "cyber",
            "explanation": "This request was refused due to policy.",
        },
    ),
    # message_start says stop_details {"type": "refusal"}; the final message_delta says null.
    "stop_details_response": Expected("hi", (text("hi"),), "end_turn", Usage(11, 1)),
    # Usage only in message_delta (none in message_start), cache fields included.
    "missing_usage_response": Expected("hi", (text("hi"),), "end_turn", Usage(11, 1, 5, 3)),
    # ... and usage.server_tool_use: the web searches the API ran (priced per search).
    "missing_usage_rich_delta_response": Expected(
        "hi", (text("hi"),), "end_turn", Usage(11, 1, 5, 3, web_search_requests=2)
    ),
    "usage_omitted_response": Expected("Hello", (text("Hello"),), "end_turn", Usage(12, 6)),
    "usage_omitted_with_optional_fields_response": Expected(
        "Hello", (text("Hello"),), "end_turn", Usage(12, 6, 3, 4, web_search_requests=1)
    ),
    # message_delta's cumulative input counts replace message_start's.
    "message_delta_fields_response": Expected(
        "Hello there!",
        (text("Hello there!"),),
        "end_turn",
        Usage(40, 8, 7, 12, web_search_requests=1),
    ),
    # message_delta with only output_tokens: message_start's cache counts stay.
    "message_delta_omitted_usage_response": Expected(
        "Hello there!", (text("Hello there!"),), "end_turn", Usage(25, 8, 5, 10)
    ),
    # Server tools run by the API: their blocks are passed on as sent, the server_tool_use
    # with the input its deltas built; the client tool_use with its parsed input.
    "server_tool_use_response": Expected(
        "Let me search for that.",
        (
            text("Let me search for that."),
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01WebSearch",
                "name": "web_search",
                "input": {"query": "weather in Paris"},
            },
        ),
        "end_turn",
        Usage(42, 40, 0, 0),
    ),
    "server_tool_result_response": Expected(
        "",
        (
            recorded_start("server_tool_result_response", 0),
            tool_use("tu_client_001", "ask_internal_tool", {"query": "test"}),
            recorded_start("server_tool_result_response", 2),
            recorded_start("server_tool_result_response", 3),
        ),
        "tool_use",
        Usage(50, 20, 0, 0),
    ),
    # A block started at index 1 (none at 0), then message_stop: no message_delta at all.
    "out_of_order_response": Expected("", (), None, Usage(11, 1)),
}


Recorder = RecordingListener


@pytest.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI(api_key="test") as fake:
        yield fake


async def replay(api: FakeMessagesAPI, fixture: str) -> tuple[ModelResponse, Recorder]:
    api.enqueue({"replay": fixture})
    request = ModelRequest(
        model=MODEL,
        system="You are a test.",
        tools=(),
        messages=(Message("user", (text("hi"),)),),
        max_tokens=1024,
        thinking=Thinking(),
    )
    recorder = Recorder()
    client = AnthropicClient(api.base_url, "test")
    try:
        response = await client.stream(request, recorder, resolve(MODEL))
    finally:
        await client.client.close()  # the SDK's HTTP pool, before the test's loop closes
    return response, recorder


def test_every_recording_has_expectations() -> None:
    recordings = {path.stem for path in FIXTURES.glob("*.txt")}
    assert recordings == set(EXPECTED)


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
async def test_recorded_stream_reaches_the_loop_intact(api: FakeMessagesAPI, fixture: str) -> None:
    expected = EXPECTED[fixture]
    response, heard = await replay(api, fixture)

    assert "".join(heard.texts) == expected.text
    assert list(response.content) == list(expected.blocks)
    assert heard.blocks == list(response.content)  # what was shown is what is kept
    assert response.stop_reason == expected.stop_reason
    assert response.stop_details == expected.stop_details
    assert response.usage == expected.usage
    assert sorted(response.input_errors) == sorted(expected.unrunnable)
    [request] = api.message_requests()
    assert request.body["stream"] is True


async def test_a_malformed_tool_input_is_not_called_cut_off(api: FakeMessagesAPI) -> None:
    """The model must learn that its JSON was invalid, not that it ran out of room."""
    response, _ = await replay(api, "tool_use_invalid_json_response")
    message = response.input_errors["toolu_01NRLabsLyVHZPKxbKvkfSMn"]
    assert "json" in message.lower()
    assert "cut off by tool_use" not in message
