"""The server's stdio: frames read from stdin on a thread of its own, written whole to stdout.

`serve` reads stdin in a thread of its own (never the pool that file work or pygls use), turns
the bytes into frames with the shared decoder (`tiller.faces.common.framing`: strict headers,
size limits, resynchronisation after a bad frame) and hands each to an `Endpoint`; a frame left
incomplete for `STALL_SECONDS` is given up. `FrameWriter` writes framed bytes to stdout.

Nothing here knows pygls: the glue is in `pygls_adapter`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, Protocol

from tiller.faces.common.framing import Frame, FrameDecoder, Garbled, Message, encode

__all__ = ["STALL_SECONDS", "Endpoint", "FrameWriter", "serve"]

log = logging.getLogger(__name__)

STALL_SECONDS = 5.0
READ_CHUNK = 64 * 1024
CHUNKS_IN_FLIGHT = 4


class FrameWriter:
    """pygls's writer interface (``write`` framed bytes, ``close``) over a binary stream.

    A frame goes out whole, one frame at a time: writers on other threads wait for the lock,
    and a descriptor someone made non-blocking (the open file description is shared with
    whoever holds the other copies) gets the rest of a large frame once it can take it, instead
    of a partial write that would splice the next frame into this one's body."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            try:
                fd = self._stream.fileno()
            except (OSError, ValueError):  # no descriptor (an in-memory stream)
                self._stream.write(data)
                self._stream.flush()
                return
            self._stream.flush()
            _write_all(fd, memoryview(data))

    def send(self, payload: Any) -> None:
        self.write(encode(payload))

    def close(self) -> None:
        self._stream.close()


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


class Endpoint(Protocol):
    """Where frames go: a message to dispatch, or a garbled frame to report."""

    def message(self, payload: Any) -> None: ...

    def garbled(self, frame: Garbled) -> None: ...


class _Reader:
    """Runs on the event loop: one call per chunk read, frames dispatched right away.

    (A callback rather than a task reading a queue: one loop iteration less between a
    request's bytes and its handler, which counts when a busy stream makes iterations long.)
    """

    def __init__(
        self, endpoint: Endpoint, slots: threading.Semaphore, stall_seconds: float
    ) -> None:
        self.endpoint = endpoint
        self.slots = slots
        self.stall_seconds = stall_seconds
        self.decoder = FrameDecoder()
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = self.loop.create_future()
        self.stall: asyncio.TimerHandle | None = None

    def chunk(self, data: bytes) -> None:
        self.slots.release()
        if self.stall is not None:
            self.stall.cancel()
            self.stall = None
        if self.done.done():
            return
        try:
            self._dispatch(self.decoder.feed(data) if data else self.decoder.finish())
        except BrokenPipeError as err:  # the client went away: stop serving
            self.done.set_exception(err)
            return
        if not data:
            self.done.set_result(None)
        else:
            self._watch()

    def _watch(self) -> None:
        if self.decoder.mid_frame:
            self.stall = self.loop.call_later(self.stall_seconds, self._expire)

    def _expire(self) -> None:
        self.stall = None
        try:
            self._dispatch(self.decoder.expire())
        except BrokenPipeError as err:
            self.done.set_exception(err)
            return
        self._watch()  # the frame read on from may be waiting too

    def _dispatch(self, frames: list[Frame]) -> None:
        for frame in frames:
            match frame:
                case Message(payload=payload):
                    self.endpoint.message(payload)
                case Garbled():
                    self.endpoint.garbled(frame)


def _pump(
    fd: int,
    loop: asyncio.AbstractEventLoop,
    on_chunk: Callable[[bytes], None],
    slots: threading.Semaphore,
) -> None:
    """Read ``fd`` in this thread; at most `CHUNKS_IN_FLIGHT` chunks wait for the loop."""
    while True:
        slots.acquire()
        try:
            chunk = os.read(fd, READ_CHUNK)
        except OSError as err:
            log.error("reading stdin failed: %s", err)
            chunk = b""
        try:
            loop.call_soon_threadsafe(on_chunk, chunk)
        except RuntimeError:  # the loop is closed: the server is exiting
            return
        if not chunk:
            return


async def serve(endpoint: Endpoint, fd: int, stall_seconds: float = STALL_SECONDS) -> None:
    """Read frames from ``fd`` until end of stream, handing each to ``endpoint``.

    A frame left incomplete for ``stall_seconds`` is reported and skipped. Raises
    BrokenPipeError when writing to the client fails.
    """
    slots = threading.Semaphore(CHUNKS_IN_FLIGHT)
    reader = _Reader(endpoint, slots, stall_seconds)
    threading.Thread(
        target=_pump,
        args=(fd, reader.loop, reader.chunk, slots),
        name="tiller-stdin",
        daemon=True,
    ).start()
    await reader.done
