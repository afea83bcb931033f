"""A running command's output as it arrives: passed on to a listener, and kept for an interrupt.

The caller creates one per call and hands it to the command (through ``ToolContext.live``);
``on_text`` gets decoded chunks (UTF-8 split across chunks is decoded whole); ``text()`` is
what arrived so far, head and tail kept like the tool result, so an interrupted call can still
show its partial output.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

TextListener = Callable[[str], None]


class OutputBuffer:
    """Keeps the first ``head_size`` and last ``tail_size`` bytes fed to it, counts the rest."""

    def __init__(self, head_size: int, tail_size: int) -> None:
        self.head_size = head_size
        self.tail_size = tail_size
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.head_size - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.tail_size
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n… [truncated {self.dropped} bytes of output] …\n{tail}"


class LiveOutput:
    def __init__(self, on_text: TextListener | None = None, cap: int = 30_000) -> None:
        self._on_text = on_text
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._kept = OutputBuffer(cap * 2 // 3, cap // 3)

    def feed(self, data: bytes) -> None:
        self._kept.feed(data)
        text = self._decoder.decode(data)
        if text and self._on_text is not None:
            self._on_text(text)

    def text(self) -> str:
        """The output so far (long output keeps its beginning and end)."""
        return self._kept.text()
