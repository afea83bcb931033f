"""The message list sent to the model: append, repair (pair every tool_use), validate.

Two views of one list. The stored history keeps a prompt that follows tool results as a text
block after them (the API's required order). What is *sent* (``for_request``) never has text
directly after a ``tool_result``: the API docs warn that this teaches the model to expect the
user to speak after every tool result, so it ends its turn early with an empty answer. Such a
prompt is joined into the last tool_result's content instead, clearly marked as the user's
words; that happens only after an interrupted or failed turn, since a normal turn ends with
the assistant's text. We never invent assistant messages to separate them.

A prompt joined so is read as a tool's output (a model may take it for an injection, and keep
doing what the results were for), so a prompt is no longer joined: it is stored after the
``UNANSWERED_RESULTS`` marker (``after_unanswered``) and sent as it is, text after the results
once, as the API's tool-use docs allow. Steers are still joined (the model goes on working
after them), and so is a prompt stored before the marker existed: what was sent once is sent
again byte for byte.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tiller.jsontypes import JSON

Role = Literal["user", "assistant"]

INTERRUPTED_RESULT = "Interrupted by user"
JOINED_PROMPT_HEADER = "[The turn stopped here. The user's next message follows.]\n\n"
UNANSWERED_RESULTS = (
    "[The turn stopped before these results were answered. The user's next message follows.]"
)
STEER_HEADER = "[Sent by the user while you worked; take it into account from here on:]\n\n"


@dataclass(frozen=True)
class Message:
    role: Role
    content: tuple[JSON, ...]

    def to_api(self) -> JSON:
        return {"role": self.role, "content": [dict(block) for block in self.content]}

    @staticmethod
    def from_api(data: JSON) -> Message:
        content = data["content"]
        blocks = ({"type": "text", "text": content},) if isinstance(content, str) else content
        return Message(data["role"], tuple(dict(b) for b in blocks))

    def tool_use_ids(self) -> list[str]:
        return [b["id"] for b in self.content if b.get("type") == "tool_use"]

    def tool_result_ids(self) -> list[str]:
        return [b["tool_use_id"] for b in self.content if b.get("type") == "tool_result"]


def text_block(text: str) -> JSON:
    return {"type": "text", "text": text}


def steer_block(text: str) -> JSON:
    """What the user typed while the turn ran, delivered at a step boundary, marked as such
    (it is joined into the last tool result as it is: see the module doc)."""
    return text_block(STEER_HEADER + text)


def tool_result_block(
    tool_use_id: str, output: str, *, is_error: bool, blocks: Sequence[JSON] = ()
) -> JSON:
    """A tool's result: ``output`` as text, or ``blocks`` (images, tool references) as is."""
    block: JSON = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": list(blocks) if blocks else output or "(no output)",
    }
    if is_error:
        block["is_error"] = True
    return block


def _non_empty(block: JSON) -> bool:
    return not (block.get("type") == "text" and not str(block.get("text", "")).strip())


def append(messages: Sequence[Message], role: Role, blocks: Iterable[JSON]) -> tuple[Message, ...]:
    """A new list with ``blocks`` appended as ``role``; merges into a same-role last message.

    Merging keeps roles alternating when a prompt follows an interrupted turn; tool_result
    blocks always come first in a user message, as the API requires.
    """
    out = list(messages)
    _push(out, role, blocks)
    return tuple(out)


def _push(out: list[Message], role: Role, blocks: Iterable[JSON]) -> None:
    new = tuple(b for b in blocks if _non_empty(b))
    if not new:
        return
    if not out or out[-1].role != role:
        out.append(Message(role, new))
        return
    merged = out[-1].content + new
    if role == "user":
        merged = tuple(b for b in merged if b.get("type") == "tool_result") + tuple(
            b for b in merged if b.get("type") != "tool_result"
        )
    out[-1] = Message(role, merged)


def after_unanswered(messages: Sequence[Message], blocks: Sequence[JSON]) -> list[JSON]:
    """A prompt's ``blocks`` as they are appended to ``messages``: after tool results the model
    never answered (their turn was interrupted or failed before its next response), led by
    ``UNANSWERED_RESULTS`` (once). A message holding that marker is sent as stored: the prompt
    stays the user's own text after the results (``for_request``), where the model reads it
    as the user's words and not as a tool's output."""
    last = messages[-1] if messages else None
    if last is None or last.role != "user" or not last.tool_result_ids():
        return list(blocks)
    if text_block(UNANSWERED_RESULTS) in last.content:
        return list(blocks)
    return [text_block(UNANSWERED_RESULTS), *blocks]


def without_turn(messages: Sequence[Message], prompt: JSON) -> tuple[Message, ...]:
    """The history as it was before the turn whose prompt block is ``prompt``.

    Drops everything after the user message holding ``prompt`` and the prompt block itself
    (tool results it was stored after stay). Used when a turn must leave no trace in what is
    sent to the model: it failed before any reply, or it was refused. The transcript keeps it.
    """
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "user" and prompt in message.content:
            rest = tuple(b for b in message.content if b != prompt)
            head = tuple(messages[:i])
            return (*head, Message("user", rest)) if rest else head
    return tuple(messages)


def repair(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Make a history valid for the API whatever happened to it (linear in its length).

    Every tool_use gets a tool_result in the very next user message (``Interrupted by user``
    when it has none), stray and duplicate tool_results are dropped, empty messages are
    dropped, same-role neighbours are merged, and the list starts with a user message.
    """
    state = _Repair()
    for message in messages:
        state.feed(message)
    return state.result()


@dataclass
class _Repair:
    """``repair`` part way: the messages fed so far, repaired. Only ``out[-1]`` may still
    change as more are fed (merged into); the messages before it are final."""

    out: list[Message] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # tool_use ids of the last assistant message
    seen_uses: set[str] = field(default_factory=set)

    def copy(self) -> _Repair:
        return _Repair(list(self.out), list(self.pending), set(self.seen_uses))

    def feed(self, message: Message) -> None:
        out, pending = self.out, self.pending
        if message.role == "assistant":
            if pending:
                _push(out, "user", _missing_results(pending, ()))
            if not out:
                return  # a history cannot start with the assistant
            content = [
                b
                for b in message.content
                if b.get("type") != "tool_use" or b["id"] not in self.seen_uses
            ]
            _push(out, "assistant", content)
            self.pending = out[-1].tool_use_ids() if out[-1].role == "assistant" else []
            self.seen_uses.update(self.pending)
        else:
            results: dict[str, JSON] = {}
            for b in message.content:
                if b.get("type") == "tool_result" and b["tool_use_id"] in pending:
                    results.setdefault(b["tool_use_id"], b)
            ordered = [
                results.get(tid) or tool_result_block(tid, INTERRUPTED_RESULT, is_error=True)
                for tid in pending
            ]  # one result per tool_use, in the order of the calls; strays dropped
            rest = [b for b in message.content if b.get("type") != "tool_result"]
            _push(out, "user", [*ordered, *rest])
            self.pending = []

    def result(self) -> tuple[Message, ...]:
        """The repaired history (this state is left as it was)."""
        if not self.pending:
            return tuple(self.out)
        out = list(self.out)
        _push(out, "user", _missing_results(self.pending, ()))
        return tuple(out)


THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def without_thinking(
    messages: Sequence[Message], *, keep_open_loop: bool = False
) -> tuple[Message, ...]:
    """The history with its thinking blocks left out, made valid again.

    For compaction and slices, which start a new prefix on purpose: a thinking block is bound
    to everything before it (system, tools, earlier messages), so once anything before it
    changed the API refuses it (400 "bound to a different conversation"). We drop such blocks
    ourselves rather than sending ``prefix_mismatch_behavior: "drop_block"`` with a beta
    header: the result is the same for the model, but the new history is append-only again at
    once, with nothing to remember and send on every later request (docs/protocol.md).

    ``keep_open_loop``: the assistant message a running step continues keeps its thinking:
    the last message when it is the assistant's (a ``pause_turn`` goes on), or the one the
    closing tool results answer. Models that take the budget form of thinking require it
    there ("a final assistant message must start with a thinking block") and run no prefix
    check.
    """
    out = [Message(m.role, tuple(b for b in m.content if b.get("type") not in THINKING_TYPES))
           for m in messages]  # fmt: skip
    if keep_open_loop and messages:
        if messages[-1].role == "assistant":
            out[-1] = messages[-1]
        elif len(messages) >= 2 and messages[-1].tool_result_ids():
            out[-2] = messages[-2]
    return repair(out)


def _missing_results(pending: Sequence[str], answered: Iterable[str]) -> list[JSON]:
    done = set(answered)
    return [
        tool_result_block(tid, INTERRUPTED_RESULT, is_error=True)
        for tid in pending
        if tid not in done
    ]


def for_request(messages: Sequence[Message]) -> tuple[Message, ...]:
    """What is sent to the model: the repaired history with no text right after tool results
    (a prompt stored after tool results is joined into the last result, see the module doc)."""
    return tuple(_join_prompt(m) for m in repair(messages))


class RequestView:
    """``for_request`` of a history that grows by appending, in time linear in what was
    appended since the last call rather than in the whole history (one per turn).

    It keeps the repair of the messages it saw last and what was sent of its final part; a
    history that does not start with exactly those messages (the same objects) is done
    whole again. The result equals ``for_request(messages)``.
    """

    def __init__(self) -> None:
        self._seen: tuple[Message, ...] = ()
        self._state = _Repair()
        self._sent: list[Message] = []  # _join_prompt of self._state.out[:-1]

    def of(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        seen = self._seen
        grown = len(messages) >= len(seen) and all(map(operator.is_, seen, messages))
        if not grown:
            self._seen, self._state, self._sent = (), _Repair(), []
        state = self._state.copy()
        for message in messages[len(self._seen) :]:
            state.feed(message)
        final = max(len(state.out) - 1, 0)
        sent = self._sent[:final]
        sent.extend(_join_prompt(m) for m in state.out[len(sent) : final])
        self._seen, self._state, self._sent = tuple(messages), state, sent
        return (*sent, *(_join_prompt(m) for m in state.result()[final:]))


def _join_prompt(message: Message) -> Message:
    """The user message as sent: what follows its tool results is joined into the last one
    (steers; and a prompt stored before ``UNANSWERED_RESULTS`` existed, sent so ever since:
    append-only), up to the ``UNANSWERED_RESULTS`` marker: from it on, blocks stay as they are."""
    results = [b for b in message.content if b.get("type") == "tool_result"]
    rest = [b for b in message.content if b.get("type") != "tool_result"]
    marker = text_block(UNANSWERED_RESULTS)
    kept: list[JSON] = []
    if marker in rest:
        at = rest.index(marker)
        rest, kept = rest[:at], rest[at:]
    if message.role != "user" or not results or not rest:
        return message  # (the results, then what is kept: the message as stored)
    texts = [str(b["text"]) for b in rest if b.get("type") == "text"]
    others = [b for b in rest if b.get("type") != "text"]
    last = dict(results[-1])
    body = last.get("content", "")
    parts: list[JSON] = list(body) if isinstance(body, list) else [text_block(str(body))]
    prompts = [t for t in texts if not t.startswith(STEER_HEADER)]
    if prompts:
        parts.append(text_block(JOINED_PROMPT_HEADER + "\n\n".join(prompts)))
    parts.extend(text_block(t) for t in texts if t.startswith(STEER_HEADER))  # already marked
    last["content"] = [*parts, *others]
    return Message("user", (*results[:-1], last, *kept))


def problems(messages: Sequence[Message]) -> list[str]:
    """What the API would reject in this history (empty when valid)."""
    found: list[str] = []
    if messages and messages[0].role != "user":
        found.append("history starts with an assistant message")
    seen_uses: set[str] = set()
    for i, message in enumerate(messages):
        if not message.content:
            found.append(f"messages.{i}: empty content")
        if any(not _non_empty(b) for b in message.content):
            found.append(f"messages.{i}: empty text block")
        if i and messages[i - 1].role == message.role:
            found.append(f"messages.{i}: two {message.role} messages in a row")
        if message.role == "assistant":
            for tid in message.tool_use_ids():
                if tid in seen_uses:
                    found.append(f"messages.{i}: tool_use id {tid} used twice")
                seen_uses.add(tid)
            if message.tool_use_ids():
                nxt = messages[i + 1] if i + 1 < len(messages) else None
                answered = set(nxt.tool_result_ids()) if nxt is not None else set()
                unpaired = [t for t in message.tool_use_ids() if t not in answered]
                if unpaired:
                    found.append(f"messages.{i}: tool_use without tool_result: {unpaired}")
            if any(b.get("type") == "tool_result" for b in message.content):
                found.append(f"messages.{i}: tool_result in an assistant message")
        else:
            found.extend(_result_problems(i, message, messages[i - 1] if i else None))
    return found


def _result_problems(i: int, message: Message, previous: Message | None) -> list[str]:
    found: list[str] = []
    expected = set(previous.tool_use_ids()) if previous and previous.role == "assistant" else set()
    ids = message.tool_result_ids()
    for tid in ids:
        if tid not in expected:
            found.append(f"messages.{i}: orphan tool_result for {tid}")
    duplicates = sorted({t for t in ids if ids.count(t) > 1})
    if duplicates:
        found.append(f"messages.{i}: duplicate tool_result for {duplicates}")
    kinds = [b.get("type") for b in message.content]
    if kinds[: len(ids)] != ["tool_result"] * len(ids):
        found.append(f"messages.{i}: tool_result blocks must come first")
    if any(b.get("type") in ("tool_use", "thinking", "redacted_thinking") for b in message.content):
        found.append(f"messages.{i}: assistant-only block in a user message")
    return found
