"""A running command's output as ``toolOutput`` events: coalesced to at most ten events a
second, and capped in all (the tool's result carries the rest)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

EVENTS_PER_SECOND = 10
LIVE_CAP_CHARS = 64_000
CUT_MARKER = "\n… [live output cut here; the result shows its end]\n"


class CoalescedOutput:
    """Collects chunks; sends them joined, at most every ``interval`` seconds."""

    def __init__(
        self,
        send: Callable[[str], None],
        interval: float = 1 / EVENTS_PER_SECOND,
        cap: int = LIVE_CAP_CHARS,
    ) -> None:
        self._send = send
        self._interval = interval
        self._room = cap
        self._pending: list[str] = []
        self._last = -interval
        self._timer: asyncio.TimerHandle | None = None

    def add(self, text: str) -> None:
        if self._room <= 0:
            return
        self._pending.append(text)
        if self._timer is not None:
            return
        wait = self._last + self._interval - time.monotonic()
        if wait <= 0:
            self.flush()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending or self._room <= 0:
            return
        text = "".join(self._pending)
        self._pending.clear()
        if len(text) >= self._room:
            text = text[: self._room] + CUT_MARKER
        self._room -= len(text)
        self._last = time.monotonic()
        self._send(text)
