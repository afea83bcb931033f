"""Slicing a session into a child: a spec picks ranges of turns to keep, to summarize with the
model, or to compact (structure kept, tool results shrunk), and messages to inject.

    0:4, summarize:4:18:'the auth bug', compact:18:25, inject:'now run the tests', 80%:

Ranges are of turns (a slice never separates a tool_use from its result), half-open
(``A:B`` is turns A … B-1), counted from 0; an end may be left out (to the last turn) and
either bound may be a percentage of the turns (``80%:``). Quoted text takes ``'…'`` or
``"…"`` with a backslash escaping the quote. ``parse`` is pure; ``build`` assembles the
child's history (asking the model only for summaries).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from tiller.errors import InvalidParams
from tiller.jsontypes import JSON
from tiller.model import history
from tiller.model.history import Message, text_block

COMPACT_RESULT_CHARS = 300  # what a compacted tool result keeps


class SpecError(InvalidParams):
    def __init__(self, position: int, message: str) -> None:
        super().__init__(f"slice spec, at position {position}: {message}")
        self.position = position


@dataclass(frozen=True)
class Bound:
    """A turn index, or a share of the turns (``percent``); None: the start or the end."""

    value: float
    percent: bool = False

    def resolve(self, turns: int) -> int:
        if self.percent:
            return min(turns, math.floor(turns * self.value / 100))
        return int(self.value)


@dataclass(frozen=True)
class Range:
    start: Bound | None
    end: Bound | None
    position: int

    def resolve(self, turns: int) -> tuple[int, int]:
        start = 0 if self.start is None else self.start.resolve(turns)
        end = turns if self.end is None else self.end.resolve(turns)
        if not 0 <= start <= end <= turns:
            raise SpecError(self.position, f"range {start}:{end} is not within the {turns} turn(s)")
        return start, end


@dataclass(frozen=True)
class Keep:
    range: Range


@dataclass(frozen=True)
class Summarize:
    range: Range
    focus: str | None


@dataclass(frozen=True)
class Compact:
    range: Range


@dataclass(frozen=True)
class Inject:
    text: str


Piece = Keep | Summarize | Compact | Inject

_NUMBER = re.compile(r"\d+(?:\.\d+)?%?")
_LONGEST_NUMBER = 18  # digits: any turn index or percentage is far shorter
_WORD = re.compile(r"[a-z]+")


@dataclass
class _Reader:
    """A cursor over the spec text (mutable: the parser's position)."""

    text: str
    at: int = 0

    def skip_spaces(self) -> None:
        while self.at < len(self.text) and self.text[self.at].isspace():
            self.at += 1

    def done(self) -> bool:
        self.skip_spaces()
        return self.at >= len(self.text)

    def peek(self) -> str:
        self.skip_spaces()
        return self.text[self.at] if self.at < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "the end"
            raise SpecError(self.at, f"expected {char!r}, found {found}")
        self.at += 1

    def match(self, pattern: re.Pattern[str]) -> str | None:
        self.skip_spaces()
        found = pattern.match(self.text, self.at)
        if found is None:
            return None
        self.at = found.end()
        return found.group()

    def bound(self) -> Bound | None:
        self.skip_spaces()
        start = self.at
        token = self.match(_NUMBER)
        if token is None:
            return None
        shown = f"{token[:8]}…{token[-1]}" if len(token) > 12 else token
        whole = token.rstrip("%").partition(".")[0].lstrip("0") or "0"
        if len(whole) > _LONGEST_NUMBER:  # int() would fail on more than 4,300 digits
            raise SpecError(start, f"the number {shown} ({len(whole)} digits) is too large")
        if token.endswith("%"):
            value = float(token[:-1])
            if value > 100:
                raise SpecError(start, f"{shown} is more than 100%")
            return Bound(value, percent=True)
        if "." in token:
            raise SpecError(start, f"a turn index is a whole number, not {shown}")
        return Bound(int(whole))

    def range(self) -> Range:
        position = self.at
        self.skip_spaces()
        position = self.at
        start = self.bound()
        self.expect(":")
        end = self.bound()
        return Range(start, end, position)

    def quoted(self) -> str:
        self.skip_spaces()
        quote = self.peek()
        if quote not in ("'", '"'):
            raise SpecError(self.at, "expected quoted text ('…' or \"…\")")
        start = self.at
        self.at += 1
        out: list[str] = []
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == "\\" and self.at + 1 < len(self.text):
                out.append(self.text[self.at + 1])
                self.at += 2
                continue
            if char == quote:
                self.at += 1
                return "".join(out)
            out.append(char)
            self.at += 1
        raise SpecError(start, "the quoted text is not closed")


def parse(spec: str) -> tuple[Piece, ...]:
    """The pieces of ``spec``, or SpecError naming the position of the first mistake."""
    reader = _Reader(spec)
    pieces: list[Piece] = []
    if reader.done():
        raise SpecError(0, "the spec is empty")
    while True:
        pieces.append(_piece(reader))
        if reader.done():
            return tuple(pieces)
        reader.expect(",")


def _piece(reader: _Reader) -> Piece:
    reader.skip_spaces()
    start = reader.at
    word = reader.match(_WORD)
    match word:
        case None:
            return Keep(reader.range())
        case "summarize":
            reader.expect(":")
            span = reader.range()
            focus = None
            if reader.peek() == ":":
                reader.expect(":")
                focus = reader.quoted()
            return Summarize(span, focus)
        case "compact":
            reader.expect(":")
            return Compact(reader.range())
        case "inject":
            reader.expect(":")
            text = reader.quoted()
            if not text.strip():
                raise SpecError(start, "an injected message must not be empty")
            return Inject(text)
        case _:
            raise SpecError(
                start, f"unknown piece {word!r}: use A:B, summarize:A:B, compact:A:B or inject:'…'"
            )


def turns_of(messages: Sequence[Message]) -> list[tuple[Message, ...]]:
    """The history cut before each user message that answers no tool call (a prompt), so a
    turn always holds its tool calls' results."""
    starts = [
        i
        for i, m in enumerate(messages)
        if m.role == "user" and not any(b.get("type") == "tool_result" for b in m.content)
    ]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(messages)]
    return [tuple(messages[a:b]) for a, b in itertools.pairwise(bounds) if a < b]


Summarizer = Callable[[Sequence[Message], str | None], Awaitable[str]]


async def build(
    pieces: Sequence[Piece],
    messages: Sequence[Message],
    summarize: Summarizer,
    *,
    keep_open_loop: bool = False,
) -> tuple[Message, ...]:
    """The child's history: the pieces in order, made valid for the API, without thinking.

    A slice is a new conversation (its prefix is made of summaries, injections and chosen
    turns), so every thinking block in it would be bound to a different conversation and
    refused by the API: they are all left out (``history.without_thinking``, which also says
    what ``keep_open_loop`` is for)."""
    turns = turns_of(messages)
    out: list[Message] = []
    for piece in pieces:
        match piece:
            case Keep(range=span):
                a, b = span.resolve(len(turns))
                out.extend(m for turn in turns[a:b] for m in turn)
            case Compact(range=span):
                a, b = span.resolve(len(turns))
                out.extend(_compacted(m) for turn in turns[a:b] for m in turn)
            case Summarize(range=span, focus=focus):
                a, b = span.resolve(len(turns))
                chosen = [m for turn in turns[a:b] for m in turn]
                if chosen:
                    summary = await summarize(chosen, focus)
                    label = f"Summary of turns {a}–{b - 1}" + (f" ({focus})" if focus else "")
                    out.append(Message("user", (text_block(f"{label}:\n\n{summary}"),)))
            case Inject(text=text):
                out.append(Message("user", (text_block(text),)))
    return history.without_thinking(out, keep_open_loop=keep_open_loop)


def _compacted(message: Message) -> Message:
    """Structure kept, weight dropped: tool results cut short, thinking left out."""
    blocks: list[JSON] = []
    for block in message.content:
        match block.get("type"):
            case "thinking" | "redacted_thinking":
                continue
            case "tool_result":
                text = _result_text(block.get("content"))
                if len(text) > COMPACT_RESULT_CHARS:
                    cut = len(text) - COMPACT_RESULT_CHARS
                    text = f"{text[:COMPACT_RESULT_CHARS]} … [{cut} characters compacted away]"
                blocks.append({**block, "content": text or "(no output)"})
            case _:
                blocks.append(block)
    return Message(message.role, tuple(blocks))


def _result_text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")
