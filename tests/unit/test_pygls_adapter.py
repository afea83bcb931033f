"""`tiller.faces.lsp.pygls_adapter` against the installed pygls: these fail loudly when an
upgrade moves the private state the adapter relies on (``_request_futures``,
``_result_types``, ``_shutdown``) or changes how an error answer resolves a pending request."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from processes import until
from tiller.faces.common.framing import Garbled
from tiller.faces.common.wire import plain_dict_converter
from tiller.faces.lsp.pygls_adapter import (
    PyglsEndpoint,
    cancel_request,
    forget_request,
    shutting_down,
)
from tiller.faces.lsp.stdio import FrameWriter


def sent(stream: io.BytesIO) -> list[dict[str, Any]]:
    """The JSON bodies written to ``stream`` (LSP framing)."""
    out: list[dict[str, Any]] = []
    data = stream.getvalue()
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


async def answer_to(stream: io.BytesIO, msg_id: int) -> dict[str, Any]:
    """The answer to request ``msg_id`` once it has been written (it must be)."""
    answers = await until(lambda: [m for m in sent(stream) if m.get("id") == msg_id])
    return answers[0]


@pytest.fixture
def wired() -> tuple[LanguageServer, PyglsEndpoint, io.BytesIO]:
    server = LanguageServer("t", "0", converter_factory=plain_dict_converter)
    stream = io.BytesIO()
    writer = FrameWriter(stream)
    server.protocol.set_writer(writer)
    return server, PyglsEndpoint(server.protocol, writer), stream


async def test_a_sent_request_is_tracked_where_the_adapter_forgets_it(wired: Any) -> None:
    server, _, _ = wired
    protocol = server.protocol
    future = protocol.send_request_async("tiller/confirmTool", {}, msg_id="tiller-a")
    assert "tiller-a" in protocol._request_futures
    assert "tiller-a" in protocol._result_types
    forget_request(protocol, "tiller-a")
    assert "tiller-a" not in protocol._request_futures
    assert "tiller-a" not in protocol._result_types
    future.cancel()


async def test_cancel_request_forgets_it_and_tells_the_client(wired: Any) -> None:
    server, endpoint, stream = wired
    future = server.protocol.send_request_async("tiller/checkpoint", {}, msg_id="tiller-b")
    cancel_request(server.protocol, "tiller-b")
    assert sent(stream)[-1] == {
        "jsonrpc": "2.0",
        "method": "$/cancelRequest",
        "params": {"id": "tiller-b"},
    }
    endpoint.message({"jsonrpc": "2.0", "id": "tiller-b", "result": {"continue": True}})
    assert not future.done()  # a late answer is ignored
    future.cancel()


async def test_an_answer_without_result_fails_the_waiting_request(wired: Any) -> None:
    server, endpoint, _ = wired
    future = server.protocol.send_request_async("tiller/confirmTool", {}, msg_id="tiller-c")
    endpoint.message({"jsonrpc": "2.0", "id": "tiller-c"})
    with pytest.raises(JsonRpcException, match="without 'result'"):
        await asyncio.wait_for(future, 1)


async def test_an_error_answer_fails_the_waiting_request(wired: Any) -> None:
    server, endpoint, _ = wired
    future = server.protocol.send_request_async("tiller/approvePlan", {}, msg_id="tiller-d")
    endpoint.message({"jsonrpc": "2.0", "id": "tiller-d", "error": {"code": 1, "message": "no"}})
    with pytest.raises(JsonRpcException, match="no"):
        await asyncio.wait_for(future, 1)


async def test_a_result_answer_resolves_the_waiting_request(wired: Any) -> None:
    server, endpoint, _ = wired
    future = server.protocol.send_request_async("tiller/confirmTool", {}, msg_id="tiller-e")
    endpoint.message({"jsonrpc": "2.0", "id": "tiller-e", "result": {"decision": "allow"}})
    assert await asyncio.wait_for(future, 1) == {"decision": "allow"}


async def test_requests_after_shutdown_are_answered_with_an_error(wired: Any) -> None:
    server, endpoint, stream = wired
    assert shutting_down(server.protocol) is False
    endpoint.message({"jsonrpc": "2.0", "id": 1, "method": "shutdown"})
    assert (await answer_to(stream, 1))["result"] is None
    assert shutting_down(server.protocol) is True
    endpoint.message({"jsonrpc": "2.0", "id": 2, "method": "tiller/getState"})
    assert (await answer_to(stream, 2))["error"]["code"] == -32600


async def test_a_request_pygls_cannot_structure_is_answered(wired: Any) -> None:
    _, endpoint, stream = wired
    endpoint.message({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"x": 1}})
    assert sent(stream)[-1]["id"] == 3
    assert sent(stream)[-1]["error"]["code"] == -32602


async def test_a_garbled_frame_is_answered_with_a_parse_error(wired: Any) -> None:
    _, endpoint, stream = wired
    endpoint.garbled(Garbled("bad header", 4))
    assert sent(stream)[-1]["id"] == 4
    assert sent(stream)[-1]["error"]["code"] == -32700
