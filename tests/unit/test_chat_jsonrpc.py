"""The terminal clients' JSON-RPC connection (LSP framing) over in-memory streams."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tiller.faces.client.jsonrpc import Handlers, JsonRpcConnection, RpcError, frame, read_message


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
    reader.feed_data(frame({"jsonrpc": "2.0", **message}))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_frames_round_trip_with_non_ascii_text() -> None:
    reader = asyncio.StreamReader()
    message = {"jsonrpc": "2.0", "method": "tiller/event", "params": {"text": "✓ ü"}}
    reader.feed_data(frame(message) + frame({"id": 1}))
    reader.feed_eof()
    assert await read_message(reader) == message
    assert await read_message(reader) == {"id": 1}
    assert await read_message(reader) is None


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
