"""One ACP session's way out: its ``session/update`` notifications in order, sent by one task.

The core's sink is synchronous and called from inside the turn; the outbox queues what it
says and one writer task sends it, so updates never overtake each other. A ``turnEnded``
goes through the same queue: the prompt waiting for it is answered only after every update
of its turn has been written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from acp.interfaces import Client

from tiller.faces.acp.updates import TurnEnd, Update

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Send:
    update: Update


@dataclass(frozen=True)
class _Ended:
    turn_id: str
    end: TurnEnd


@dataclass(frozen=True)
class _Flush:
    done: asyncio.Future[None]


_Item = _Send | _Ended | _Flush


class Outbox:
    def __init__(self, client: Client, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._endings: dict[str, asyncio.Future[TurnEnd]] = {}
        self._writer: asyncio.Task[None] | None = None

    def send(self, *updates: Update) -> None:
        for update in updates:
            self._put(_Send(update))

    def turn_ended(self, turn_id: str, end: TurnEnd) -> None:
        self._put(_Ended(turn_id, end))

    async def ending(self, turn_id: str) -> TurnEnd:
        """How turn ``turn_id`` ended, once everything it said has been sent."""
        future = self._endings.setdefault(turn_id, asyncio.get_running_loop().create_future())
        try:
            return await asyncio.shield(future)
        finally:
            if future.done():
                self._endings.pop(turn_id, None)

    async def flush(self) -> None:
        """Wait until everything queued so far has been written."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._put(_Flush(done))
        await done

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer

    def _put(self, item: _Item) -> None:
        self._queue.put_nowait(item)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(
                self._write(), name=f"acp-outbox-{self.session_id}"
            )

    async def _write(self) -> None:
        while True:
            match await self._queue.get():
                case _Send(update=update):
                    try:
                        await self.client.session_update(session_id=self.session_id, update=update)
                    except Exception as err:  # the client went away: nothing left to tell
                        log.warning("session/update not sent: %s", err)
                case _Ended(turn_id=turn_id, end=end):
                    loop = asyncio.get_running_loop()
                    future = self._endings.setdefault(turn_id, loop.create_future())
                    if not future.done():
                        future.set_result(end)
                case _Flush(done=done):
                    if not done.done():
                        done.set_result(None)
