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

where ``responses.json`` is ``{"responses": [spec, ...], "loop": false}`` (see
``Script.load`` for its other keys). Without ``--port-file`` the only line printed to stdout
is ``PORT <n>``.

A spec is a JSON-like dict::

    {"content": [{"type": "text", "text": "..."},
                 {"type": "thinking", "thinking": "...", "signature": "sig"},
                 {"type": "redacted_thinking", "data": "..."},
                 {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {...},
                  "cutAfterInputChars": 12},    # optional: see cutOff
                 {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                  "input": {"query": "..."}},   # a server tool call, then its result:
                 {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                  "content": [{"type": "web_search_result", "url": "...", "title": "...",
                               "encrypted_content": "...", "page_age": "..."}]},
                 {"type": "text", "text": "...", "citations": [{...}]}],
     "stop_reason": "end_turn",            # default: max_tokens if cut, stop_sequence if
                                           # stop_sequence is given, tool_use if any
                                           # tool_use block, else end_turn
     "stop_sequence": "###",               # the stop sequence that was hit
     "stop_details": {"type": "refusal", "category": "cyber", "explanation": "..."},
                                           # default for stop_reason "refusal":
                                           # {"type": "refusal", "category": null,
                                           #  "explanation": null}; else null
     "usage": {"input_tokens": 10, "output_tokens": 5},   # overrides the computed usage
     "cutOff": {"block": 1, "chars": 12,   # the output limit hits block 1 after 12 chars
                "blockStop": true},        # of its text/thinking/input JSON; later blocks
                                           # are not sent; blockStop false: no
                                           # content_block_stop for the cut block
     "pingEvery": 3,                       # 0: no ping at all; N: also a ping after every
                                           # N events (default: one ping after the first
                                           # content_block_start, as the API sends it)
     "omitDeltaUsage": true,               # message_delta without "usage"
     "chunkDelay": 0.0,                    # seconds between SSE events
     "textChunk": 16,                      # characters per text/thinking delta
     "inputJsonChunk": 16,                 # characters per input_json_delta
     "error": {"status": 429, "type": "rate_limit_error", "message": "...",
               "retryAfter": "0", "shouldRetry": true},   # HTTP error instead of a message
     "midStreamError": {"afterEvents": 3, "type": "overloaded_error", "message": "..."},
     "dropAfterEvents": 3,                 # close the connection abruptly
     "hangAfterEvents": 3,                 # stop sending until the client goes away
     "garbageAfterEvents": 3,              # then a malformed `data:` line, then the end
     "hangBeforeHeaders": true,            # never send even the status line
     "holdUntil": "first",                 # after message_start, send nothing more until
                                           # the test calls api.release("first")
     "replay": "basic_response",           # serve tests/fixtures/sdk_streams/<name>.txt
                                           # (or an absolute path) verbatim, its last event
                                           # ended by a blank line as the API ends it
     "replaySse": "event: ...\\ndata: ...\\n\\n"}   # serve exactly this SSE text

At most one of midStreamError / dropAfterEvents / hangAfterEvents / garbageAfterEvents /
hangBeforeHeaders may be given; `afterEvents` counts the events of the message, not pings.
For a request that is not streamed, hangAfterEvents never answers and dropAfterEvents closes
without an answer; midStreamError is answered as an HTTP error. A replay takes only
chunkDelay besides, and needs a streamed request.

`holdUntil` holds a turn open for as long as a test needs it, whatever the machine's speed:
the stream stops after `message_start` (the model has answered, nothing of it has arrived
yet) until `FakeMessagesAPI.release(name)`; then it goes on as scripted. `wait_held(name)`
waits until a stream is held there. A release is for good: it lets through the streams held
on that name and every later one, so releasing before the request arrives is no race. A
client going away while held counts as a disconnect. It needs a streamed request, and
combines with the other keys (an interruption after 0 events comes before the hold); only a
test can release, so a standalone script should not use it.

Usage is computed the way the API does it: the prompt is the tools, then the system blocks,
then the message blocks; a block with `cache_control` (at most 4, or a top-level
`cache_control`: the last block) is a breakpoint that writes the prefix up to it to a
per-model cache; a later breakpoint reads the longest cached prefix found within 20 blocks
before it (`PromptCache`). `input_tokens` is what comes after the last breakpoint (and after
the read), `cache_read_input_tokens` + `cache_creation_input_tokens` the rest; the sum is
the prompt's size (a block is len(its JSON) / 4 tokens). `message_start` carries it, and so
does `message_delta` (with the final `output_tokens`). The answered message is in
`RecordedRequest.response`.

Server tools stream as the web search docs show them
(https://docs.anthropic.com/en/docs/build-with-claude/tool-use/web-search-tool, "Streaming"):
a `server_tool_use` block starts with `input: {}` and gets `input_json_delta`s, its result
block comes whole in its `content_block_start`, and a text block's `citations` arrive as
`citations_delta`s after its text. `usage.server_tool_use` counts the calls by name
(`web_search_requests`, `web_fetch_requests`). Tool definitions with a `type` are refused
unless it is a server tool the fake knows (`SERVER_TOOL_TYPES`); web fetch also needs the beta
header `anthropic-beta: web-fetch-2025-09-10`
(https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-fetch-tool).
Tool search as its docs describe it
(https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool): tools with
`defer_loading: true` need the beta header `advanced-tool-use-2025-11-20`, are left out of the
prefix (tokens, cache, the thinking binding) and counted where a `tool_reference` block in a
`tool_result` loads them; every tool deferred, or a reference to a tool with no definition, is
a 400 (`check_tool_search`).

Requests are refused (400) as the API refuses them: besides malformed histories, a thinking
form the model does not take (`MODELS`: Claude 5 and Opus 4.7/4.8 take only adaptive, 4.5
and older only the budget form, 4.6 both; `disabled` / `between_tools` where the model has no
such off switch; ids not in the table by family and version, unknown ids anything), sampling
parameters on models that dropped them (temperature other than 1, any top_p / top_k),
`budget_tokens >= max_tokens`, `max_tokens` above the model's output limit, a prompt over
its context window, more than 4 cache breakpoints, a thinking block whose prefix changed since
the fake produced it (preserved thinking: its signature is bound to its prefix, see
`check_thinking_binding`), and (only with
`reject_text_after_tool_result=True`) text right after a tool_result. `/v1/models` answers
with the SDK's `ModelInfo` fields, `max_input_tokens`, `max_tokens` and `capabilities`
(thinking types) included for the ids the fake knows.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import http
import itertools
import json
import os
import re
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
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

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


InterruptionKind = Literal["error", "drop", "hang", "garbage", "hang_headers"]
INTERRUPTION_KEYS = (
    "midStreamError",
    "dropAfterEvents",
    "hangAfterEvents",
    "garbageAfterEvents",
    "hangBeforeHeaders",
)
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sdk_streams"
# A `data:` line that is not JSON: what a proxy cutting an event in half leaves behind.
GARBAGE_EVENT = (
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": '
    b'{"type": "text_de\n\n'
)


@dataclass(frozen=True)
class Interruption:
    """What goes wrong in a stream after `after_events` SSE events have been sent
    (``hang_headers``: before the status line)."""

    kind: InterruptionKind
    after_events: int
    error: ErrorSpec | None = None


@dataclass(frozen=True)
class CutOff:
    """The output limit hits block `block` after `chars` characters of its text, thinking or
    input JSON; `block_stop`: whether that block still gets its content_block_stop."""

    block: int
    chars: int
    block_stop: bool = True


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
    stop_sequence: str | None = None
    stop_details: Mapping[str, Any] | None = None
    cut_off: CutOff | None = None
    ping_every: int | None = None
    omit_delta_usage: bool = False
    replay: bytes | None = None
    hold_until: str | None = None

    KEYS = frozenset(
        {
            "content",
            "stop_reason",
            "stop_sequence",
            "stop_details",
            "usage",
            "cutOff",
            "pingEvery",
            "omitDeltaUsage",
            "chunkDelay",
            "textChunk",
            "inputJsonChunk",
            "error",
            "replay",
            "replaySse",
            "holdUntil",
            *INTERRUPTION_KEYS,
        }
    )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ResponseSpec:
        if not isinstance(raw, Mapping):
            raise SpecError(f"a response spec must be an object, got {raw!r}")
        _check_keys(raw, cls.KEYS, "spec")
        replay = _replay(raw)
        if replay is not None:
            return cls(
                content=(),
                stop_reason="",
                chunk_delay=_number(raw, "chunkDelay", 0.0, minimum=0.0),
                replay=replay,
            )
        content = tuple(_check_block(block) for block in raw.get("content", ()))
        cut_off = _cut_off(raw, content)
        stop_sequence = raw.get("stop_sequence")
        if stop_sequence is not None and not isinstance(stop_sequence, str):
            raise SpecError(f"stop_sequence must be a string, got {stop_sequence!r}")
        has_tool_use = any(block["type"] == "tool_use" for block in content)
        stop_reason = raw.get("stop_reason") or (
            "max_tokens"
            if cut_off
            else "stop_sequence"
            if stop_sequence is not None
            else "tool_use"
            if has_tool_use
            else "end_turn"
        )
        usage = raw.get("usage") or {}
        if not isinstance(usage, Mapping) or not all(isinstance(v, int) for v in usage.values()):
            raise SpecError(f"usage must map names to integers, got {usage!r}")
        stop_details = raw.get("stop_details")
        if stop_details is None and stop_reason == "refusal":
            stop_details = {"type": "refusal", "category": None, "explanation": None}
        if stop_details is not None and not isinstance(stop_details, Mapping):
            raise SpecError(f"stop_details must be an object or null, got {stop_details!r}")
        ping_every = raw.get("pingEvery")
        if ping_every is not None:
            ping_every = int(_number(raw, "pingEvery", 0, minimum=0))
        error = raw.get("error")
        hold_until = raw.get("holdUntil")
        if hold_until is not None and (not isinstance(hold_until, str) or not hold_until):
            raise SpecError(f"holdUntil must be a non-empty string, got {hold_until!r}")
        return cls(
            content=content,
            stop_reason=str(stop_reason),
            usage=dict(usage),
            chunk_delay=_number(raw, "chunkDelay", 0.0, minimum=0.0),
            text_chunk=int(_number(raw, "textChunk", 16, minimum=1)),
            input_json_chunk=int(_number(raw, "inputJsonChunk", 16, minimum=1)),
            error=None if error is None else ErrorSpec.from_dict(error),
            interruption=_interruption(raw),
            stop_sequence=stop_sequence,
            stop_details=None if stop_details is None else dict(stop_details),
            cut_off=cut_off,
            ping_every=ping_every,
            omit_delta_usage=bool(raw.get("omitDeltaUsage", False)),
            hold_until=hold_until,
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
        "server_tool_use": ("name",),
        "web_search_tool_result": ("tool_use_id",),
        "web_fetch_tool_result": ("tool_use_id",),
    }
    if not isinstance(block, Mapping) or block.get("type") not in required:
        raise SpecError(f"content block must have a type in {sorted(required)}: {block!r}")
    missing = [key for key in required[block["type"]] if not isinstance(block.get(key), str)]
    if missing:
        raise SpecError(f"{block['type']} block lacks string {missing}: {block!r}")
    if block["type"] == "tool_use" and not isinstance(block.get("input", {}), Mapping):
        raise SpecError(f"tool_use input must be an object: {block!r}")
    return block


def _cut_off(raw: Mapping[str, Any], content: tuple[Mapping[str, Any], ...]) -> CutOff | None:
    cuts: list[CutOff] = []
    for index, block in enumerate(content):
        if "cutAfterInputChars" in block:
            if block["type"] != "tool_use":
                raise SpecError("cutAfterInputChars belongs on a tool_use block")
            chars = int(_number(block, "cutAfterInputChars", 0, minimum=0))
            cuts.append(CutOff(index, chars))
    if "cutOff" in raw:
        given = raw["cutOff"]
        if not isinstance(given, Mapping):
            raise SpecError("cutOff must be an object")
        _check_keys(given, {"block", "chars", "blockStop"}, "cutOff")
        index = int(_number(given, "block", 0, minimum=0))
        if index >= len(content):
            raise SpecError(f"cutOff.block {index} is past the {len(content)} blocks")
        if content[index]["type"] == "redacted_thinking":
            raise SpecError("cutOff cannot cut a redacted_thinking block")
        chars = int(_number(given, "chars", 0, minimum=0))
        cuts.append(CutOff(index, chars, bool(given.get("blockStop", True))))
    if len(cuts) > 1:
        raise SpecError("at most one cut (cutOff or one cutAfterInputChars) may be given")
    return cuts[0] if cuts else None


def _replay(raw: Mapping[str, Any]) -> bytes | None:
    given = [key for key in ("replay", "replaySse") if key in raw]
    if not given:
        return None
    others = set(raw) - {"replay", "replaySse", "chunkDelay"}
    if len(given) > 1 or others:
        raise SpecError(f"a replay takes only chunkDelay besides, got {sorted(raw)}")
    value = raw[given[0]]
    if not isinstance(value, str):
        raise SpecError(f"{given[0]} must be a string")
    if given[0] == "replaySse":
        return value.encode()
    path = Path(value)
    if not path.is_absolute():
        path = FIXTURES / (value if value.endswith(".txt") else f"{value}.txt")
    try:
        recorded = path.read_bytes()
    except OSError as error:
        raise SpecError(f"replay: cannot read {path}: {error}") from None
    # The API ends every event with a blank line; stored recordings often lost the last one
    # (a text file's trailing newlines), which would leave message_stop undelivered.
    return recorded if recorded.endswith(b"\n\n") else recorded.rstrip(b"\n") + b"\n\n"


def _interruption(raw: Mapping[str, Any]) -> Interruption | None:
    given = [key for key in INTERRUPTION_KEYS if key in raw]
    if len(given) > 1:
        raise SpecError(f"at most one of {given} may be given")
    if "dropAfterEvents" in raw:
        return Interruption("drop", int(_number(raw, "dropAfterEvents", 0, minimum=0)))
    if "hangAfterEvents" in raw:
        return Interruption("hang", int(_number(raw, "hangAfterEvents", 0, minimum=0)))
    if "garbageAfterEvents" in raw:
        return Interruption("garbage", int(_number(raw, "garbageAfterEvents", 0, minimum=0)))
    if raw.get("hangBeforeHeaders"):
        return Interruption("hang_headers", 0)
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
# Models (a small table of what the fake knows; see docs/models.md for the real catalog)
# --------------------------------------------------------------------------------------------

ThinkingForm = Literal["adaptive", "budget", "both"]
ThinkingOff = Literal["disabled", "between_tools", "always_on"]


@dataclass(frozen=True)
class ModelSpec:
    """What the fake enforces for one model. `thinking`: the forms that switch thinking on;
    `off`: how it is switched off (`disabled`: `{type: disabled}`; `between_tools`: only
    `{type: between_tools}`, `disabled` is a 400; `always_on`: `disabled` is taken and
    ignored); `sampling`: non-default temperature, top_p and top_k are accepted; `efforts`:
    the `output_config.effort` levels taken; `off_up_to`: the highest effort at which thinking
    can be switched off (Opus 5, Haiku 5.5: `high`; `xhigh`/`max` with `disabled` is a 400)."""

    id: str
    context_window: int
    max_output: int
    thinking: ThinkingForm
    off: ThinkingOff
    sampling: bool
    efforts: tuple[str, ...] = ("low", "medium", "high", "xhigh", "max")
    off_up_to: str | None = None


K = 1000
M = 1_000_000
NO_XHIGH = ("low", "medium", "high", "max")  # the 4.6 models predate xhigh
# Mirrors server/tiller/model/models.py (the catalog kept from the docs, see docs/models.md).
MODELS: dict[str, ModelSpec] = {
    spec.id: spec
    for spec in (
        ModelSpec("claude-fable-5-2", M, 128 * K, "adaptive", "always_on", False),
        ModelSpec("claude-mythos-5-2", M, 128 * K, "adaptive", "always_on", False),
        ModelSpec("claude-fable-5-1", M, 128 * K, "adaptive", "always_on", False),
        ModelSpec("claude-mythos-5-1", M, 128 * K, "adaptive", "always_on", False),
        ModelSpec("claude-fable-5", M, 128 * K, "adaptive", "always_on", False),
        ModelSpec("claude-mythos-5", M, 128 * K, "adaptive", "always_on", False),
        ModelSpec("claude-opus-5-5", M, 128 * K, "adaptive", "always_on", False),
        ModelSpec("claude-opus-5", M, 128 * K, "adaptive", "disabled", False, off_up_to="high"),
        ModelSpec("claude-sonnet-5-5", M, 128 * K, "adaptive", "between_tools", False),
        ModelSpec("claude-sonnet-5", M, 128 * K, "adaptive", "disabled", False),
        ModelSpec("claude-haiku-5-5", M, 128 * K, "adaptive", "disabled", False, off_up_to="high"),
        ModelSpec("claude-opus-4-8", M, 128 * K, "adaptive", "disabled", False),
        ModelSpec("claude-opus-4-7", M, 128 * K, "adaptive", "disabled", False),
        ModelSpec("claude-opus-4-6", M, 128 * K, "both", "disabled", True, NO_XHIGH),
        ModelSpec("claude-sonnet-4-6", M, 64 * K, "both", "disabled", True, NO_XHIGH),
        ModelSpec("claude-opus-4-5", 200 * K, 64 * K, "budget", "disabled", True),
        ModelSpec("claude-sonnet-4-5", 200 * K, 64 * K, "budget", "disabled", True),
        ModelSpec("claude-haiku-4-5", 200 * K, 64 * K, "budget", "disabled", True),
        ModelSpec("claude-opus-4-1", 200 * K, 32 * K, "budget", "disabled", True),
    )
}
_MODEL_ID = re.compile(
    r"^claude-(?P<line>opus|sonnet|haiku|fable|mythos)-(?P<major>\d+)(?:-(?P<minor>\d))?"
    r"(?:-\d{8})?$"
)


def model_spec(model_id: str) -> ModelSpec | None:
    """The table's entry for `model_id` (a dated id like claude-sonnet-4-5-20250929 finds
    claude-sonnet-4-5); None for ids the fake knows nothing about."""
    if model_id in MODELS:
        return MODELS[model_id]
    undated = re.sub(r"-\d{8}$", "", model_id)
    return MODELS.get(undated)


def thinking_form(model_id: str) -> ThinkingForm | None:
    """The thinking forms a model takes: the table's, else by family and version (Claude 5,
    Fable, Mythos and Opus >= 4.7: adaptive; 4.6: both; older: budget); None: unknown id,
    anything goes."""
    known = model_spec(model_id)
    if known is not None:
        return known.thinking
    match = _MODEL_ID.match(model_id)
    if match is None:
        return None
    version = (int(match["major"]), int(match["minor"] or 0))
    if match["line"] in ("fable", "mythos") or version >= (5, 0):
        return "adaptive"
    if match["line"] == "opus" and version >= (4, 7):
        return "adaptive"
    return "both" if version == (4, 6) else "budget"


def _display_name(model_id: str) -> str:
    words = re.sub(r"-\d{8}$", "", model_id).split("-")
    names = [word.capitalize() for word in words if not word.isdigit()]
    version = ".".join(word for word in words if word.isdigit())
    return " ".join([*names, version]).strip()


def _supported(value: bool) -> JsonDict:
    return {"supported": value}


def _capabilities(
    form: ThinkingForm, off: ThinkingOff, efforts: tuple[str, ...] | None = None
) -> JsonDict:
    """`capabilities` as the Models API gives them (docs: platform.claude.com/docs/en/api/
    models/list, `ModelInfo.capabilities`; `effort` has one entry per level, `xhigh` included)."""
    effort = form != "budget"
    efforts = EFFORTS if efforts is None else efforts
    return {
        "batch": _supported(True),
        "citations": _supported(True),
        "code_execution": _supported(False),
        "context_management": {"supported": False},
        "effort": {
            "supported": effort,
            **{level: _supported(effort and level in efforts) for level in EFFORTS},
        },
        "image_input": _supported(True),
        "pdf_input": _supported(True),
        "server_tools": {
            "supported": False,
            "code_execution": _supported(False),
            "web_search": _supported(False),
        },
        "structured_outputs": _supported(True),
        "thinking": {
            "supported": True,
            "types": {
                "adaptive": _supported(form != "budget"),
                "enabled": _supported(form != "adaptive"),
                "disabled": _supported(off != "between_tools"),
                "between_tools": _supported(off == "between_tools"),
            },
        },
    }


def _model_info(model_id: str) -> JsonDict:
    """A `/v1/models` entry with the fields of the SDK's `ModelInfo` (docs: platform.claude.com/
    docs/en/api/models/list): `max_input_tokens` (the context window) and `max_tokens` (the
    highest `max_tokens` a request may ask), null where the fake does not know the model."""
    known = model_spec(model_id)
    form = thinking_form(model_id)
    match = _MODEL_ID.match(model_id)
    return {
        "type": "model",
        "id": model_id,
        "display_name": _display_name(model_id),
        "created_at": "2025-09-29T00:00:00Z",
        "lifecycle": "active",
        "deprecated_at": None,
        "retires_at": None,
        "line": match["line"] if match else None,
        "max_input_tokens": known.context_window if known else None,
        "max_tokens": known.max_output if known else None,
        "capabilities": None
        if form is None
        else _capabilities(
            form, known.off if known else "disabled", known.efforts if known else None
        ),
    }


# --------------------------------------------------------------------------------------------
# Prompt caching and usage
# --------------------------------------------------------------------------------------------


def _estimate_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


@dataclass(frozen=True)
class PromptBlock:
    """One block of the prompt, in the order the cache sees them (tools, system, messages)."""

    section: str  # "tools" | "system" | "user" | "assistant"
    encoded: str  # the block's JSON without its cache_control (what the cache compares)
    breakpoint: bool
    ttl: str  # "5m" | "1h" (of the breakpoint, if it is one)

    @property
    def tokens(self) -> int:
        return max(1, len(self.encoded) // 4)


def prompt_blocks(body: JsonDict) -> list[PromptBlock]:
    """The request's prompt as the API caches it; a top-level `cache_control` is a breakpoint
    on the last block."""
    raw: list[tuple[str, Any]] = [("tools", tool) for tool in loaded_tools(body)]
    system = body.get("system")
    if isinstance(system, str) and system:
        raw.append(("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        raw += [("system", block) for block in system]
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            content = expand_references(body, _blocks(message))  # deferred tools count here
            raw += [(str(message.get("role")), block) for block in content]
    blocks: list[PromptBlock] = []
    for section, block in raw:
        if not isinstance(block, dict):
            block = {"value": block}
        control = block.get("cache_control")
        if control is not None:
            block = {key: value for key, value in block.items() if key != "cache_control"}
        ttl = control.get("ttl", "5m") if isinstance(control, dict) else "5m"
        blocks.append(PromptBlock(section, json.dumps(block), control is not None, str(ttl)))
    automatic = body.get("cache_control")
    if isinstance(automatic, dict) and blocks:
        last = blocks[-1]
        ttl = str(automatic.get("ttl", "5m"))
        blocks[-1] = PromptBlock(last.section, last.encoded, True, ttl)
    return blocks


def prompt_tokens(body: JsonDict) -> int:
    return sum(block.tokens for block in prompt_blocks(body))


@dataclass(frozen=True)
class InputUsage:
    """The input side of `usage`; the three counts add up to the prompt's size."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0


class PromptCache:
    """The API's prompt cache, per model: the prefixes written at breakpoints.

    A breakpoint writes the prefix up to and including its block. Reading, each breakpoint
    looks for a written prefix ending at its own block or at one of the `lookback` - 1 blocks
    before it (the API's 20-block window); the longest one found is read. Other thinking
    parameters make the messages a different prefix (tools and system still match). Entries
    never expire (tests are shorter than the 5 minute TTL); `clear()` forgets them all;
    prefixes shorter than `min_tokens` are not written.
    """

    def __init__(self, *, lookback: int = 20, min_tokens: int = 0) -> None:
        self.lookback = lookback
        self.min_tokens = min_tokens
        self._entries: set[tuple[str, str]] = set()

    def clear(self) -> None:
        self._entries.clear()

    def account(self, body: JsonDict, *, write: bool = True) -> InputUsage:
        """The input usage of `body`; with `write`, its breakpoints' prefixes get cached."""
        model = str(body.get("model"))
        blocks = prompt_blocks(body)
        hashes = _prefix_hashes(blocks, body.get("thinking") or {"type": "disabled"})
        ends = list(itertools.accumulate(block.tokens for block in blocks))
        breakpoints = [
            index
            for index, block in enumerate(blocks)
            if block.breakpoint and ends[index] >= self.min_tokens
        ]
        read_to = -1  # the last block read from the cache
        for point in breakpoints:
            for index in range(point, max(-1, point - self.lookback), -1):
                if (model, hashes[index]) in self._entries:
                    read_to = max(read_to, index)
                    break
        total = ends[-1] if ends else 0
        read = ends[read_to] if read_to >= 0 else 0
        created = {"5m": 0, "1h": 0}
        written_to = read_to
        for point in breakpoints:
            if point > written_to:
                start = ends[written_to] if written_to >= 0 else 0
                created[blocks[point].ttl if blocks[point].ttl == "1h" else "5m"] += (
                    ends[point] - start
                )
                written_to = point
        if write:
            self._entries.update((model, hashes[point]) for point in breakpoints)
        creation = created["5m"] + created["1h"]
        return InputUsage(
            input_tokens=total - read - creation,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=creation,
            ephemeral_5m_input_tokens=created["5m"],
            ephemeral_1h_input_tokens=created["1h"],
        )


def _prefix_hashes(blocks: Sequence[PromptBlock], thinking: Any) -> list[str]:
    """A running hash of each prefix. The thinking parameters come in before the first
    message block: changing them invalidates the cached messages, not tools and system."""
    hashes: list[str] = []
    running = hashlib.sha256()
    in_messages = False
    for block in blocks:
        if not in_messages and block.section in ("user", "assistant"):
            in_messages = True
            running.update(f"thinking\0{json.dumps(thinking, sort_keys=True)}\0".encode())
        running.update(f"{block.section}\0{block.encoded}\0".encode())
        hashes.append(running.copy().hexdigest())
    return hashes


# --------------------------------------------------------------------------------------------
# Building messages and SSE events
# --------------------------------------------------------------------------------------------


def _materialize_block(block: Mapping[str, Any], new_tool_id: Callable[[], str]) -> JsonDict:
    kind = block["type"]
    if kind == "text":
        cited = block.get("citations")
        text = {"type": "text", "text": block["text"]}
        return {**text, "citations": [dict(c) for c in cited]} if cited else text
    if kind == "server_tool_use":
        return {
            "type": kind,
            "id": block.get("id") or "srv" + new_tool_id(),
            "name": block["name"],
            "input": dict(block.get("input", {})),
        }
    if kind in SERVER_RESULT_BLOCKS:
        whole: JsonDict = json.loads(json.dumps(block))  # a deep copy, as sent
        return whole
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


def _cut_block(block: JsonDict, chars: int) -> JsonDict:
    """`block` as far as the output limit let it get (what a non-streamed answer holds)."""
    match block["type"]:
        case "text":
            return {**block, "text": block["text"][:chars]}
        case "thinking":
            return {**block, "thinking": block["thinking"][:chars], "signature": ""}
        case "tool_use":
            return {**block, "input": partial_json_object(json.dumps(block["input"])[:chars])}
        case _:
            return block


def partial_json_object(text: str) -> JsonDict:
    """The complete members of a JSON object cut short, as the SDK reads it (jiter's partial
    mode: an unfinished string or member is left out)."""
    for end in range(len(text), 0, -1):
        closers = _closers(text[:end])
        if closers is None:
            continue
        with contextlib.suppress(ValueError):
            value = json.loads(text[:end] + closers)
            if isinstance(value, dict):
                return value
    return {}


def _closers(text: str) -> str | None:
    """The brackets closing `text`, or None when it ends inside a string."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}" and stack:
            stack.pop()
    return None if in_string else "".join(reversed(stack))


def _server_tool_usage(content: Sequence[Mapping[str, Any]]) -> JsonDict:
    """`usage.server_tool_use`: the server tool calls of the message, by tool."""
    names = [b.get("name") for b in content if b.get("type") == "server_tool_use"]
    return {
        "web_search_requests": names.count("web_search"),
        "web_fetch_requests": names.count("web_fetch"),
    }


def _usage_json(
    spec: ResponseSpec,
    input_usage: InputUsage,
    output_tokens: int,
    content: Sequence[Mapping[str, Any]] = (),
) -> JsonDict:
    server = _server_tool_usage(content)
    usage: JsonDict = {
        "input_tokens": input_usage.input_tokens,
        "cache_creation_input_tokens": input_usage.cache_creation_input_tokens,
        "cache_read_input_tokens": input_usage.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": input_usage.ephemeral_5m_input_tokens,
            "ephemeral_1h_input_tokens": input_usage.ephemeral_1h_input_tokens,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
        **({"server_tool_use": server} if any(server.values()) else {}),
        **spec.usage,
    }
    if "cache_creation_input_tokens" in spec.usage:
        usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": spec.usage["cache_creation_input_tokens"],
            "ephemeral_1h_input_tokens": 0,
        }
    return usage


def build_message(
    spec: ResponseSpec,
    *,
    message_id: str,
    model: str,
    request_body: JsonDict,
    new_tool_id: Callable[[], str],
    input_usage: InputUsage | None = None,
) -> JsonDict:
    """The complete message JSON (what a request without `stream` gets). Without
    `input_usage`, the whole prompt counts as uncached input."""
    content = bind_thinking(
        request_body, [_materialize_block(block, new_tool_id) for block in spec.content]
    )
    if spec.cut_off is not None:
        cut = spec.cut_off
        content = [*content[: cut.block], _cut_block(content[cut.block], cut.chars)]
    if input_usage is None:
        input_usage = InputUsage(prompt_tokens(request_body), 0, 0)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": spec.stop_reason,
        "stop_sequence": spec.stop_sequence,
        "stop_details": None if spec.stop_details is None else dict(spec.stop_details),
        "usage": _usage_json(spec, input_usage, _estimate_tokens(content), content),
    }


def _chunks(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


SseEvent = tuple[str, JsonDict]
PING: SseEvent = ("ping", {"type": "ping"})


def _block_events(index: int, block: JsonDict, spec: ResponseSpec) -> list[SseEvent]:
    cut = spec.cut_off if spec.cut_off is not None and spec.cut_off.block == index else None
    kind = block["type"]
    if kind == "text":
        start: JsonDict = {"type": "text", "text": ""}
        deltas = [
            {"type": "text_delta", "text": c} for c in _chunks(block["text"], spec.text_chunk)
        ]
        deltas += [{"type": "citations_delta", "citation": c} for c in block.get("citations", [])]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": c}
            for c in _chunks(block["thinking"], spec.text_chunk)
        ]
        if cut is None:
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in ("tool_use", "server_tool_use"):
        start = {"type": kind, "id": block["id"], "name": block["name"], "input": {}}
        arguments = json.dumps(spec.content[index].get("input", {}))
        if cut is not None:
            arguments = arguments[: cut.chars]
        deltas = [
            {"type": "input_json_delta", "partial_json": c}
            for c in _chunks(arguments, spec.input_json_chunk)
        ]
    else:
        start, deltas = block, []

    def event(name: str, **fields: Any) -> SseEvent:
        return name, {"type": name, "index": index, **fields}

    stop = [] if cut is not None and not cut.block_stop else [event("content_block_stop")]
    return [
        event("content_block_start", content_block=start),
        *(event("content_block_delta", delta=delta) for delta in deltas),
        *stop,
    ]


def build_events(message: JsonDict, spec: ResponseSpec) -> list[SseEvent]:
    """The SSE events streaming `message`, in the API's order, pings included."""
    usage = message["usage"]
    start_usage = {**usage, "output_tokens": 1}
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "stop_details": None,
        "usage": start_usage,
    }
    events: list[SseEvent] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        events.extend(_block_events(index, block, spec))
    delta = {
        "stop_reason": message["stop_reason"],
        "stop_sequence": message["stop_sequence"],
        "stop_details": message["stop_details"],
    }
    message_delta: JsonDict = {"type": "message_delta", "delta": delta}
    if not spec.omit_delta_usage:
        message_delta["usage"] = {
            key: usage[key]
            for key in (
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
                "server_tool_use",
            )
            if key in usage
        }
    events.append(("message_delta", message_delta))
    events.append(("message_stop", {"type": "message_stop"}))
    return _with_pings(events, spec.ping_every)


def _with_pings(events: list[SseEvent], every: int | None) -> list[SseEvent]:
    """The API's ping after the first content_block_start (after message_start if there is
    none); with `every`, also one after every `every` events; `every` 0: no pings."""
    if every == 0:
        return events
    first = next((i + 1 for i, (name, _) in enumerate(events) if name == "content_block_start"), 1)
    result: list[SseEvent] = []
    for position, item in enumerate(events, start=1):
        result.append(item)
        periodic = every is not None and position % every == 0 and position < len(events)
        if position == first or periodic:
            result.append(PING)
    return result


def events_before(events: Sequence[SseEvent], count: int) -> int:
    """Where to cut `events` so that `count` events other than pings go out (with the pings
    between them)."""
    seen = 0
    for position, (name, _) in enumerate(events):
        if name != "ping":
            if seen == count:
                return position
            seen += 1
    return len(events)


def encode_sse(name: str, data: JsonDict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def sse_pieces(raw: bytes) -> list[bytes]:
    """A recorded stream cut after each blank line; the pieces join to `raw` exactly."""
    pieces: list[bytes] = []
    start = 0
    while (end := raw.find(b"\n\n", start)) >= 0:
        pieces.append(raw[start : end + 2])
        start = end + 2
    if start < len(raw):
        pieces.append(raw[start:])
    return pieces


# --------------------------------------------------------------------------------------------
# Request validation (the checks of the real API that matter to a client keeping a history)
# --------------------------------------------------------------------------------------------

THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
SERVER_RESULT_BLOCKS = {"web_search_tool_result", "web_fetch_tool_result"}
ASSISTANT_ONLY_BLOCKS = {
    "tool_use", "thinking", "redacted_thinking", "server_tool_use", *SERVER_RESULT_BLOCKS
}  # fmt: skip
SERVER_TOOL_TYPES = {"web_search_20250305": "web_search", "web_fetch_20250910": "web_fetch"}
BETA_OF_TOOL = {"web_fetch_20250910": "web-fetch-2025-09-10"}


def check_server_tools(body: JsonDict, beta: str = "") -> str | None:
    """A tool with a `type` must be a server tool the fake knows, named as the API names
    it, with its beta header when it is in beta (`beta`: the `anthropic-beta` header)."""
    betas = {b.strip() for b in beta.split(",")}
    for index, tool in enumerate(body.get("tools") or []):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind is None or kind == "custom":
            continue
        if kind not in SERVER_TOOL_TYPES:
            return (
                f"tools.{index}: Input tag '{kind}' found using 'type' does not match any of "
                "the expected tags"
            )
        if tool.get("name") != SERVER_TOOL_TYPES[kind]:
            return f"tools.{index}.name: Input should be '{SERVER_TOOL_TYPES[kind]}'"
        # "You can use either allowed_domains or blocked_domains, but not both in the same
        # request" (web search tool docs, "Domain filtering"; the web fetch tool docs take the
        # same lists: https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-fetch-tool)
        if tool.get("allowed_domains") and tool.get("blocked_domains"):
            return f"tools.{index}: use either allowed_domains or blocked_domains, not both"
        needed = BETA_OF_TOOL.get(kind)
        if needed is not None and needed not in betas:
            return f"tools.{index}: '{kind}' requires the beta header 'anthropic-beta: {needed}'"
    return None


# Tool search (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool):
# a tool with `defer_loading: true` stays out of the prompt until a `tool_reference` block
# (`{"type": "tool_reference", "tool_name": ...}`, in a `tool_result`'s content: "Custom tool
# search implementation") loads it; its definition is then expanded where the reference is,
# so deferred tools are not part of the system/tools prefix (the page's prompt caching
# section). Needs the beta header; refused as the page's error section lists: every tool
# deferred, or a reference to a tool with no definition in `tools`.
TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"


def deferred_tools(body: JsonDict) -> dict[str, JsonDict]:
    return {
        str(tool.get("name")): tool
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and tool.get("defer_loading") is True
    }


def loaded_tools(body: JsonDict) -> list[Any]:
    """The tools in the prompt's prefix: all but the deferred ones."""
    return [
        tool
        for tool in body.get("tools") or []
        if not (isinstance(tool, dict) and tool.get("defer_loading") is True)
    ]


def expand_references(body: JsonDict, blocks: Sequence[Any]) -> list[Any]:
    """`blocks` with each tool_result's `tool_reference` blocks replaced by the definition
    they load (what the model reads there)."""
    deferred = deferred_tools(body)
    out: list[Any] = []
    for block in blocks:
        content = block.get("content") if isinstance(block, dict) else None
        if isinstance(content, list) and any(_is_reference(c) for c in content):
            expanded = [
                {"type": "tool_definition", **deferred.get(str(c.get("tool_name")), {})}
                if _is_reference(c)
                else c
                for c in content
            ]
            block = {**block, "content": expanded}
        out.append(block)
    return out


def _is_reference(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_reference"


def check_tool_search(body: JsonDict, beta: str = "") -> str | None:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    deferred = deferred_tools(body)
    if deferred and TOOL_SEARCH_BETA not in {b.strip() for b in beta.split(",")}:
        return f"tools: defer_loading requires the beta header 'anthropic-beta: {TOOL_SEARCH_BETA}'"
    if tools and len(deferred) == len(tools):
        return "All tools have defer_loading set to true. At least one tool must be non-deferred."
    for index, message in enumerate(body.get("messages") or []):
        for block_index, block in enumerate(_blocks(message) if isinstance(message, dict) else []):
            content = block.get("content") if isinstance(block, dict) else None
            for ref in content if isinstance(content, list) else []:
                if not _is_reference(ref):
                    continue
                if block.get("type") != "tool_result":
                    where = f"messages.{index}.content.{block_index}"
                    return f"{where}: tool_reference blocks belong in a tool_result"
                name = ref.get("tool_name")
                if name not in deferred and name not in {t.get("name") for t in tools}:
                    return f"Tool reference '{name}' has no corresponding tool definition"
    return None


def validate_messages_request(
    body: JsonDict,
    *,
    need_max_tokens: bool = True,
    reject_text_after_tool_result: bool = False,
    text_after_results_led_by: str | None = None,
) -> str | None:
    """The real API's 400 message for `body`, or None when it would be accepted.

    `reject_text_after_tool_result`: also refuse a text block right after a tool_result in a
    user message (the API takes it, but the docs warn that it degrades the model's answers),
    unless it is `text_after_results_led_by` (a client's one deliberate exception, such as a
    marker leading a prompt sent after results the model never answered)."""
    return (
        _check_top_level(body, need_max_tokens)
        or _check_model_limits(body, need_max_tokens)
        or _check_thinking_form(body)
        or _check_sampling(body)
        or _check_thinking_config(body)
        or _check_messages(body["messages"])
        or _check_thinking_history(body)
        or check_thinking_binding(body)
        or _check_cache_breakpoints(body)
        or (
            _check_text_after_tool_result(body["messages"], text_after_results_led_by)
            if reject_text_after_tool_result
            else None
        )
        or _check_prompt_length(body)
    )


def _check_model_limits(body: JsonDict, need_max_tokens: bool) -> str | None:
    known = model_spec(body["model"])
    if known is None or not need_max_tokens or body["max_tokens"] <= known.max_output:
        return None
    return (
        f"max_tokens: {body['max_tokens']} > {known.max_output}, which is the maximum allowed "
        f"number of output tokens for {body['model']}"
    )


def _check_thinking_form(body: JsonDict) -> str | None:
    thinking = body.get("thinking")
    if not isinstance(thinking, dict):
        return None
    kind = thinking.get("type")
    if kind not in ("enabled", "disabled", "adaptive", "between_tools"):
        return "thinking.type: Input should be 'enabled', 'disabled', 'adaptive' or 'between_tools'"
    known = model_spec(body["model"])
    off = known.off if known else None
    if (kind == "disabled" and off == "between_tools") or (
        kind == "between_tools" and off is not None and off != "between_tools"
    ):
        return f'"thinking.type.{kind}" is not supported for this model.'
    form = thinking_form(body["model"])
    if kind == "enabled" and form == "adaptive":
        return (
            '"thinking.type.enabled" is not supported for this model. Use '
            '"thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
        )
    if kind == "adaptive":
        if form == "budget":
            return "adaptive thinking is not supported on this model"
        if "budget_tokens" in thinking:
            return "thinking.adaptive.budget_tokens: Extra inputs are not permitted"
    output_config = body.get("output_config")
    effort = output_config.get("effort") if isinstance(output_config, dict) else None
    if effort is not None and effort not in EFFORTS:
        return "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
    return _check_model_effort(body["model"], kind, effort)


def _check_model_effort(model_id: str, kind: Any, effort: Any) -> str | None:
    """Per-model effort rules: a level the model does not take, and `disabled` above the
    model's `off_up_to` (troubleshooting thinking: "accepts disabled at effort high or lower")."""
    known = model_spec(model_id)
    if known is None or effort is None:
        return None
    if effort not in known.efforts:
        return f'"output_config.effort.{effort}" is not supported for this model.'
    up_to = known.off_up_to
    if kind == "disabled" and up_to is not None and EFFORTS.index(effort) > EFFORTS.index(up_to):
        return (
            f'"thinking.type.disabled" is not supported with effort "{effort}" for this model; '
            f'use effort "{up_to}" or lower.'
        )
    return None


EFFORTS = ("low", "medium", "high", "xhigh", "max")
SAMPLING = ("temperature", "top_p", "top_k")


def _check_sampling(body: JsonDict) -> str | None:
    """Claude 5 and Opus 4.7 dropped sampling parameters: `temperature` only at its default
    (1), `top_p` and `top_k` not at all. Elsewhere thinking needs temperature 1."""
    known = model_spec(body["model"])
    dropped = not known.sampling if known else thinking_form(body["model"]) == "adaptive"
    for name in SAMPLING:
        if name not in body:
            continue
        if dropped and not (name == "temperature" and body[name] == 1):
            return f"`{name}` is deprecated for this model."
    thinking = body.get("thinking")
    thinks = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    if thinks and body.get("temperature", 1) != 1:
        return (
            "`temperature` may only be set to 1 when thinking is enabled. Please consult our "
            f"documentation at {THINKING_DOCS}#feature-compatibility"
        )
    return None


def _check_cache_breakpoints(body: JsonDict) -> str | None:
    blocks: list[Any] = [*(body.get("tools") or [])]
    if isinstance(body.get("system"), list):
        blocks += body["system"]
    for message in body["messages"]:
        blocks += _blocks(message)
    found = sum(1 for block in blocks if isinstance(block, dict) and "cache_control" in block)
    found += isinstance(body.get("cache_control"), dict) and bool(blocks)
    if found > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {found}."
    return None


def _check_text_after_tool_result(messages: list[JsonDict], allowed: str | None) -> str | None:
    for index, message in enumerate(messages):
        if message["role"] != "user":
            continue
        blocks = _blocks(message)
        for position, (before, after) in enumerate(itertools.pairwise(blocks), start=1):
            if allowed is not None and after.get("text") == allowed:
                continue
            if before.get("type") == "tool_result" and after.get("type") == "text":
                return (
                    f"messages.{index}.content.{position}: a `text` block directly follows a "
                    "`tool_result` block (fake API, reject_text_after_tool_result: the docs "
                    "warn that text after tool results degrades the model's answers; send it "
                    "in its own message)"
                )
    return None


def _check_prompt_length(body: JsonDict) -> str | None:
    known = model_spec(body["model"])
    if known is None or len(json.dumps(body)) // 4 <= known.context_window:  # a quick bound
        return None
    tokens = prompt_tokens(body)
    if tokens <= known.context_window:
        return None
    return f"prompt is too long: {tokens} tokens > {known.context_window} maximum"


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
    if kind in ("tool_use", "server_tool_use"):
        for key, expected in (("id", str), ("name", str), ("input", dict)):
            if not isinstance(block.get(key), expected):
                return f"{where}.{kind}.{key}: Field required"
    if kind in SERVER_RESULT_BLOCKS and not isinstance(block.get("tool_use_id"), str):
        return f"{where}.{kind}.tool_use_id: Field required"
    if kind == "tool_result" and not isinstance(block.get("tool_use_id"), str):
        return f"{where}.tool_result.tool_use_id: Field required"
    if kind == "image" and role != "user":
        return f"{where}: `image` blocks can only be in `user` messages"
    if kind == "image":
        return _check_image(where, block)
    if kind == "tool_result" and isinstance(block.get("content"), list):
        for index, part in enumerate(block["content"]):
            if isinstance(part, dict) and part.get("type") == "image":
                problem = _check_image(f"{where}.tool_result.content.{index}", part)
                if problem:
                    return problem
    return None


# The vision docs (https://docs.anthropic.com/en/docs/build-with-claude/vision): base64 image
# blocks of these types, at most 5 MB each (measured on the base64 text); the messages are the
# API's 400s for a wrong type, a type that does not match the data, and an image too large.
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
IMAGE_MAX_BASE64 = 5 * 1024 * 1024


def _image_type_of(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _check_image(where: str, block: Mapping[str, Any]) -> str | None:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return (
            f"{where}.image.source: Input tag does not match any of the expected tags: "
            "'base64', 'url', 'file'"
        )
    media_type = source.get("media_type")
    if media_type not in IMAGE_MEDIA_TYPES:
        return (
            f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', "
            "'image/png', 'image/gif' or 'image/webp'"
        )
    data = source.get("data")
    if not isinstance(data, str):
        return f"{where}.image.source.base64.data: Field required"
    if len(data) > IMAGE_MAX_BASE64:
        return (
            f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(data)} bytes > "
            f"{IMAGE_MAX_BASE64} bytes"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return f"{where}.image.source.base64.data: invalid base64 data"
    found = _image_type_of(raw[:16])
    if found is None:
        return f"{where}.image.source.base64.data: Could not process image"
    if found != media_type:
        return (
            f"{where}.image.source.base64: The image was specified using the {media_type} media "
            f"type, but the image appears to be a {found} image"
        )
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
            is_last = index == len(messages) - 1
            problem = _check_server_tool_pairing(index, message, unanswered_ok=is_last)
            if problem:
                return problem
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


def _check_server_tool_pairing(index: int, message: JsonDict, *, unanswered_ok: bool) -> str | None:
    """A server tool's result follows its `server_tool_use` in the same message; only the
    last message (a `pause_turn` sent back to go on) may hold a call without its result."""
    called: set[str] = set()
    answered: set[str] = set()
    for block_index, block in enumerate(_blocks(message)):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "server_tool_use":
            called.add(block["id"])
        elif kind in SERVER_RESULT_BLOCKS:
            if block["tool_use_id"] not in called:
                return (
                    f"messages.{index}.content.{block_index}: `{kind}` tool use id "
                    f"{block['tool_use_id']} has no `server_tool_use` before it"
                )
            answered.add(block["tool_use_id"])
    unanswered = sorted(called - answered)
    if unanswered and not unanswered_ok:
        return f"messages.{index}: `server_tool_use` without a result: {', '.join(unanswered)}"
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


# Preserved thinking: a thinking block is bound to its prefix. This follows
# https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks and
# .../preserved-thinking/fix-bound-to-a-different-conversation: the prefix of a block is the
# top-level `system`, `tools`, and everything before it in `messages`; when it differs from
# what was sent as the block was produced, the request is refused with a 400. The fake's
# signature (and a redacted block's `data`) ends with a hash of that prefix; a signature it
# did not produce is refused too, as the API refuses a forged one. Prompt-cache breakpoints
# (`cache_control`) are not part of the prefix: moving the tail breakpoint is the documented
# caching pattern. Tiller never sends `thinking.block_binding.prefix_mismatch_behavior`
# ("drop_block", behind the `thinking-binding-controls-2026-08-01` beta), so the fake does
# not model it. The check runs on the models the docs list (Fable and Mythos 5.1+, and the
# 5.5 models); the model check (a block another model cannot read is dropped) is not modelled.

BOUND = "~bound:"
BINDING_ERROR = (
    "Invalid `signature` in `{kind}` block. The block is bound to a different conversation. "
    'Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)
THINKING_TYPES = ("thinking", "redacted_thinking")


def checks_prefix(model_id: str) -> bool:
    """Whether the model runs the prefix check on thinking blocks sent back."""
    match = _MODEL_ID.match(model_id)
    if match is None:
        return False
    version = (int(match["major"]), int(match["minor"] or 0))
    return version >= (5, 5) or (match["line"] in ("fable", "mythos") and version >= (5, 1))


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def prefix_digest(body: JsonDict, before: Sequence[Any], role: str, blocks: Sequence[Any]) -> str:
    """The hash of a block's prefix: system, tools, the messages `before` its message, and
    the `blocks` before it in its own message (of `role`)."""
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    messages = [
        {"role": m.get("role"), "content": expand_references(body, _blocks(m))}
        for m in before
        if isinstance(m, dict)
    ]
    prefix = {  # deferred tools are where their references are, not here (tool search)
        "system": system,
        "tools": loaded_tools(body),
        "messages": [*messages, {"role": role, "content": expand_references(body, blocks)}],
    }
    encoded = json.dumps(_without_cache_control(prefix), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()[:32]


def bind_thinking(body: JsonDict, content: Sequence[JsonDict]) -> list[JsonDict]:
    """`content` (a response to `body`) with each thinking block's signature bound to its
    prefix. A response continues the request's last message when that is the assistant's."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    before, head = messages, []
    if messages and messages[-1].get("role") == "assistant":
        before, head = messages[:-1], _blocks(messages[-1])
    out: list[JsonDict] = []
    for block in content:
        key = {"thinking": "signature", "redacted_thinking": "data"}.get(block["type"])
        if key is not None and block.get(key):
            digest = prefix_digest(body, before, "assistant", [*head, *out])
            block = {**block, key: f"{block[key]}{BOUND}{digest}"}
        out.append(block)
    return out


def check_thinking_binding(body: JsonDict) -> str | None:
    """The API's 400 for a thinking block whose prefix changed since it was produced."""
    if not checks_prefix(str(body.get("model"))):
        return None
    messages = body["messages"]
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        for j, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in THINKING_TYPES:
                continue
            token = str(block.get("signature" if kind == "thinking" else "data") or "")
            _, bound, digest = token.rpartition(BOUND)
            where = f"messages.{i}.content.{j}"
            if not bound:
                return f"{where}: Invalid `signature` in `{kind}` block."
            if digest != prefix_digest(body, messages[:i], str(message.get("role")), blocks[:j]):
                return f"{where}: {BINDING_ERROR.format(kind=kind)}"
    return None


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
    """One request the fake received, and the status it answered (0: no answer was sent);
    `response`: the message answered to POST /v1/messages (its `usage` as the fake computed
    it), also when the stream was then interrupted; None for a replay or an error."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int
    query: str = ""
    response: JsonDict | None = None

    @property
    def usage(self) -> JsonDict | None:
        return None if self.response is None else self.response.get("usage")

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

    async def unwatch(self) -> None:
        """Stop watching. Waits for the cancelled read to finish: until it has, the reader
        still counts it as waiting, and reading the next request would raise RuntimeError."""
        gone, self._gone = self._gone, None
        if gone is None:
            return
        if not gone.done():
            gone.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await gone
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

    async def wait_gone_or(self, event: asyncio.Event) -> bool:
        """Wait until the client goes away or ``event`` is set; True if the client went away."""
        assert self._gone is not None
        waiter = asyncio.ensure_future(event.wait())
        either: set[asyncio.Future[Any]] = {self._gone, waiter}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
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
        reject_text_after_tool_result: bool = False,
        text_after_results_led_by: str | None = None,
        cache_lookback: int = 20,
        cache_min_tokens: int = 0,
    ) -> None:
        self.host = host
        self.reject_text_after_tool_result = reject_text_after_tool_result
        self.text_after_results_led_by = text_after_results_led_by
        self.cache = PromptCache(lookback=cache_lookback, min_tokens=cache_min_tokens)
        self.port = port
        self.api_key = api_key
        self.models = list(models)
        self.when_empty = ResponseSpec.from_dict(when_empty)
        self.loop = loop
        self.requests: list[RecordedRequest] = []
        self.record_to: Path | None = None  # --record: each request appended as a JSON line
        self.disconnects = 0
        self.hanging = 0
        self.held: dict[str, int] = {}  # holdUntil name -> streams held there now
        self._released: set[str] = set()
        self._queue: deque[SpecSource] = deque()
        self._routes: dict[str, deque[SpecSource]] = {}
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

    def enqueue_for(self, marker: str, *specs: SpecSource) -> None:
        """Queue responses for the conversations whose first user message contains ``marker``
        (a subagent's prompt, say): several conversations served by one fake at the same time
        each get their own script, whatever order their requests come in. Not the API's
        behaviour: a test's routing, like the queue itself."""
        for spec in specs:
            if not callable(spec):
                ResponseSpec.from_dict(spec)
            self._routes.setdefault(marker, deque()).append(spec)

    @property
    def pending(self) -> int:
        """How many queued responses have not been served yet."""
        return len(self._queue)

    def _next_spec(self, body: JsonDict) -> ResponseSpec:
        first = _first_user_text(body)
        for marker, queue in self._routes.items():
            if marker in first and queue:
                source = queue.popleft()
                return ResponseSpec.from_dict(source(body) if callable(source) else source)
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

    def count_requests(self) -> list[RecordedRequest]:
        """Valid POST /v1/messages/count_tokens requests that were answered 200."""
        return [
            r
            for r in self.requests
            if (r.method, r.path, r.status) == ("POST", "/v1/messages/count_tokens", 200)
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

    async def wait_held(self, name: str, timeout: float = 5) -> None:
        """Wait until a stream is held on ``name`` (its ``holdUntil``)."""
        await self._wait_until(lambda: self.held.get(name, 0) > 0, timeout, f"a hold on {name!r}")

    def release(self, name: str) -> None:
        """Let the streams held on ``name`` go on, and every later one that would hold there."""
        self._released.add(name)
        self._notify()

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
                f"requests={len(self.requests)} hanging={self.hanging} held={self.held} "
                f"disconnects={self.disconnects}"
            )
            raise TimeoutError(f"fake API: timed out waiting for {what} ({state})") from None

    def _record(
        self, request: HttpRequest, body: Any, status: int, response: JsonDict | None = None
    ) -> None:
        headers = dict(request.headers)
        recorded = RecordedRequest(
            request.method, request.path, headers, body, status, request.query, response
        )
        self.requests.append(recorded)
        if self.record_to is not None:
            line = {"method": request.method, "path": request.path, "status": status, "body": body}
            with self.record_to.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
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
            await connection.unwatch()
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
        """Shaped like the API's (``req_011C`` and 20 base58 characters), unique per fake."""
        number = next(self._request_ids)
        mixed = "".join(BASE58[(number * 7919 + i * 104729 + self.port) % 58] for i in range(14))
        counter = "".join(BASE58[number // 58**i % 58] for i in reversed(range(6)))
        return f"req_011C{mixed}{counter}"

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
            "request-id": self._request_id(),
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
        """POST /v1/messages/count_tokens (docs: build-with-claude/token-counting and the API
        reference, api/messages/count_tokens): the body of a Messages request without
        `max_tokens`/`stream`, answered `{"input_tokens": N}`, N counted as `usage` counts a
        prompt (`prompt_tokens`). Recorded like every request (`count_requests`)."""
        problem = (
            _body_problem(body)
            or validate_messages_request(body, need_max_tokens=False)
            or check_tool_search(body, request.headers.get("anthropic-beta", ""))
        )
        if problem:
            return await self._send_error(
                connection, request, body, 400, "invalid_request_error", problem
            )
        self._record(request, body, 200)
        tokens = {"input_tokens": prompt_tokens(body)}
        return await self._send_json(connection, request, 200, tokens)

    async def _messages(self, request: HttpRequest, body: Any, connection: _Connection) -> bool:
        problem = (
            _body_problem(body)
            or validate_messages_request(
                body,
                reject_text_after_tool_result=self.reject_text_after_tool_result,
                text_after_results_led_by=self.text_after_results_led_by,
            )
            or check_server_tools(body, request.headers.get("anthropic-beta", ""))
            or check_tool_search(body, request.headers.get("anthropic-beta", ""))
        )
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
        if spec.replay is not None:
            return await self._replay(connection, request, body, spec)
        if spec.hold_until is not None and body.get("stream") is not True:
            problem = "fake API: holdUntil needs `stream: true`"
            headers = {"x-should-retry": "false"}
            return await self._send_error(
                connection, request, body, 500, "api_error", problem, headers
            )
        message = build_message(
            spec,
            message_id=f"msg_fake_{next(self._message_ids):04d}",
            model=body["model"],
            request_body=body,
            new_tool_id=lambda: f"toolu_fake_{next(self._tool_ids)}",
            input_usage=self.cache.account(body),
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
        if interruption is None or interruption.kind == "garbage":
            self._record(request, body, 200, message)
            if interruption is not None:
                payload = b'{"id": "' + message["id"].encode() + b'", "type": "mess'
                head = {"content-type": "application/json", "content-length": str(len(payload))}
                await connection.send(response_head(200, head) + payload)
                return True
            return await self._send_json(connection, request, 200, message)
        if interruption.kind == "error":
            assert interruption.error is not None
            return await self._send_error_spec(connection, request, body, interruption.error)
        self._record(request, body, 0, message)
        connection.watch()
        if interruption.kind in ("hang", "hang_headers"):
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
        interruption = spec.interruption
        if interruption is not None and interruption.kind == "hang_headers":
            self._record(request, body, 0, message)
            connection.watch()
            try:
                await self._hang(connection)
            finally:
                await connection.unwatch()
            return False
        self._record(request, body, 200, message)
        connection.watch()
        try:
            if not await connection.send(response_head(200, self._sse_headers())):
                return self._lost()
            events = build_events(message, spec)
            cut = (
                len(events)
                if interruption is None
                else events_before(events, interruption.after_events)
            )
            for position, (name, data) in enumerate(events[:cut]):
                if position and spec.chunk_delay and await connection.wait_gone(spec.chunk_delay):
                    return self._lost()
                if not await connection.send(chunk(encode_sse(name, data))):
                    return self._lost()
                hold = spec.hold_until if position == 0 else None
                if hold is not None and not await self._hold(connection, hold):
                    return self._lost()
            return await self._finish_stream(connection, interruption)
        finally:
            await connection.unwatch()

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
        if interruption.kind == "garbage":
            return await connection.send(chunk(GARBAGE_EVENT) + LAST_CHUNK) or self._lost()
        if interruption.kind == "drop":
            connection.writer.transport.abort()
            return False
        await self._hang(connection)
        return False

    def _sse_headers(self) -> dict[str, str]:
        return {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
            "request-id": self._request_id(),
        }

    async def _replay(
        self, connection: _Connection, request: HttpRequest, body: Any, spec: ResponseSpec
    ) -> bool:
        """Serve a recorded stream verbatim, one event per chunk."""
        assert spec.replay is not None
        if body.get("stream") is not True:
            problem = "fake API: a replayed stream needs `stream: true`"
            headers = {"x-should-retry": "false"}
            return await self._send_error(
                connection, request, body, 500, "api_error", problem, headers
            )
        self._record(request, body, 200)
        connection.watch()
        try:
            if not await connection.send(response_head(200, self._sse_headers())):
                return self._lost()
            for position, piece in enumerate(sse_pieces(spec.replay)):
                if position and spec.chunk_delay and await connection.wait_gone(spec.chunk_delay):
                    return self._lost()
                if not await connection.send(chunk(piece)):
                    return self._lost()
            return await connection.send(LAST_CHUNK) or self._lost()
        finally:
            await connection.unwatch()

    async def _hold(self, connection: _Connection, name: str) -> bool:
        """Send nothing until ``release(name)``; False when the client went away first."""
        self.held[name] = self.held.get(name, 0) + 1
        self._notify()
        try:
            while name not in self._released:
                if await connection.wait_gone_or(self._changed):
                    return False
            return True
        finally:
            self.held[name] -= 1
            self._notify()

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


def _first_user_text(body: JsonDict) -> str:
    """The text of a request's first message (where ``enqueue_for`` looks for its marker)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict):
        return ""
    content = messages[0].get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


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
    reject_text_after_tool_result: bool = False

    @classmethod
    def load(cls, path: Path | None) -> Script:
        """Read `{"responses": [spec, ...], "loop": bool, "models": [str, ...],
        "apiKey": str, "whenEmpty": spec, "rejectTextAfterToolResult": bool}`; every key is
        optional."""
        raw: Any = {} if path is None else json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise SpecError("the script must be a JSON object")
        _check_keys(
            raw,
            {"responses", "loop", "models", "apiKey", "whenEmpty", "rejectTextAfterToolResult"},
            "script",
        )
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
            reject_text_after_tool_result=bool(raw.get("rejectTextAfterToolResult", False)),
        )


def _write_port_file(path: Path, port: int) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(f"{port}\n", encoding="utf-8")
    os.replace(partial, path)


async def serve(
    script: Script, port: int, port_file: Path | None, record: Path | None = None
) -> None:
    api = FakeMessagesAPI(
        *script.responses,
        port=port,
        api_key=script.api_key,
        models=script.models,
        when_empty=script.when_empty,
        loop=script.loop,
        reject_text_after_tool_result=script.reject_text_after_tool_result,
    )
    api.record_to = record
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
    parser.add_argument("--record", type=Path, help="append each request here as a JSON line")
    args = parser.parse_args(argv)
    try:
        script = Script.load(args.script)
    except (OSError, ValueError) as error:
        print(f"fakeapi: {error}", file=sys.stderr)
        return 2
    asyncio.run(serve(script, args.port, args.port_file, args.record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
