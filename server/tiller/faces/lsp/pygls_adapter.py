"""Everything Tiller needs from pygls beyond its documented API, in one place.

pygls 2.1.1 keeps in-flight requests to the client in ``JsonRPCProtocol._request_futures`` and
``_result_types`` (keyed by message id), and the "shutdown received" flag in ``_shutdown``.
``tests/unit/test_pygls_adapter.py`` fails loudly when an upgrade moves them.

It also serves a pygls server over our own framing (`tiller.faces.lsp.stdio`) instead of
``server.start_io()``: every incoming value goes through `tiller.faces.common.wire.triage`
first, so a request without params is answered, an answer without a result reaches the waiting
request as an error, and a request pygls cannot structure is answered instead of dropped. The
answer a client still sends to a request we cancelled (``cancel_request``: an interrupt during
a question) is dropped quietly; pygls would log "Received response to unknown message id".
"""

from __future__ import annotations

import asyncio
import logging
import sys
import weakref
from collections import OrderedDict
from typing import Any, BinaryIO, Final

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol
from pygls.server import JsonRPCServer

from tiller.faces.common.framing import Garbled
from tiller.faces.common.wire import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    Deliver,
    Drop,
    MsgId,
    Reject,
    error_response,
    triage,
)
from tiller.faces.lsp.stdio import FrameWriter, serve
from tiller.jsontypes import JSON

log = logging.getLogger(__name__)

CANCELLED_KEPT: Final = 1024
"""How many ids of requests we cancelled are remembered, to take their late answers quietly."""

_cancelled: weakref.WeakKeyDictionary[JsonRPCProtocol, OrderedDict[MsgId, None]] = (
    weakref.WeakKeyDictionary()
)


# --- private state of JsonRPCProtocol ---------------------------------------------------------


def forget_request(protocol: JsonRPCProtocol, msg_id: MsgId) -> None:
    """Drop the bookkeeping of a request we sent, so a late answer is ignored quietly."""
    protocol._request_futures.pop(msg_id, None)
    protocol._result_types.pop(msg_id, None)


def cancel_request(protocol: JsonRPCProtocol, msg_id: MsgId) -> None:
    """Forget a request we sent and tell the client with ``$/cancelRequest``; its answer, if
    the client still sends one, is then dropped without pygls's "unknown message id" warning."""
    forget_request(protocol, msg_id)
    ids = _cancelled.setdefault(protocol, OrderedDict())
    ids[msg_id] = None
    while len(ids) > CANCELLED_KEPT:
        ids.popitem(last=False)
    protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))


def late_answer(protocol: JsonRPCProtocol, message: JSON) -> bool:
    """Whether ``message`` answers a request we cancelled (it is then forgotten)."""
    if "method" in message or message.get("id") is None:
        return False
    ids = _cancelled.get(protocol)
    if ids is None or message["id"] not in ids:
        return False
    del ids[message["id"]]
    return True


def shutting_down(protocol: JsonRPCProtocol) -> bool:
    """``shutdown`` was received (pygls then drops every request but ``exit`` unanswered)."""
    return bool(protocol._shutdown)


# --- serving over tiller.faces.lsp.stdio ------------------------------------------------


class PyglsEndpoint:
    """Hands checked messages to a pygls protocol; answers what pygls would leave unanswered."""

    def __init__(self, protocol: JsonRPCProtocol, writer: FrameWriter) -> None:
        self.protocol = protocol
        self.writer = writer

    def message(self, payload: Any) -> None:
        match triage(payload):
            case Deliver(message=message):
                self._deliver(message)
            case Reject(id=msg_id, code=code, reason=reason):
                log.warning("invalid message from the client: %s", reason)
                self.writer.send(error_response(msg_id, code, reason))
            case Drop(reason=reason):
                log.warning("ignored a message from the client: %s", reason)

    def garbled(self, frame: Garbled) -> None:
        log.warning("unreadable message from the client, skipped: %s", frame.reason)
        reason = f"unreadable message (skipped to the next header): {frame.reason}"
        self.writer.send(error_response(frame.request_id, PARSE_ERROR, reason))

    def _deliver(self, message: JSON) -> None:
        if late_answer(self.protocol, message):
            log.debug("late answer to cancelled request %r ignored", message["id"])
            return
        is_call = "method" in message
        is_request = is_call and "id" in message
        if is_request and message["method"] != types.EXIT and shutting_down(self.protocol):
            reason = f"{message['method']}: the server is shutting down"
            self.writer.send(error_response(message["id"], INVALID_REQUEST, reason))
            return
        try:
            structured = self.protocol.structure_message(message)
        except JsonRpcException as err:
            cause = f"{err.message}: {err.__cause__}" if err.__cause__ else err.message
            if not is_call:  # an answer we cannot read: the waiting request fails
                answer = error_response(message["id"], INTERNAL_ERROR, f"unreadable: {cause}")
                structured = self.protocol.structure_message(answer)
            elif is_request:
                log.warning("request %r: %s", message["method"], cause)
                self.writer.send(error_response(message["id"], err.code, cause))
                return
            else:
                log.warning("notification %r ignored: %s", message["method"], cause)
                return
        try:
            self.protocol.handle_message(structured)
        except Exception:
            log.exception("handling a message failed")


def serve_stdio(
    server: JsonRPCServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Serve ``server`` on stdin/stdout until ``exit`` or end of input (replaces ``start_io``).

    ``exit`` leaves through pygls's ``sys.exit``: 0 after ``shutdown``, else 1.
    """
    writer = FrameWriter(stdout or sys.stdout.buffer)
    server.protocol.set_writer(writer)
    fd = (stdin or sys.stdin.buffer).fileno()
    try:
        asyncio.run(serve(PyglsEndpoint(server.protocol, writer), fd))
    except BrokenPipeError:
        log.error("the client closed our stdout: exiting")
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]
