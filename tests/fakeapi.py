"""A fake Anthropic Messages API server for tests (stdlib only).

The real ``anthropic`` SDK talks to it over HTTP/1.1 on 127.0.0.1. It serves scripted
responses from a queue, streams them as Server-Sent Events the way the API does, and answers
400 ``invalid_request_error`` to histories the real API would refuse.

In a test::

    async with FakeMessagesAPI() as api:
        api.enqueue({"content": [{"type": "text", "text": "Hello"}]})
        client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="test")

Standalone::

    python tests/fakeapi.py --script responses.json [--port N] [--port-file PATH]

where ``responses.json`` is ``{"responses": [spec, ...], "loop": false}``. Without
``--port-file`` the only line printed to stdout is ``PORT <n>``.

A spec is a JSON-like dict::

    {"content": [{"type": "text", "text": "..."},
                 {"type": "thinking", "thinking": "...", "signature": "sig"},
                 {"type": "redacted_thinking", "data": "..."},
                 {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {...}}],
     "stop_reason": "end_turn",            # default: "tool_use" if any tool_use block
     "usage": {"input_tokens": 10, "output_tokens": 5},   # default: rough sizes / 4
     "chunkDelay": 0.0,                    # seconds between SSE events
     "textChunk": 16,                      # characters per text/thinking delta
     "inputJsonChunk": 16,                 # characters per input_json_delta
     "error": {"status": 429, "type": "rate_limit_error", "message": "...",
               "retryAfter": "0", "shouldRetry": true},   # HTTP error instead of a message
     "midStreamError": {"afterEvents": 3, "type": "overloaded_error", "message": "..."},
     "dropAfterEvents": 3,                 # close the connection abruptly
     "hangAfterEvents": 3}                 # stop sending until the client goes away

At most one of midStreamError / dropAfterEvents / hangAfterEvents may be given. For a request
that is not streamed, hangAfterEvents never answers and dropAfterEvents closes without an
answer; midStreamError is answered as an HTTP error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http
import itertools
import json
import os
import signal
import sys
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

JsonDict = dict[str, Any]
SpecSource = Mapping[str, Any] | Callable[[JsonDict], Mapping[str, Any]]

DEFAULT_MODELS = ("claude-sonnet-4-5", "claude-haiku-4-5")
DEFAULT_WHEN_EMPTY: Mapping[str, Any] = {"content": [{"type": "text", "text": "Done."}]}
DEFAULT_SIGNATURE = "fake-signature"

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
STATUS_ERROR = {status: kind for kind, status in ERROR_STATUS.items()}


# --------------------------------------------------------------------------------------------
# Response specs
# --------------------------------------------------------------------------------------------


class SpecError(ValueError):
    """A scripted response is malformed."""


@dataclass(frozen=True)
class ErrorSpec:
    """An error answered as an HTTP status with the API's JSON error body."""

    status: int
    type: str
    message: str
    retry_after: str | None = None
    should_retry: bool | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ErrorSpec:
        _check_keys(raw, {"status", "type", "message", "retryAfter", "shouldRetry"}, "error")
        kind = raw.get("type")
        status = raw.get("status")
        if status is None:
            status = ERROR_STATUS.get(kind or "api_error", 500)
        if kind is None:
            kind = STATUS_ERROR.get(status, "api_error")
        retry_after = raw.get("retryAfter")
        should_retry = raw.get("shouldRetry")
        if not isinstance(status, int) or not isinstance(kind, str):
            raise SpecError(f"error: bad status/type in {dict(raw)!r}")
        if should_retry is not None and not isinstance(should_retry, bool):
            raise SpecError("error.shouldRetry must be a boolean")
        return cls(
            status=status,
            type=kind,
            message=str(raw.get("message", kind.replace("_", " "))),
            retry_after=None if retry_after is None else str(retry_after),
            should_retry=should_retry,
        )


@dataclass(frozen=True)
class Interruption:
    """What goes wrong in a stream after `after_events` SSE events have been sent."""

    kind: Literal["error", "drop", "hang"]
    after_events: int
    error: ErrorSpec | None = None


@dataclass(frozen=True)
class ResponseSpec:
    """One scripted answer to POST /v1/messages, with the fake-only knobs."""

    content: tuple[Mapping[str, Any], ...]
    stop_reason: str
    usage: Mapping[str, int] = field(default_factory=dict)
    chunk_delay: float = 0.0
    text_chunk: int = 16
    input_json_chunk: int = 16
    error: ErrorSpec | None = None
    interruption: Interruption | None = None

    KEYS = frozenset(
        {
            "content",
            "stop_reason",
            "usage",
            "chunkDelay",
            "textChunk",
            "inputJsonChunk",
            "error",
            "midStreamError",
            "dropAfterEvents",
            "hangAfterEvents",
        }
    )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ResponseSpec:
        if not isinstance(raw, Mapping):
            raise SpecError(f"a response spec must be an object, got {raw!r}")
        _check_keys(raw, cls.KEYS, "spec")
        content = tuple(_check_block(block) for block in raw.get("content", ()))
        has_tool_use = any(block["type"] == "tool_use" for block in content)
        stop_reason = raw.get("stop_reason") or ("tool_use" if has_tool_use else "end_turn")
        usage = raw.get("usage") or {}
        if not isinstance(usage, Mapping) or not all(isinstance(v, int) for v in usage.values()):
            raise SpecError(f"usage must map names to integers, got {usage!r}")
        error = raw.get("error")
        return cls(
            content=content,
            stop_reason=str(stop_reason),
            usage=dict(usage),
            chunk_delay=_number(raw, "chunkDelay", 0.0, minimum=0.0),
            text_chunk=int(_number(raw, "textChunk", 16, minimum=1)),
            input_json_chunk=int(_number(raw, "inputJsonChunk", 16, minimum=1)),
            error=None if error is None else ErrorSpec.from_dict(error),
            interruption=_interruption(raw),
        )


def _check_keys(raw: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    unknown = set(raw) - set(allowed)
    if unknown:
        raise SpecError(f"{where}: unknown keys {sorted(unknown)}")


def _number(raw: Mapping[str, Any], key: str, default: float, *, minimum: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise SpecError(f"{key} must be a number >= {minimum}, got {value!r}")
    return float(value)


def _check_block(block: Any) -> Mapping[str, Any]:
    required: dict[str, tuple[str, ...]] = {
        "text": ("text",),
        "thinking": ("thinking",),
        "redacted_thinking": ("data",),
        "tool_use": ("name",),
    }
    if not isinstance(block, Mapping) or block.get("type") not in required:
        raise SpecError(f"content block must have a type in {sorted(required)}: {block!r}")
    missing = [key for key in required[block["type"]] if not isinstance(block.get(key), str)]
    if missing:
        raise SpecError(f"{block['type']} block lacks string {missing}: {block!r}")
    if block["type"] == "tool_use" and not isinstance(block.get("input", {}), Mapping):
        raise SpecError(f"tool_use input must be an object: {block!r}")
    return block


def _interruption(raw: Mapping[str, Any]) -> Interruption | None:
    given = [key for key in ("midStreamError", "dropAfterEvents", "hangAfterEvents") if key in raw]
    if len(given) > 1:
        raise SpecError(f"at most one of {given} may be given")
    if "dropAfterEvents" in raw:
        return Interruption("drop", int(_number(raw, "dropAfterEvents", 0, minimum=0)))
    if "hangAfterEvents" in raw:
        return Interruption("hang", int(_number(raw, "hangAfterEvents", 0, minimum=0)))
    if "midStreamError" in raw:
        mid = raw["midStreamError"]
        if not isinstance(mid, Mapping):
            raise SpecError("midStreamError must be an object")
        after = int(_number(mid, "afterEvents", 0, minimum=0))
        rest = {key: value for key, value in mid.items() if key != "afterEvents"}
        rest.setdefault("type", "overloaded_error")
        rest.setdefault("message", "Overloaded")
        return Interruption("error", after, ErrorSpec.from_dict(rest))
    return None


# --------------------------------------------------------------------------------------------
# Building messages and SSE events
# --------------------------------------------------------------------------------------------


def _estimate_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


def _materialize_block(block: Mapping[str, Any], new_tool_id: Callable[[], str]) -> JsonDict:
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "thinking":
        signature = block.get("signature") or DEFAULT_SIGNATURE
        return {"type": "thinking", "thinking": block["thinking"], "signature": signature}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block["data"]}
    return {
        "type": "tool_use",
        "id": block.get("id") or new_tool_id(),
        "name": block["name"],
        "input": dict(block.get("input", {})),
    }


def build_message(
    spec: ResponseSpec,
    *,
    message_id: str,
    model: str,
    request_body: JsonDict,
    new_tool_id: Callable[[], str],
) -> JsonDict:
    """The complete message JSON (what a request without `stream` gets)."""
    content = [_materialize_block(block, new_tool_id) for block in spec.content]
    usage = {
        "input_tokens": _estimate_tokens(request_body),
        "output_tokens": _estimate_tokens(content),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        **spec.usage,
    }
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": spec.stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def _chunks(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


SseEvent = tuple[str, JsonDict]


def _block_events(index: int, block: JsonDict, spec: ResponseSpec) -> list[SseEvent]:
    kind = block["type"]
    if kind == "text":
        start: JsonDict = {"type": "text", "text": ""}
        deltas = [
            {"type": "text_delta", "text": c} for c in _chunks(block["text"], spec.text_chunk)
        ]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": c}
            for c in _chunks(block["thinking"], spec.text_chunk)
        ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        arguments = json.dumps(block["input"])
        deltas = [
            {"type": "input_json_delta", "partial_json": c}
            for c in _chunks(arguments, spec.input_json_chunk)
        ]
    else:
        start, deltas = block, []

    def event(name: str, **fields: Any) -> SseEvent:
        return name, {"type": name, "index": index, **fields}

    return [
        event("content_block_start", content_block=start),
        *(event("content_block_delta", delta=delta) for delta in deltas),
        event("content_block_stop"),
    ]


def build_events(message: JsonDict, spec: ResponseSpec) -> list[SseEvent]:
    """The SSE events streaming `message`, in the API's order."""
    start_usage = {**message["usage"], "output_tokens": 1}
    start = {**message, "content": [], "stop_reason": None, "usage": start_usage}
    events: list[SseEvent] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        events.extend(_block_events(index, block, spec))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def encode_sse(name: str, data: JsonDict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


# --------------------------------------------------------------------------------------------
# Request validation (the checks of the real API that matter to a client keeping a history)
# --------------------------------------------------------------------------------------------

THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
ASSISTANT_ONLY_BLOCKS = {"tool_use", "thinking", "redacted_thinking"}


def validate_messages_request(body: JsonDict, *, need_max_tokens: bool = True) -> str | None:
    """The real API's 400 message for `body`, or None when it would be accepted."""
    return (
        _check_top_level(body, need_max_tokens)
        or _check_thinking_config(body)
        or _check_messages(body["messages"])
        or _check_thinking_history(body)
    )


def _check_top_level(body: JsonDict, need_max_tokens: bool) -> str | None:
    required = ("model", "max_tokens", "messages") if need_max_tokens else ("model", "messages")
    for key in required:
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["model"], str):
        return "model: Input should be a valid string"
    max_tokens = body.get("max_tokens", 1)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    if not isinstance(body["messages"], list):
        return "messages: Input should be a valid list"
    return None


def _thinking_enabled(body: JsonDict) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") == "enabled"


def _check_thinking_config(body: JsonDict) -> str | None:
    if not _thinking_enabled(body):
        return None
    budget = body["thinking"].get("budget_tokens")
    if budget is None:
        return "thinking.enabled.budget_tokens: Field required"
    if not isinstance(budget, int) or budget < 1024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    if "max_tokens" in body and budget >= body["max_tokens"]:
        return (
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            f"documentation at {THINKING_DOCS}#max-tokens-and-context-window-size"
        )
    return None


def _blocks(message: JsonDict) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return content if isinstance(content, list) else []


def _check_messages(messages: list[Any]) -> str | None:
    if not messages:
        return "messages: at least one message is required"
    for index, message in enumerate(messages):
        problem = _check_message_shape(index, message, is_last=index == len(messages) - 1)
        if problem:
            return problem
    return _check_roles(messages) or _check_tool_pairing(messages)


def _check_message_shape(index: int, message: Any, *, is_last: bool) -> str | None:
    where = f"messages.{index}"
    if not isinstance(message, dict):
        return f"{where}: Input should be a valid dictionary"
    if message.get("role") not in ("user", "assistant"):
        return f"{where}.role: Input should be 'user' or 'assistant'"
    content = message.get("content")
    if content is None:
        return f"{where}.content: Field required"
    if not isinstance(content, str | list):
        return f"{where}.content: Input should be a valid string or list"
    final_assistant = is_last and message["role"] == "assistant"
    if not content and not final_assistant:
        return (
            f"{where}: all messages must have non-empty content except for the optional "
            "final assistant message"
        )
    for block_index, block in enumerate(_blocks(message)):
        problem = _check_block_shape(f"{where}.content.{block_index}", block, message["role"])
        if problem:
            return problem
    if final_assistant and _ends_with_whitespace(message):
        return "messages: final assistant content cannot end with trailing whitespace"
    return None


def _check_block_shape(where: str, block: Any, role: str) -> str | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return f"{where}.type: Field required"
    kind = block["type"]
    if kind in ASSISTANT_ONLY_BLOCKS and role != "assistant":
        return f"{where}: `{kind}` blocks can only be in `assistant` messages"
    if kind == "tool_result" and role != "user":
        return f"{where}: `tool_result` blocks can only be in `user` messages"
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            return f"{where}.text: Field required"
        if not text:
            return f"{where}.text: text content blocks must be non-empty"
        if not text.strip():
            return "messages: text content blocks must contain non-whitespace text"
    if kind == "thinking" and not isinstance(block.get("signature"), str):
        return f"{where}.thinking.signature: Field required"
    if kind == "tool_use":
        for key, expected in (("id", str), ("name", str), ("input", dict)):
            if not isinstance(block.get(key), expected):
                return f"{where}.tool_use.{key}: Field required"
    if kind == "tool_result" and not isinstance(block.get("tool_use_id"), str):
        return f"{where}.tool_result.tool_use_id: Field required"
    return None


def _ends_with_whitespace(message: JsonDict) -> bool:
    blocks = _blocks(message)
    last = blocks[-1] if blocks else None
    return (
        isinstance(last, dict)
        and last.get("type") == "text"
        and isinstance(last.get("text"), str)
        and last["text"] != last["text"].rstrip()
    )


def _check_roles(messages: list[JsonDict]) -> str | None:
    if messages[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    for previous, current in itertools.pairwise(messages):
        if previous["role"] == current["role"]:
            return (
                'messages: roles must alternate between "user" and "assistant", but found '
                f'multiple "{current["role"]}" roles in a row'
            )
    return None


def _ids_of(message: JsonDict, kind: str, key: str) -> list[tuple[int, str]]:
    return [
        (index, block[key])
        for index, block in enumerate(_blocks(message))
        if isinstance(block, dict) and block.get("type") == kind
    ]


def _check_tool_pairing(messages: list[JsonDict]) -> str | None:
    seen_tool_use: set[str] = set()
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            uses = _ids_of(message, "tool_use", "id")
            for block_index, tool_id in uses:
                if tool_id in seen_tool_use:
                    return f"messages.{index}.content.{block_index}: `tool_use` ids must be unique"
                seen_tool_use.add(tool_id)
            following = messages[index + 1] if index + 1 < len(messages) else None
            answered = {
                tool_id for _, tool_id in _ids_of(following or {}, "tool_result", "tool_use_id")
            }
            unanswered = [tool_id for _, tool_id in uses if tool_id not in answered]
            if unanswered:
                return (
                    f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(unanswered)}. Each `tool_use` block must have "
                    "a corresponding `tool_result` block in the next message."
                )
        else:
            previous = messages[index - 1] if index > 0 else {}
            problem = _check_tool_results(index, message, previous)
            if problem:
                return problem
    return None


def _check_tool_results(index: int, message: JsonDict, previous: JsonDict) -> str | None:
    expected = {tool_id for _, tool_id in _ids_of(previous, "tool_use", "id")}
    answered: set[str] = set()
    for block_index, tool_id in _ids_of(message, "tool_result", "tool_use_id"):
        where = f"messages.{index}.content.{block_index}"
        if tool_id not in expected:
            return (
                f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {tool_id}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the "
                "previous message."
            )
        if tool_id in answered:
            return (
                f"{where}: each tool_use must have a single result. Found multiple "
                f"`tool_result` blocks with id: {tool_id}"
            )
        answered.add(tool_id)
    return None


def _check_thinking_history(body: JsonDict) -> str | None:
    """With thinking enabled, the assistant turn being continued by tool results must start
    with its thinking block."""
    messages: list[JsonDict] = body["messages"]
    if not _thinking_enabled(body) or len(messages) < 2:
        return None
    if not _ids_of(messages[-1], "tool_result", "tool_use_id"):
        return None
    blocks = _blocks(messages[-2])
    first = blocks[0]["type"] if blocks else "nothing"
    if first in ("thinking", "redacted_thinking"):
        return None
    return (
        f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or "
        f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final "
        "`assistant` message must start with a thinking block (preceeding the lastmost set of "
        "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
        "previous turns. To avoid this requirement, disable `thinking`. Please consult our "
        f"documentation at {THINKING_DOCS}"
    )


# --------------------------------------------------------------------------------------------
# HTTP/1.1 plumbing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: str
    version: str
    headers: dict[str, str]
    body: bytes

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return connection == "keep-alive"
        return connection != "close"


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """The next request on the connection, or None when the client closed it cleanly."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial.strip():
            raise
        return None
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, version = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
    path, _, query = target.partition("?")
    body = await _read_body(reader, headers)
    return HttpRequest(method.upper(), path, query, version, headers, body)


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # no trailers expected
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = int(headers.get("content-length", "0"))
    return await reader.readexactly(length) if length else b""


def _reason(status: int) -> str:
    with contextlib.suppress(ValueError):
        return http.HTTPStatus(status).phrase
    return "Overloaded" if status == 529 else "Unknown"


def response_head(status: int, headers: Mapping[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_reason(status)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


LAST_CHUNK = b"0\r\n\r\n"


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received, and the status it answered (0: no answer was sent)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int
    query: str = ""

    @property
    def api_key(self) -> str | None:
        """The key sent as `x-api-key` or as `authorization: Bearer` (the SDK's way)."""
        return api_key_of(self.headers)


def api_key_of(headers: Mapping[str, str]) -> str | None:
    if "x-api-key" in headers:
        return headers["x-api-key"]
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


class _Connection:
    """One client connection: its streams and a watch for the client going away."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._gone: asyncio.Future[bytes] | None = None

    def watch(self) -> None:
        """Start noticing EOF. Only while answering: the client sends nothing meanwhile."""
        self._gone = asyncio.ensure_future(self.reader.read(1))

    def unwatch(self) -> None:
        gone, self._gone = self._gone, None
        if gone is None:
            return
        if not gone.done():
            gone.cancel()
        elif not gone.cancelled():
            gone.exception()  # a reset connection: retrieved, so asyncio does not log it

    @property
    def client_gone(self) -> bool:
        gone = self._gone is not None and self._gone.done()
        return gone or self.writer.transport.is_closing()

    async def wait_gone(self, at_most: float | None = None) -> bool:
        assert self._gone is not None
        await asyncio.wait({self._gone}, timeout=at_most)
        return self.client_gone

    async def send(self, data: bytes) -> bool:
        """Write and flush; False when the client went away."""
        if self.client_gone:
            return False
        try:
            self.writer.write(data)
            await self.writer.drain()
        except ConnectionError:
            return False
        return True


class FakeMessagesAPI:
    """A scripted Anthropic Messages API on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        *specs: SpecSource,
        port: int = 0,
        host: str = "127.0.0.1",
        api_key: str | None = None,
        models: Sequence[str] = DEFAULT_MODELS,
        when_empty: Mapping[str, Any] = DEFAULT_WHEN_EMPTY,
        loop: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.api_key = api_key
        self.models = list(models)
        self.when_empty = ResponseSpec.from_dict(when_empty)
        self.loop = loop
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        self.hanging = 0
        self._queue: deque[SpecSource] = deque()
        self._served: list[SpecSource] = []
        self.connections_accepted = 0
        self._request_ids = itertools.count(1)
        self._message_ids = itertools.count(1)
        self._tool_ids = itertools.count(1)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()
        self.enqueue(*specs)

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve_connection, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- script -------------------------------------------------------------------------------

    def enqueue(self, *specs: SpecSource) -> None:
        """Queue responses; dicts are checked now, callables when they are called."""
        for spec in specs:
            if not callable(spec):
                ResponseSpec.from_dict(spec)
            self._queue.append(spec)

    @property
    def pending(self) -> int:
        """How many queued responses have not been served yet."""
        return len(self._queue)

    def _next_spec(self, body: JsonDict) -> ResponseSpec:
        if not self._queue and self.loop:
            self._queue.extend(self._served)
            self._served.clear()
        if not self._queue:
            return self.when_empty
        source = self._queue.popleft()
        self._served.append(source)
        raw = source(body) if callable(source) else source
        return ResponseSpec.from_dict(raw)

    # -- observing ----------------------------------------------------------------------------

    def message_requests(self) -> list[RecordedRequest]:
        """Valid POST /v1/messages requests that were answered 200."""
        return [
            r
            for r in self.requests
            if (r.method, r.path, r.status) == ("POST", "/v1/messages", 200)
        ]

    async def wait_for_requests(
        self,
        n: int,
        timeout: float = 5,
    ) -> list[RecordedRequest]:
        await self._wait_until(lambda: len(self.requests) >= n, timeout, f"{n} requests")
        return list(self.requests)

    async def wait_hanging(self, timeout: float = 5) -> None:
        """Wait until a response is hanging (hangAfterEvents reached)."""
        await self._wait_until(lambda: self.hanging > 0, timeout, "a hanging stream")

    async def wait_disconnects(self, n: int = 1, timeout: float = 5) -> None:
        """Wait until `n` clients went away in the middle of a response."""
        await self._wait_until(lambda: self.disconnects >= n, timeout, f"{n} disconnects")

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _wait_until(self, condition: Callable[[], bool], seconds: float, what: str) -> None:
        try:
            async with asyncio.timeout(seconds):
                while not condition():
                    await self._changed.wait()
        except TimeoutError:
            state = (
                f"requests={len(self.requests)} hanging={self.hanging} "
                f"disconnects={self.disconnects}"
            )
            raise TimeoutError(f"fake API: timed out waiting for {what} ({state})") from None

    def _record(self, request: HttpRequest, body: Any, status: int) -> None:
        headers = dict(request.headers)
        recorded = RecordedRequest(
            request.method, request.path, headers, body, status, request.query
        )
        self.requests.append(recorded)
        self._notify()

    def _client_went_away(self) -> None:
        self.disconnects += 1
        self._notify()

    # -- HTTP ---------------------------------------------------------------------------------

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self.connections_accepted += 1
        connection = _Connection(reader, writer)
        try:
            while (request := await read_request(reader)) is not None:
                if not await self._dispatch(request, connection) or not request.keep_alive:
                    break
        except (
            ConnectionError,
            ValueError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            pass
        except asyncio.CancelledError:
            pass  # stop() cancels; asyncio would log a cancelled connection callback
        finally:
            connection.unwatch()
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    async def _dispatch(self, request: HttpRequest, connection: _Connection) -> bool:
        """Answer one request; False when the connection must not be reused."""
        body = _parse_json(request.body)
        auth_problem = self._check_auth(request.headers)
        if auth_problem:
            status, kind, message = auth_problem
            return await self._send_error(connection, request, body, status, kind, message)
        handler = self._route(request)
        if handler is None:
            return await self._send_error(
                connection, request, body, 404, "not_found_error", "Not Found"
            )
        return await handler(request, body, connection)

    def _route(
        self, request: HttpRequest
    ) -> Callable[[HttpRequest, Any, _Connection], Awaitable[bool]] | None:
        if request.method == "POST" and request.path == "/v1/messages":
            return self._messages
        if request.method == "POST" and request.path == "/v1/messages/count_tokens":
            return self._count_tokens
        if request.method == "GET" and request.path.startswith("/v1/models"):
            return self._models
        return None

    def _check_auth(self, headers: Mapping[str, str]) -> tuple[int, str, str] | None:
        key = api_key_of(headers)
        if not key:
            return 401, "authentication_error", "x-api-key header is required"
        if self.api_key is not None and key != self.api_key:
            kind = "x-api-key" if "x-api-key" in headers else "bearer token"
            return 401, "authentication_error", f"invalid {kind}"
        if "anthropic-version" not in headers:
            return 400, "invalid_request_error", "anthropic-version: header is required"
        return None

    def _request_id(self) -> str:
        return f"req_fake_{next(self._request_ids):04d}"

    async def _send_json(
        self,
        connection: _Connection,
        request: HttpRequest,
        status: int,
        payload: JsonDict,
        extra_headers: Mapping[str, str] | None = None,
    ) -> bool:
        data = json.dumps(payload).encode()
        headers = {
            "content-type": "application/json",
            "content-length": str(len(data)),
            **(extra_headers or {}),
        }
        if not request.keep_alive:
            headers["connection"] = "close"
        await connection.send(response_head(status, headers) + data)
        return True

    async def _send_error(
        self,
        connection: _Connection,
        request: HttpRequest,
        body: Any,
        status: int,
        kind: str,
        message: str,
        extra_headers: Mapping[str, str] | None = None,
    ) -> bool:
        self._record(request, body, status)
        request_id = self._request_id()
        payload = {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": request_id,
        }
        headers = {"request-id": request_id, **(extra_headers or {})}
        return await self._send_json(connection, request, status, payload, headers)

    async def _send_error_spec(
        self, connection: _Connection, request: HttpRequest, body: Any, error: ErrorSpec
    ) -> bool:
        headers: dict[str, str] = {}
        if error.retry_after is not None:
            headers["retry-after"] = error.retry_after
        if error.should_retry is not None:
            headers["x-should-retry"] = "true" if error.should_retry else "false"
        return await self._send_error(
            connection, request, body, error.status, error.type, error.message, headers
        )

    # -- endpoints ----------------------------------------------------------------------------

    async def _models(self, request: HttpRequest, body: Any, connection: _Connection) -> bool:
        infos = [_model_info(model) for model in self.models]
        model_id = request.path.removeprefix("/v1/models").strip("/")
        if model_id:
            found = [info for info in infos if info["id"] == model_id]
            if not found:
                message = f"model: {model_id}"
                return await self._send_error(
                    connection, request, body, 404, "not_found_error", message
                )
            self._record(request, body, 200)
            return await self._send_json(connection, request, 200, found[0])
        page = {
            "data": infos,
            "has_more": False,
            "first_id": infos[0]["id"] if infos else None,
            "last_id": infos[-1]["id"] if infos else None,
        }
        self._record(request, body, 200)
        return await self._send_json(connection, request, 200, page)

    async def _count_tokens(self, request: HttpRequest, body: Any, connection: _Connection) -> bool:
        problem = _body_problem(body) or validate_messages_request(body, need_max_tokens=False)
        if problem:
            return await self._send_error(
                connection, request, body, 400, "invalid_request_error", problem
            )
        self._record(request, body, 200)
        tokens = {"input_tokens": _estimate_tokens(body)}
        return await self._send_json(connection, request, 200, tokens)

    async def _messages(self, request: HttpRequest, body: Any, connection: _Connection) -> bool:
        problem = _body_problem(body) or validate_messages_request(body)
        if problem:
            return await self._send_error(
                connection, request, body, 400, "invalid_request_error", problem
            )
        try:
            spec = self._next_spec(body)
        except Exception as error:  # a test's callable or spec is broken: say so loudly
            traceback.print_exc(file=sys.stderr)
            problem = f"fake API: bad response spec: {error!r}"
            headers = {"x-should-retry": "false"}
            return await self._send_error(
                connection, request, body, 500, "api_error", problem, headers
            )
        if spec.error is not None:
            return await self._send_error_spec(connection, request, body, spec.error)
        message = build_message(
            spec,
            message_id=f"msg_fake_{next(self._message_ids):04d}",
            model=body["model"],
            request_body=body,
            new_tool_id=lambda: f"toolu_fake_{next(self._tool_ids)}",
        )
        if body.get("stream") is True:
            return await self._stream(connection, request, body, spec, message)
        return await self._answer_whole(connection, request, body, spec, message)

    async def _answer_whole(
        self,
        connection: _Connection,
        request: HttpRequest,
        body: Any,
        spec: ResponseSpec,
        message: JsonDict,
    ) -> bool:
        interruption = spec.interruption
        if interruption is None:
            self._record(request, body, 200)
            return await self._send_json(connection, request, 200, message)
        if interruption.kind == "error":
            assert interruption.error is not None
            return await self._send_error_spec(connection, request, body, interruption.error)
        self._record(request, body, 0)
        connection.watch()
        if interruption.kind == "hang":
            await self._hang(connection)
        else:
            connection.writer.transport.abort()
        return False

    async def _stream(
        self,
        connection: _Connection,
        request: HttpRequest,
        body: Any,
        spec: ResponseSpec,
        message: JsonDict,
    ) -> bool:
        """Stream `message` as SSE; False when the connection is not reusable afterwards."""
        self._record(request, body, 200)
        headers = {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
            "request-id": self._request_id(),
        }
        connection.watch()
        try:
            if not await connection.send(response_head(200, headers)):
                return self._lost()
            events = build_events(message, spec)
            interruption = spec.interruption
            cut = (
                len(events) if interruption is None else min(interruption.after_events, len(events))
            )
            for position, (name, data) in enumerate(events[:cut]):
                if position and spec.chunk_delay and await connection.wait_gone(spec.chunk_delay):
                    return self._lost()
                if not await connection.send(chunk(encode_sse(name, data))):
                    return self._lost()
            return await self._finish_stream(connection, interruption)
        finally:
            connection.unwatch()

    async def _finish_stream(
        self, connection: _Connection, interruption: Interruption | None
    ) -> bool:
        if interruption is None:
            return await connection.send(LAST_CHUNK) or self._lost()
        if interruption.kind == "error":
            assert interruption.error is not None
            error = {"type": interruption.error.type, "message": interruption.error.message}
            event = encode_sse("error", {"type": "error", "error": error})
            return await connection.send(chunk(event) + LAST_CHUNK) or self._lost()
        if interruption.kind == "drop":
            connection.writer.transport.abort()
            return False
        await self._hang(connection)
        return False

    async def _hang(self, connection: _Connection) -> None:
        """Send nothing more until the client goes away (or the server stops)."""
        self.hanging += 1
        self._notify()
        try:
            await connection.wait_gone()
            self._lost()
        finally:
            self.hanging -= 1
            self._notify()

    def _lost(self) -> bool:
        self._client_went_away()
        return False


def _parse_json(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _body_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "There was an error parsing the body"
    return None


def _model_info(model_id: str) -> JsonDict:
    words = model_id.split("-")
    names = [word.capitalize() for word in words if not word.isdigit()]
    version = ".".join(word for word in words if word.isdigit())
    return {
        "type": "model",
        "id": model_id,
        "display_name": " ".join([*names, version]).strip(),
        "created_at": "2025-09-29T00:00:00Z",
        "lifecycle": "active",
    }


# --------------------------------------------------------------------------------------------
# Standalone mode
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Script:
    responses: list[Mapping[str, Any]]
    loop: bool = False
    models: Sequence[str] = DEFAULT_MODELS
    api_key: str | None = None
    when_empty: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_WHEN_EMPTY))

    @classmethod
    def load(cls, path: Path | None) -> Script:
        """Read `{"responses": [spec, ...], "loop": bool, "models": [str, ...],
        "apiKey": str, "whenEmpty": spec}`; every key is optional."""
        raw: Any = {} if path is None else json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise SpecError("the script must be a JSON object")
        _check_keys(raw, {"responses", "loop", "models", "apiKey", "whenEmpty"}, "script")
        responses = raw.get("responses", [])
        if not isinstance(responses, list):
            raise SpecError("script: responses must be a list")
        for spec in responses:
            ResponseSpec.from_dict(spec)
        return cls(
            responses=responses,
            loop=bool(raw.get("loop", False)),
            models=raw.get("models", DEFAULT_MODELS),
            api_key=raw.get("apiKey"),
            when_empty=raw.get("whenEmpty", DEFAULT_WHEN_EMPTY),
        )


def _write_port_file(path: Path, port: int) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(f"{port}\n", encoding="utf-8")
    os.replace(partial, path)


async def serve(script: Script, port: int, port_file: Path | None) -> None:
    api = FakeMessagesAPI(
        *script.responses,
        port=port,
        api_key=script.api_key,
        models=script.models,
        when_empty=script.when_empty,
        loop=script.loop,
    )
    stopping = asyncio.Event()
    event_loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        event_loop.add_signal_handler(signum, stopping.set)
    async with api:
        if port_file is None:
            print(f"PORT {api.port}", flush=True)
        else:
            _write_port_file(port_file, api.port)
        await stopping.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake Anthropic Messages API for tests.")
    parser.add_argument("--script", type=Path, help='JSON file: {"responses": [...], "loop": bool}')
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any)")
    parser.add_argument("--port-file", type=Path, help="write the port here once listening")
    args = parser.parse_args(argv)
    try:
        script = Script.load(args.script)
    except (OSError, ValueError) as error:
        print(f"fakeapi: {error}", file=sys.stderr)
        return 2
    asyncio.run(serve(script, args.port, args.port_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
