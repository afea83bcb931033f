"""LSP base-protocol framing, for every face that speaks it (the server's stdio, the terminal
clients): ``Content-Length`` headers, a body, and recovery from a bad frame.

pygls's own stdio reader trusts every header: a wrong ``Content-Length`` desynchronises the
stream for good and a huge one allocates it (``MemoryError``). Here a sans-IO
`FrameDecoder` turns bytes into `Message` (a parsed JSON value) or `Garbled` (what was wrong)
and, after a bad frame, resynchronises on the next ``Content-Length:`` header, never one that
is past the start of the next message: a broken frame costs that frame alone. `encode` frames
one message.

Header lines may end in LF alone. The LSP base protocol says CRLF, but HTTP, whose header
format it borrows, lets a recipient take a bare LF as a line end (RFC 9112, section 2.2), and
Go's jsonrpc2 (gopls) reads header lines the same way; the header still ends at the first
empty line, so such a frame is as unambiguous as a CRLF one and is read, not refused.
(Refusing it would cost more than tolerating it: until the next CRLF CRLF nothing marks where
it ends, and that is inside the following frame.)

No I/O here: the server reads stdin in `tiller.faces.lsp.stdio`, the terminal clients an
asyncio stream in `tiller.faces.client.jsonrpc`; both feed bytes to a `FrameDecoder`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024

_HEADER_END = re.compile(rb"\r?\n\r?\n")  # the first empty line; a bare LF ends a line too
_LONGEST_HEADER_END = len(b"\r\n\r\n")
_LINE_END = re.compile(rb"\r?\n")
_MARKER = re.compile(rb"content-length:", re.IGNORECASE)
_MARKER_LEN = len(b"content-length:")
_HEADER_NAMES = (b"content-length:", b"content-type:")
_HEADER_START = re.compile(rb"content-(?:length|type):", re.IGNORECASE)
# RFC 9110: a field name is a token; a value holds no CR, LF or other control character.
_HEADER_LINE = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*")
_DIGITS = re.compile(rb"[0-9]{1,20}")
# Best effort: the request id near the start of a body we could not parse, so the sender's
# request fails at once instead of waiting forever. Only looked for before any "params".
_ID = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,18}(?![0-9.eE])|"(?:[^"\\]|\\.){0,200}")')
_LONGEST_INT_DIGITS = 40


@dataclass(frozen=True)
class Message:
    """One well-framed body, parsed as JSON."""

    payload: Any


@dataclass(frozen=True)
class Garbled:
    """A frame that could not be read; ``request_id`` is the id it seemed to carry, if any."""

    reason: str
    request_id: int | str | None = None


Frame = Message | Garbled


def _parse_int(text: str) -> int | float:
    # Integers far beyond any valid value become floats (inf at worst), so they fail type
    # checks with -32602 instead of failing the whole frame on Python's digit limit.
    return int(text) if len(text) <= _LONGEST_INT_DIGITS else float(text)


def parse_body(body: bytes) -> Any:
    """The JSON value of a body; ValueError when it is not JSON (or nested too deep)."""
    try:
        return json.loads(body, parse_int=_parse_int)
    except RecursionError as err:
        raise ValueError("JSON nested too deeply") from err


def guess_request_id(body: bytes) -> int | str | None:
    """The ``id`` a (broken) request body seems to carry, looked for before its params."""
    head = body[:4096]
    params_at = head.find(b'"params"')
    match = _ID.search(head if params_at < 0 else head[:params_at])
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def encode(payload: Any) -> bytes:
    """One framed message."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class FrameDecoder:
    """Bytes in, frames out. Never buffers more than one body of at most `MAX_BODY_BYTES`.

    States: reading headers (``_length is None``), reading a body of ``_length`` bytes, or
    skipping to the next ``Content-Length:`` after a bad frame (``_skipping``).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._length: int | None = None
        self._skipping = False

    @property
    def mid_frame(self) -> bool:
        """Part of a frame has arrived and the rest is awaited."""
        return self._length is not None or (not self._skipping and bool(self._buffer.strip()))

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while (frame := self._next()) is not None:
            frames.append(frame)
        return frames

    def expire(self) -> list[Frame]:
        """The sender went quiet mid-frame: give up on that frame and resynchronise."""
        if not self.mid_frame:
            return []
        if self._length is not None:
            reason = (
                f"only {len(self._buffer)} of the {self._length} bytes announced by "
                "Content-Length arrived, then nothing"
            )
            garbled = Garbled(reason, self._guess_id(0, 0))
            self._skip_from(0)
        else:
            garbled = Garbled("an incomplete header block, then nothing")
            self._buffer.clear()
        return [garbled, *self.feed(b"")]

    def finish(self) -> list[Frame]:
        """End of stream: a frame cut short is reported."""
        if not self.mid_frame:
            return []
        request_id = self._guess_id(0, 0) if self._length is not None else None
        self._buffer.clear()
        self._length = None
        return [Garbled("the stream ended inside a message", request_id)]

    # --- states -------------------------------------------------------------------------------

    def _next(self) -> Frame | None:
        if self._skipping and not self._skip():
            return None
        if self._length is None:
            return self._header()
        return self._body(self._length)

    def _skip(self) -> bool:
        """Drop bytes up to the next ``Content-Length:``; True once found."""
        match = _MARKER.search(self._buffer)
        if match is None:
            # Keep a tail that may be the start of a marker split across reads.
            del self._buffer[: max(0, len(self._buffer) - _MARKER_LEN + 1)]
            return False
        del self._buffer[: match.start()]
        self._skipping = False
        return True

    def _skip_from(self, offset: int) -> None:
        """Drop ``offset`` bytes, then look for the next header (one right there included)."""
        del self._buffer[:offset]
        self._length = None
        self._skipping = True

    def _guess_id(self, start: int, resync: int) -> int | str | None:
        """The id of the broken message at ``start``: looked for up to the header where
        reading resumes (the first at or after ``resync``), so never the id of the message
        that follows."""
        following = _MARKER.search(self._buffer, resync, start + 4096)
        end = following.start() if following else start + 4096
        return guess_request_id(bytes(self._buffer[start:end]))

    def _header(self) -> Frame | None:
        stripped = len(self._buffer) - len(self._buffer.lstrip(b"\r\n \t"))
        del self._buffer[:stripped]
        start = bytes(self._buffer[:_MARKER_LEN]).lower()
        if not any(start.startswith(name) for name in _HEADER_NAMES):
            if any(name.startswith(start) for name in _HEADER_NAMES):
                return None  # too short to tell yet (or empty)
            self._skip_from(0)
            return Garbled(f"bytes that are not a header: {start!r}...")
        end = _HEADER_END.search(self._buffer, 0, MAX_HEADER_BYTES + _LONGEST_HEADER_END)
        if end is None:
            if len(self._buffer) <= MAX_HEADER_BYTES:
                return None
            self._skip_from(1)
            return Garbled(f"a header block longer than {MAX_HEADER_BYTES} bytes")
        length, lines_end = _content_length(bytes(self._buffer[: end.start()]))
        if isinstance(length, str):
            # Read on from where the header lines end: this frame's body, or the first line
            # that is no header line (a line end lost, the empty line missing: the next
            # frame's header may be in there, and the empty line found may be its own).
            resync = end.end() if lines_end is None else max(lines_end, 1)
            request_id = self._guess_id(0, resync)
            self._skip_from(resync)
            return Garbled(length, request_id)
        del self._buffer[: end.end()]
        self._length = length
        return self._body(length)

    def _body(self, length: int) -> Frame | None:
        if _HEADER_START.match(self._buffer):
            # A header where the body should be: this frame announced a body it did not send.
            # Read that header now rather than take it (and its body) as this one's body.
            self._skip_from(0)
            return Garbled(f"a header where a body of {length} bytes should be")
        if len(self._buffer) < length:
            return None
        body = bytes(self._buffer[:length])
        try:
            payload = parse_body(body)
        except ValueError as err:
            # A Content-Length too small or too large: the next header may be inside.
            request_id = self._guess_id(0, 0)
            self._skip_from(0)
            return Garbled(f"a body that is not JSON ({err})", request_id)
        del self._buffer[:length]
        self._length = None
        return Message(payload)


def _content_length(block: bytes) -> tuple[int | str, int | None]:
    """The body length a header block announces, or what is wrong with it; and where its
    header lines end: the offset of the first line that is none (None: every line is one)."""
    lengths: set[int] = set()
    starts = [0, *(end.end() for end in _LINE_END.finditer(block))]
    for start, line in zip(starts, _LINE_END.split(block), strict=True):
        if _HEADER_LINE.fullmatch(line) is None:
            return f"a header line that is not 'Name: value': {line[:80]!r}", start
        name, _, value = line.partition(b":")
        if name.lower() != b"content-length":
            continue  # Content-Type and unknown headers are allowed
        digits = value.strip(b" \t")
        if _DIGITS.fullmatch(digits) is None:
            return f"Content-Length is not a non-negative integer: {digits[:40]!r}", None
        lengths.add(int(digits))
    if not lengths:
        return "a header block without Content-Length", None
    if len(lengths) > 1:
        return f"Content-Length given twice, differently: {sorted(lengths)}", None
    [length] = lengths
    if length == 0:
        return "Content-Length: 0 (a message cannot be empty)", None
    if length > MAX_BODY_BYTES:
        return f"Content-Length {length} is larger than the limit of {MAX_BODY_BYTES} bytes", None
    return length, None
