"""Streaming from the Messages API: raw events accumulated linearly, tool input limits, idle
timeouts, error classification (x-should-retry, mid-stream errors, garbage SSE), retry notices.

Uses the real SDK over HTTP against tests/fakeapi.py, and a tiny raw-SSE server replaying the
streams the anthropic-sdk-python project recorded from the real API
(tests/fixtures/sdk_streams, from anthropics/anthropic-sdk-python tests/lib/streaming/fixtures).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
import pytest_asyncio

from fakeapi import FakeMessagesAPI
from recording_listener import RecordingListener
from tiller.jsontypes import JSON
from tiller.model import anthropic_provider, sdk_adapter
from tiller.model.anthropic_provider import AnthropicClient, StreamAccumulator, model_info
from tiller.model.history import Message, text_block
from tiller.model.models import resolve
from tiller.model.provider import ModelInfo, ModelRequest, ModelResponse, ProviderError
from tiller.protocol import Thinking

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sdk_streams"


Listener = RecordingListener


def request(model: str = "claude-sonnet-5-5") -> ModelRequest:
    return ModelRequest(
        model=model,
        system="system",
        tools=(),
        messages=(Message("user", (text_block("hi"),)),),
        max_tokens=4096,
        thinking=Thinking(),
    )


async def run(client: AnthropicClient, listener: Listener | None = None) -> ModelResponse:
    return await client.stream(request(), listener or Listener(), resolve("claude-sonnet-5-5"))


@pytest_asyncio.fixture
async def api() -> AsyncIterator[FakeMessagesAPI]:
    async with FakeMessagesAPI(api_key="k") as fake:
        yield fake


def client_for(base_url: str, **options: Any) -> AnthropicClient:
    return AnthropicClient(base_url, "k", **options)


# --- a server that replays raw SSE bytes ---------------------------------------------------------


@contextlib.asynccontextmanager
async def raw_sse_server(body: bytes) -> AsyncIterator[str]:
    """Answers every POST with 200 and ``body`` as the event stream, then closes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()


async def replay(name: str, **options: Any) -> tuple[ModelResponse, Listener]:
    listener = Listener()
    # the recorded files end without the blank line that closes their last event
    async with raw_sse_server((FIXTURES / name).read_bytes() + b"\n\n") as url:
        response = await run(client_for(url, **options), listener)
    return response, listener


# --- recorded streams ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")))
async def test_every_recorded_stream_accumulates_to_a_response_valid_to_send_back(
    name: str,
) -> None:
    try:
        response, listener = await replay(name)
    except ProviderError as err:  # a stream that never finishes is an error, never a crash
        assert err.kind == "connection" and err.retryable
        return
    for block in response.content:
        if block["type"] == "tool_use":
            assert isinstance(block["input"], dict)
        if block["type"] == "text":
            assert block["text"]
    assert listener.blocks == list(response.content)


async def test_recorded_tool_use_stream_gives_text_deltas_and_the_parsed_input() -> None:
    response, listener = await replay("tool_use_response.txt")
    assert "".join(listener.texts) == "I'll check the current weather in Paris for you."
    tool = response.content[-1]
    assert tool["type"] == "tool_use" and tool["name"] == "get_weather"
    assert tool["input"] == {"location": "Paris"}
    assert response.stop_reason == "tool_use" and response.input_errors == {}
    assert response.usage.input_tokens == 377


async def test_a_message_delta_without_usage_is_not_an_error() -> None:
    response, _ = await replay("message_delta_omitted_usage_response.txt")
    assert response.content == ({"type": "text", "text": "Hello there!"},)
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (25, 8)
    assert (usage.cache_write_tokens, usage.cache_read_tokens) == (10, 5)


async def test_a_refusal_keeps_its_stop_details() -> None:
    response, _ = await replay("refusal_response.txt")
    assert response.stop_reason == "refusal"
    assert response.stop_details is not None and response.stop_details["category"] == "cyber"
    assert response.content == ()  # the empty text block is not kept


async def test_a_tool_call_cut_off_by_max_tokens_is_flagged_never_half_parsed() -> None:
    response, _ = await replay("incomplete_partial_json_response.txt")
    assert response.stop_reason == "max_tokens"
    tool = response.content[-1]
    assert tool["type"] == "tool_use" and tool["input"] == {}
    assert "cut off by max_tokens" in response.input_errors[tool["id"]]
    assert response.content[0]["text"].startswith("I'll create a comprehensive tax guide")


async def test_invalid_tool_json_is_an_input_error() -> None:
    response, _ = await replay("tool_use_invalid_json_response.txt")
    tool = response.content[-1]
    assert tool["input"] == {} and "not a valid JSON object" in response.input_errors[tool["id"]]


# --- linear accumulation and the input limit ----------------------------------------------------


def tool_events(index: int, tool_id: str, pieces: list[str]) -> list[JSON]:
    start = {"type": "tool_use", "id": tool_id, "name": "write_file", "input": {}}
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_a_10_mb_tool_input_in_small_deltas_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    content = "x" * (10 * 1024 * 1024)
    pieces = chunks(json.dumps({"path": "big.txt", "content": content}), 64)
    parses: list[int] = []
    real_loads = json.loads

    def counting_loads(text: str) -> Any:
        parses.append(len(text))
        return real_loads(text)

    monkeypatch.setattr(json, "loads", counting_loads)  # what the accumulator calls
    acc = StreamAccumulator(Listener(), max_tool_input_bytes=64 * 1024 * 1024)
    for event in tool_events(0, "toolu_big", pieces):
        acc.feed(event)
    acc.feed({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    response = acc.finish()
    # one parse of the whole input, and one constant-size step per event: linear in the input
    assert len(parses) == 1 and parses[0] == sum(len(p) for p in pieces)
    assert acc.events == len(pieces) + 3
    assert response.content[0]["input"]["content"] == content


def test_a_tool_input_over_the_limit_stops_accumulating_and_says_how_to_write_in_parts() -> None:
    limit = 1024 * 1024
    big = chunks(json.dumps({"path": "a.txt", "content": "y" * (2 * limit)}), 100)
    small = chunks(json.dumps({"path": "b.txt"}), 5)
    acc = StreamAccumulator(Listener(), max_tool_input_bytes=limit)
    for event in [*tool_events(0, "toolu_big", big), *tool_events(1, "toolu_ok", small)]:
        acc.feed(event)
        open_tool = acc.open.get(0)
        if isinstance(open_tool, anthropic_provider._ToolUse) and open_tool.over:
            assert open_tool.parts == []  # nothing more is kept once over the limit
    acc.feed({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    acc.feed({"type": "message_stop"})
    response = acc.finish()
    big_block, ok_block = response.content
    assert big_block["input"] == {} and ok_block["input"] == {"path": "b.txt"}
    message = response.input_errors["toolu_big"]
    assert f"{limit:,} bytes" in message and "write_file" in message and "edit_file" in message
    assert "toolu_ok" not in response.input_errors


async def test_a_512_kb_tool_input_streams_through_the_real_sdk(api: FakeMessagesAPI) -> None:
    content = "z" * (512 * 1024)
    api.enqueue(
        {
            "content": [{"type": "tool_use", "name": "write_file", "input": {"content": content}}],
            "inputJsonChunk": 32,
        }
    )
    response = await run(client_for(api.base_url))
    assert response.content[0]["input"] == {"content": content}


# --- timeouts, errors, retries -------------------------------------------------------------------


async def test_a_stream_idle_for_too_long_ends_as_a_retryable_timeout(api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [{"type": "text", "text": "partial answer"}], "hangAfterEvents": 3})
    listener = Listener()
    with pytest.raises(ProviderError) as caught:
        await run(client_for(api.base_url, stream_idle_seconds=0.5), listener)
    assert caught.value.kind == "timeout" and caught.value.retryable
    assert "No data from the model API for 0.5 s" in caught.value.message
    assert "".join(listener.texts) == "partial answer"  # what was shown stays shown
    await api.wait_disconnects(1)  # the HTTP stream was closed


def test_the_client_timeout_bounds_each_attempt() -> None:
    timeout = sdk_adapter.client_timeout(60)
    assert (timeout.connect, timeout.read) == (10.0, 60)
    client = client_for("http://127.0.0.1:9", stream_idle_seconds=60)
    assert client.client.max_retries == 2
    assert client.client.timeout.read == 65  # type: ignore[union-attr]


async def test_cancelling_closes_the_http_stream(api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [{"type": "text", "text": "never ends"}], "hangAfterEvents": 2})
    task = asyncio.create_task(run(client_for(api.base_url)))
    await api.wait_hanging()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await api.wait_disconnects(1)


async def test_overloaded_with_x_should_retry_false_is_not_retryable(api: FakeMessagesAPI) -> None:
    api.enqueue({"error": {"status": 529, "type": "overloaded_error", "shouldRetry": False}})
    with pytest.raises(ProviderError) as caught:
        await run(client_for(api.base_url))
    assert caught.value.kind == "overloaded" and not caught.value.retryable
    assert len(api.requests) == 1  # the SDK obeyed the header too


async def test_sdk_retries_are_announced_with_their_wait(api: FakeMessagesAPI) -> None:
    """Guards sdk_adapter's reading of the SDK's retry log: fails if the SDK changes it."""
    busy = {"error": {"status": 529, "type": "overloaded_error", "retryAfter": "0"}}
    api.enqueue(busy, busy, {"content": [{"type": "text", "text": "ok"}]})
    listener = Listener()
    response = await run(client_for(api.base_url), listener)
    assert response.content == ({"type": "text", "text": "ok"},)
    assert len(listener.notices) == 2
    for notice in listener.notices:
        assert re.fullmatch(r"Model API busy or unreachable: retrying in \d+\.\d s", notice)


def test_the_sdk_still_logs_its_retries_the_way_the_adapter_reads_them() -> None:
    source = inspect.getsource(anthropic._base_client.AsyncAPIClient._sleep_for_retry)
    assert 'log.info("Retrying request to %s in %f seconds"' in source
    record = logging.LogRecord(
        sdk_adapter.SDK_LOGGER, logging.INFO, __file__, 1,
        "Retrying request to %s in %f seconds", ("/v1/messages", 1.5), None,
    )  # fmt: skip
    assert sdk_adapter.retry_wait_of(record) == 1.5
    assert anthropic.AsyncStream.raw_events is not None


@pytest.mark.parametrize(
    ("kind", "expected"), [("overloaded_error", "overloaded"), ("api_error", "server")]
)
async def test_a_mid_stream_error_event_is_classified_and_retryable(
    api: FakeMessagesAPI, kind: str, expected: str
) -> None:
    api.enqueue(
        {
            "content": [{"type": "text", "text": "some text first"}],
            "midStreamError": {"afterEvents": 4, "type": kind, "message": "try later"},
        }
    )
    listener = Listener()
    with pytest.raises(ProviderError) as caught:
        await run(client_for(api.base_url), listener)
    assert caught.value.kind == expected and caught.value.retryable
    assert "try later (mid-stream)" in caught.value.message
    assert listener.texts  # shown before the error, kept by the listener


async def test_a_dropped_stream_is_a_retryable_connection_error(api: FakeMessagesAPI) -> None:
    api.enqueue({"content": [{"type": "text", "text": "hello there"}], "dropAfterEvents": 3})
    with pytest.raises(ProviderError) as caught:
        await run(client_for(api.base_url))
    assert caught.value.kind == "connection" and caught.value.retryable


@pytest.mark.parametrize(
    "garbage",
    [
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "ind\n\n',
        b"event: message_start\ndata: \xff\xfe not utf-8\n\n",
        b'event: content_block_start\ndata: {"type": "content_block_start"}\n\n',
    ],
)
async def test_garbage_sse_is_a_retryable_server_error_not_internal(garbage: bytes) -> None:
    start = (FIXTURES / "basic_response.txt").read_bytes().split(b"\n\n")[0] + b"\n\n"
    async with raw_sse_server(start + garbage) as url:
        with pytest.raises(ProviderError) as caught:
            await run(client_for(url))
    assert caught.value.kind == "server" and caught.value.retryable
    assert "malformed" in caught.value.message


async def test_a_stream_that_ends_without_message_stop_is_a_connection_error() -> None:
    start = (FIXTURES / "basic_response.txt").read_bytes().split(b"\n\n")[0] + b"\n\n"
    async with raw_sse_server(start) as url:
        with pytest.raises(ProviderError) as caught:
            await run(client_for(url))
    assert caught.value.kind == "connection" and caught.value.retryable


def test_models_endpoint_capabilities_become_catalog_fields() -> None:
    supported = {"supported": True}
    unsupported = {"supported": False}
    fields: JSON = {
        "id": "claude-x-9",
        "type": "model",
        "display_name": "Claude X 9",
        "created_at": "2026-10-01T00:00:00Z",
        "lifecycle": "active",
        "max_input_tokens": 2_000_000,
        "max_tokens": 256_000,
        "capabilities": {
            "thinking": {
                "supported": True,
                "types": {
                    "adaptive": supported,
                    "enabled": unsupported,
                    "disabled": unsupported,
                    "between_tools": supported,
                },
            },
        },
    }
    info = anthropic.types.ModelInfo.construct(**fields)
    assert model_info(info) == ModelInfo(
        "claude-x-9", "Claude X 9", 2_000_000, 256_000, "adaptive", "between_tools"
    )
