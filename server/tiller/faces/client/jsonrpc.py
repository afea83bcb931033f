"""JSON-RPC 2.0 with LSP framing (``Content-Length`` headers) over a pair of asyncio streams.

A small client side of the protocol: requests with futures, notifications dispatched in the
order they arrive (synchronously, so a renderer sees them in order), server -> client requests
answered by async handlers that ``$/cancelRequest`` cancels. When the stream ends every pending
request fails with ``ConnectionError`` and ``closed`` is set.

Frames are read and written as the server reads and writes them
(`tiller.faces.common.framing`): a frame that cannot be read (a bad header, a body over the
size limit or not JSON, a frame the end of the stream cut short) costs that frame alone. It is
logged; a pending request it answered fails with `RpcError` (`PARSE_ERROR`), and a request of
the server's it carried is answered with that error, so neither side waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tiller.faces.common.framing import Frame, FrameDecoder, Garbled, Message, encode

log = logging.getLogger(__name__)

CANCEL_REQUEST = "$/cancelRequest"
PARSE_ERROR = -32700
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
READ_CHUNK = 64 * 1024

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
        self._last_id = 0
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._serving: dict[int | str, asyncio.Task[None]] = {}
        self.closed = asyncio.Event()

    # --- client -> server ----------------------------------------------------------------

    async def request(self, method: str, params: Any = None) -> Any:
        """The result, or ``RpcError``; ``ConnectionError`` if the connection ends first."""
        if self.closed.is_set():
            raise ConnectionError("the server connection is closed")
        self._last_id += 1
        msg_id = self._last_id
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
            self._writer.write(encode(message))
        except (ConnectionError, RuntimeError, OSError) as err:
            raise ConnectionError(f"cannot write to the server: {err}") from err

    # --- server -> client ----------------------------------------------------------------

    async def serve(self) -> None:
        """Read until the stream ends; then fail what is pending and set ``closed``."""
        decoder = FrameDecoder()
        try:
            while chunk := await self._read():
                self._receive(decoder.feed(chunk))
            self._receive(decoder.finish())
        finally:
            self.closed.set()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the server went away"))
            for task in self._serving.values():
                task.cancel()

    async def _read(self) -> bytes:
        """The next bytes from the server; empty at the end of the stream."""
        try:
            return await self._reader.read(READ_CHUNK)
        except ConnectionError:
            return b""

    def _receive(self, frames: list[Frame]) -> None:
        for frame in frames:
            match frame:
                case Message(payload=dict() as message):
                    self._dispatch(message)
                case Message():
                    log.warning("ignored a message from the server that is not an object")
                case Garbled():
                    self._garbled(frame)

    def _garbled(self, frame: Garbled) -> None:
        log.warning("unreadable message from the server, skipped: %s", frame.reason)
        msg_id = frame.request_id
        if msg_id is None:
            return
        reason = f"unreadable message (skipped to the next header): {frame.reason}"
        future = self._pending.get(msg_id)
        if future is not None:
            if not future.done():
                future.set_exception(RpcError(PARSE_ERROR, reason))
        elif not self._issued(msg_id):  # a request of the server's: it must not wait for us
            self._answer(msg_id, error=(PARSE_ERROR, reason))

    def _issued(self, msg_id: int | str) -> bool:
        """Whether ``msg_id`` is the id of one of this client's requests (1, 2, 3, ...)."""
        return isinstance(msg_id, int) and 0 < msg_id <= self._last_id

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
