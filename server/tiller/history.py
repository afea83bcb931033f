"""The message list sent to the model: append, repair (pair every tool_use), validate."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

JSON = dict[str, Any]
Role = Literal["user", "assistant"]

INTERRUPTED_RESULT = "Interrupted by user"


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


def text_block(text: str) -> JSON:
    return {"type": "text", "text": text}


def tool_result_block(tool_use_id: str, output: str, *, is_error: bool) -> JSON:
    block: JSON = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": output or "(no output)",
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


def repair(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Make a history valid for the API whatever happened to it (linear in its length).

    Every tool_use gets a tool_result in the very next user message (``Interrupted by user``
    when it has none), stray tool_results are dropped, empty messages are dropped, same-role
    neighbours are merged, and the list starts with a user message.
    """
    out: list[Message] = []
    pending: list[str] = []  # tool_use ids of the last assistant message
    for message in messages:
        if message.role == "assistant":
            if pending:
                _push(out, "user", _missing_results(pending, ()))
            if not out:
                continue  # a history cannot start with the assistant
            _push(out, "assistant", message.content)
            pending = out[-1].tool_use_ids() if out[-1].role == "assistant" else []
        else:
            answered = {b["tool_use_id"] for b in message.content if b.get("type") == "tool_result"}
            kept = [
                b
                for b in message.content
                if b.get("type") != "tool_result" or b["tool_use_id"] in pending
            ]
            _push(out, "user", [*_missing_results(pending, answered), *kept])
            pending = []
    if pending:
        _push(out, "user", _missing_results(pending, ()))
    return tuple(out)


def _missing_results(pending: Sequence[str], answered: Iterable[str]) -> list[JSON]:
    done = set(answered)
    return [
        tool_result_block(tid, INTERRUPTED_RESULT, is_error=True)
        for tid in pending
        if tid not in done
    ]


def problems(messages: Sequence[Message]) -> list[str]:
    """What the API would reject in this history (empty when valid)."""
    found: list[str] = []
    if messages and messages[0].role != "user":
        found.append("history starts with an assistant message")
    for i, message in enumerate(messages):
        if not message.content:
            found.append(f"messages.{i}: empty content")
        if i and messages[i - 1].role == message.role:
            found.append(f"messages.{i}: two {message.role} messages in a row")
        if message.role == "assistant" and message.tool_use_ids():
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = (
                {b.get("tool_use_id") for b in nxt.content if b.get("type") == "tool_result"}
                if nxt is not None
                else set()
            )
            unpaired = [t for t in message.tool_use_ids() if t not in answered]
            if unpaired:
                found.append(f"messages.{i}: tool_use without tool_result: {unpaired}")
    return found
