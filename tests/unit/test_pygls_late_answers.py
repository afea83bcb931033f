"""A late answer to a request the server cancelled is expected and quiet (it used to log
pygls's "Received response to unknown message id" in `tiller chat` and `tiller run` after
Escape or Ctrl-C during a question); an answer to an id never sent still warns."""

from __future__ import annotations

import io
import logging

import pytest
from pygls.lsp.server import LanguageServer

from tiller.faces.common.wire import plain_dict_converter
from tiller.faces.lsp.pygls_adapter import PyglsEndpoint, cancel_request
from tiller.faces.lsp.stdio import FrameWriter


def endpoint() -> tuple[LanguageServer, PyglsEndpoint]:
    server = LanguageServer("t", "0", converter_factory=plain_dict_converter)
    writer = FrameWriter(io.BytesIO())
    server.protocol.set_writer(writer)
    return server, PyglsEndpoint(server.protocol, writer)


async def test_a_late_answer_to_a_cancelled_request_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, wire = endpoint()
    future = server.protocol.send_request_async("tiller/confirmTool", {}, msg_id="tiller-x")
    cancel_request(server.protocol, "tiller-x")
    with caplog.at_level(logging.WARNING):
        wire.message(
            {"jsonrpc": "2.0", "id": "tiller-x", "error": {"code": -32800, "message": "c"}}
        )
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert not future.done()
    future.cancel()


async def test_an_answer_to_an_unknown_id_still_warns(caplog: pytest.LogCaptureFixture) -> None:
    _, wire = endpoint()
    with caplog.at_level(logging.WARNING):
        wire.message({"jsonrpc": "2.0", "id": "never-sent", "result": None})
    assert any("unknown message id" in r.getMessage() for r in caplog.records)


async def test_a_second_answer_to_a_cancelled_request_warns_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, wire = endpoint()
    future = server.protocol.send_request_async("tiller/checkpoint", {}, msg_id="tiller-y")
    cancel_request(server.protocol, "tiller-y")
    wire.message({"jsonrpc": "2.0", "id": "tiller-y", "result": {"continue": True}})
    with caplog.at_level(logging.WARNING):
        wire.message({"jsonrpc": "2.0", "id": "tiller-y", "result": {"continue": True}})
    assert any("unknown message id" in r.getMessage() for r in caplog.records)
    future.cancel()
