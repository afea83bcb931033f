"""The terminal clients' JSON-RPC connection (LSP framing) over in-memory streams.

The framing is the server's (`tiller.faces.common.framing`, tested in test_stdio_framing.py);
here: what the client does with what it reads, a frame it cannot read included."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from tiller.faces.client.jsonrpc import PARSE_ERROR, Handlers, JsonRpcConnection, RpcError
from tiller.faces.common.framing import MAX_BODY_BYTES, encode


class Wire:
    """The client's writer: collects what it sends, parsed back into messages."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    def messages(self) -> list[Any]:
        out, rest = [], bytes(self.data)
        while rest:
            head, _, rest = rest.partition(b"\r\n\r\n")
            length = int(head.split(b":")[1])
            out.append(json.loads(rest[:length]))
            rest = rest[length:]
        return out


def connect(handlers: Handlers | None = None) -> tuple[asyncio.StreamReader, Wire, Any]:
    reader, wire = asyncio.StreamReader(), Wire()
    rpc = JsonRpcConnection(reader, wire, handlers or Handlers())  # type: ignore[arg-type]
    return reader, wire, rpc


def feed(reader: asyncio.StreamReader, **message: Any) -> None:
    """One message from the server."""
    reader.feed_data(encode({"jsonrpc": "2.0", **message}))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_frames_round_trip_with_non_ascii_text() -> None:
    seen: list[Any] = []
    reader, _, rpc = connect(Handlers(notifications={"tiller/event": seen.append}))
    feed(reader, method="tiller/event", params={"text": "✓ ü"})
    raw = {"jsonrpc": "2.0", "method": "tiller/event", "params": "ü"}
    body = json.dumps(raw, ensure_ascii=False).encode()  # UTF-8 as it is, unescaped
    reader.feed_data(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    reader.feed_eof()
    await rpc.serve()
    assert seen == [{"text": "✓ ü"}, "ü"]


async def test_a_request_gets_its_result_or_its_error() -> None:
    reader, wire, rpc = connect()
    serving = asyncio.create_task(rpc.serve())
    ok = asyncio.create_task(rpc.request("tiller/getState", {}))
    bad = asyncio.create_task(rpc.request("tiller/setMode", {"mode": "x"}))
    await settle()
    first, second = wire.messages()
    assert first["method"] == "tiller/getState" and second["params"] == {"mode": "x"}
    feed(reader, id=second["id"], error={"code": -32602, "message": "unknown mode"})
    feed(reader, id=first["id"], result={"mode": "plan"})
    assert await ok == {"mode": "plan"}
    with pytest.raises(RpcError) as error:
        await bad
    assert (error.value.code, error.value.message) == (-32602, "unknown mode")
    reader.feed_eof()
    await serving


async def test_notifications_arrive_in_order_and_unknown_ones_are_ignored() -> None:
    seen: list[Any] = []
    reader, _, rpc = connect(Handlers(notifications={"tiller/event": seen.append}))
    for n in range(3):
        feed(reader, method="tiller/event", params={"seq": n})
        feed(reader, method="tiller/somethingNew", params={})
    reader.feed_eof()
    await rpc.serve()
    assert seen == [{"seq": 0}, {"seq": 1}, {"seq": 2}]


async def test_server_requests_are_answered_and_unknown_methods_refused() -> None:
    async def confirm(params: Any) -> Any:
        return {"decision": "allow", "for": params["name"]}

    reader, wire, rpc = connect(Handlers(requests={"tiller/confirmTool": confirm}))
    serving = asyncio.create_task(rpc.serve())
    feed(reader, id="s-1", method="tiller/confirmTool", params={"name": "bash"})
    feed(reader, id="s-2", method="window/other", params={})
    await settle()
    answers = {m["id"]: m for m in wire.messages()}
    assert answers["s-1"]["result"] == {"decision": "allow", "for": "bash"}
    assert answers["s-2"]["error"]["code"] == -32601
    reader.feed_eof()
    await serving


async def test_cancel_request_withdraws_a_pending_question() -> None:
    withdrawn = asyncio.Event()

    async def never(params: Any) -> Any:
        try:
            await asyncio.Event().wait()
        finally:
            withdrawn.set()

    reader, wire, rpc = connect(Handlers(requests={"tiller/approvePlan": never}))
    serving = asyncio.create_task(rpc.serve())
    feed(reader, id="p-1", method="tiller/approvePlan", params={})
    await settle()
    feed(reader, method="$/cancelRequest", params={"id": "p-1"})
    await asyncio.wait_for(withdrawn.wait(), 5)
    await settle()
    assert wire.messages()[-1]["error"]["code"] == -32800
    reader.feed_eof()
    await serving


async def test_end_of_stream_fails_pending_requests_and_closes() -> None:
    reader, _, rpc = connect()
    serving = asyncio.create_task(rpc.serve())
    pending = asyncio.create_task(rpc.request("tiller/prompt", {"text": "hi"}))
    await settle()
    reader.feed_eof()
    await serving
    assert rpc.closed.is_set()
    with pytest.raises(ConnectionError):
        await pending
    with pytest.raises(ConnectionError):
        await rpc.request("tiller/getState", {})


# --- what the client could not read before it shared the server's framing --------------------


async def answered(reader: asyncio.StreamReader, rpc: Any, data: bytes) -> Any:
    """The result of request 1 when the server sends ``data``, then its answer."""
    serving = asyncio.create_task(rpc.serve())
    pending = asyncio.create_task(rpc.request("tiller/getState", {}))
    await settle()
    reader.feed_data(data)
    feed(reader, id=1, result={"busy": False})
    result = await pending
    reader.feed_eof()
    await serving
    return result


async def test_a_bad_header_costs_that_frame_and_the_next_answer_arrives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """It used to raise out of ``serve`` (``int("ten")``): the client lost its connection."""
    reader, _, rpc = connect()
    with caplog.at_level(logging.WARNING):
        result = await answered(reader, rpc, b"Content-Length: ten\r\n\r\n{}")
    assert result == {"busy": False}
    assert "Content-Length is not a non-negative integer" in caplog.text


async def test_an_oversized_frame_is_refused_without_reading_it_and_the_next_arrives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """It used to wait for (and buffer) the whole announced body, eating every later frame."""
    reader, _, rpc = connect()
    with caplog.at_level(logging.WARNING):
        result = await answered(reader, rpc, b"Content-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1))
    assert result == {"busy": False}
    assert f"larger than the limit of {MAX_BODY_BYTES} bytes" in caplog.text


async def test_a_header_line_longer_than_a_stream_line_is_not_taken_for_the_end() -> None:
    """A 100 KiB header line overran the reader's line limit and ended the connection."""
    reader, _, rpc = connect()
    result = await answered(reader, rpc, b"X-Junk: " + b"j" * 100_000 + b"\r\n\r\n")
    assert result == {"busy": False}


async def test_an_unreadable_answer_fails_its_request_with_a_parse_error() -> None:
    reader, _, rpc = connect()
    serving = asyncio.create_task(rpc.serve())
    pending = asyncio.create_task(rpc.request("tiller/getState", {}))
    await settle()
    broken = b'{"jsonrpc":"2.0","id":1,"result":{"busy":'
    reader.feed_data(b"Content-Length: %d\r\n\r\n" % len(broken) + broken)
    with pytest.raises(RpcError) as error:
        await pending
    assert error.value.code == PARSE_ERROR
    assert "not JSON" in error.value.message
    assert not rpc.closed.is_set()  # the connection goes on
    later = asyncio.create_task(rpc.request("tiller/getState", {}))
    await settle()
    feed(reader, id=2, result={"busy": True})
    assert await later == {"busy": True}
    reader.feed_eof()
    await serving


async def test_an_answer_cut_short_by_the_end_of_the_stream_fails_with_what_happened() -> None:
    reader, _, rpc = connect()
    serving = asyncio.create_task(rpc.serve())
    pending = asyncio.create_task(rpc.request("tiller/getState", {}))
    await settle()
    body = encode({"jsonrpc": "2.0", "id": 1, "result": {"busy": False}})
    reader.feed_data(body[:-5])
    reader.feed_eof()
    await serving
    with pytest.raises(RpcError) as error:
        await pending
    assert error.value.code == PARSE_ERROR
    assert "the stream ended inside a message" in error.value.message
    assert rpc.closed.is_set()


async def read_past(reader: asyncio.StreamReader, data: bytes, seen: asyncio.Event) -> None:
    """Send ``data``, then a notification; return once the client handled it (so ``data``
    was handled before: notifications and frames are handled in the order they arrive)."""
    reader.feed_data(data)
    feed(reader, method="test/mark", params={})
    await asyncio.wait_for(seen.wait(), 5)


def unreadable(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def test_an_unreadable_request_of_the_server_is_answered_so_it_waits_for_nothing() -> None:
    mark = asyncio.Event()
    reader, wire, rpc = connect(Handlers(notifications={"test/mark": lambda _: mark.set()}))
    serving = asyncio.create_task(rpc.serve())
    broken = b'{"jsonrpc":"2.0","id":"s-9","method":"tiller/confirmTool","params":{"na'
    await read_past(reader, unreadable(broken), mark)
    [answer] = wire.messages()
    assert answer["id"] == "s-9" and answer["error"]["code"] == PARSE_ERROR
    reader.feed_eof()
    await serving


async def test_an_unreadable_late_answer_to_a_settled_request_is_not_answered() -> None:
    """Its id is the client's own: answering it would send the server a stray response."""
    mark = asyncio.Event()
    reader, wire, rpc = connect(Handlers(notifications={"test/mark": lambda _: mark.set()}))
    serving = asyncio.create_task(rpc.serve())
    pending = asyncio.create_task(rpc.request("tiller/getState", {}))
    await settle()
    feed(reader, id=1, result={"busy": False})
    assert await pending == {"busy": False}
    await read_past(reader, unreadable(b'{"jsonrpc":"2.0","id":1,"result":'), mark)
    assert [m.get("method") for m in wire.messages()] == ["tiller/getState"]  # nothing more
    reader.feed_eof()
    await serving
