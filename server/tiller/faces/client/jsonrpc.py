"""JSON-RPC 2.0 with LSP framing (``Content-Length`` headers) over a pair of asyncio streams.

A small client side of the protocol: requests with futures, notifications dispatched in the
order they arrive (synchronously, so a renderer sees them in order), server -> client requests
answered by async handlers that ``$/cancelRequest`` cancels. When the stream ends every pending
request fails with ``ConnectionError`` and ``closed`` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

CANCEL_REQUEST = "$/cancelRequest"
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

NotificationHandler = Callable[[Any], None]
RequestHandler = Callable[[Any], Awaitable[Any]]


class RpcError(Exception):
    """An error answer: ``code`` and ``message`` as the server sent them."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True)
class Handlers:
    """What the client does with the server's notifications and requests."""

    notifications: Mapping[str, NotificationHandler] = field(default_factory=dict)
    requests: Mapping[str, RequestHandler] = field(default_factory=dict)


def frame(message: Mapping[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(reader: asyncio.StreamReader) -> Any:
    """The next message; ``None`` at end of stream."""
    length: int | None = None
    while True:
        try:
            line = await reader.readline()
        except (ConnectionError, ValueError):
            return None
        if not line:
            return None
        header = line.strip()
        if not header:
            if length is not None:
                break
            continue
        name, _, value = header.decode("ascii", errors="replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    try:
        body = await reader.readexactly(length)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return json.loads(body)


class JsonRpcConnection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        handlers: Handlers,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._handlers = handlers
        self._ids = itertools.count(1)
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._serving: dict[int | str, asyncio.Task[None]] = {}
        self.closed = asyncio.Event()

    # --- client -> server ----------------------------------------------------------------

    async def request(self, method: str, params: Any = None) -> Any:
        """The result, or ``RpcError``; ``ConnectionError`` if the connection ends first."""
        if self.closed.is_set():
            raise ConnectionError("the server connection is closed")
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        try:
            self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            return await future
        finally:
            self._pending.pop(msg_id, None)

    def notify(self, method: str, params: Any = None) -> None:
        if not self.closed.is_set():
            self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: Mapping[str, Any]) -> None:
        try:
            self._writer.write(frame(message))
        except (ConnectionError, RuntimeError, OSError) as err:
            raise ConnectionError(f"cannot write to the server: {err}") from err

    # --- server -> client ----------------------------------------------------------------

    async def serve(self) -> None:
        """Read until the stream ends; then fail what is pending and set ``closed``."""
        try:
            while (message := await read_message(self._reader)) is not None:
                if isinstance(message, dict):
                    self._dispatch(message)
        finally:
            self.closed.set()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the server went away"))
            for task in self._serving.values():
                task.cancel()

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        msg_id = message.get("id")
        if method is None:
            future = self._pending.get(msg_id) if isinstance(msg_id, int | str) else None
            if future is None or future.done():
                return
            error = message.get("error")
            if isinstance(error, dict):
                future.set_exception(
                    RpcError(
                        int(error.get("code", INTERNAL_ERROR)),
                        str(error.get("message", "")),
                        error.get("data"),
                    )
                )
            else:
                future.set_result(message.get("result"))
        elif msg_id is None:
            self._on_notification(str(method), message.get("params"))
        else:
            self._on_request(msg_id, str(method), message.get("params"))

    def _on_notification(self, method: str, params: Any) -> None:
        if method == CANCEL_REQUEST:
            target = params.get("id") if isinstance(params, dict) else None
            task = self._serving.get(target) if isinstance(target, int | str) else None
            if task is not None:
                task.cancel()
            return
        handler = self._handlers.notifications.get(method)
        if handler is None:
            return
        try:
            handler(params)
        except Exception:
            log.exception("handling %s failed", method)

    def _on_request(self, msg_id: Any, method: str, params: Any) -> None:
        handler = self._handlers.requests.get(method)
        if handler is None:
            self._answer(msg_id, error=(METHOD_NOT_FOUND, f"no handler for {method}"))
            return
        self._serving[msg_id] = asyncio.create_task(self._serve_request(msg_id, handler, params))

    async def _serve_request(self, msg_id: Any, handler: RequestHandler, params: Any) -> None:
        try:
            result = await handler(params)
        except asyncio.CancelledError:
            self._answer(msg_id, error=(REQUEST_CANCELLED, "cancelled"))
        except Exception as err:
            log.exception("answering a request failed")
            self._answer(msg_id, error=(INTERNAL_ERROR, str(err)))
        else:
            self._answer(msg_id, result=result)
        finally:
            self._serving.pop(msg_id, None)

    def _answer(
        self, msg_id: Any, *, result: Any = None, error: tuple[int, str] | None = None
    ) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        if error is None:
            message["result"] = result
        else:
            message["error"] = {"code": error[0], "message": error[1]}
        if not self.closed.is_set():
            with contextlib.suppress(ConnectionError):
                self._send(message)
