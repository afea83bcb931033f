"""The Anthropic Messages API through the official SDK (imported lazily: it is slow to load).

A response is read from the raw event stream (sdk_adapter.open_events) and accumulated here
(``StreamAccumulator``), in time linear in its size: text and thinking deltas go to the
listener as they come, a tool input's JSON fragments are joined and parsed once, at the end of
their block. Every failure leaves as a ``ProviderError`` whose kind and ``retryable`` say what
happened; the listener keeps the blocks it was already given.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from typing import Any, Final

import anthropic
import httpx2

from tiller.jsontypes import JSON
from tiller.model.models import ModelSpec, ThinkingForm, ThinkingOff
from tiller.model.provider import (
    ModelClient,
    ModelInfo,
    ModelRequest,
    ModelResponse,
    ProviderError,
    StreamListener,
    api_params,
    count_params,
)
from tiller.model.sdk_adapter import (
    client_timeout,
    http_client,
    install_retry_notices,
    on_retry,
    open_events,
)
from tiller.model.server_tools import beta_headers
from tiller.model.usage import CacheTtl, Usage
from tiller.protocol import ErrorKind

MAX_RETRIES: Final = 2
CUT_OFF_REASONS: Final = frozenset({"max_tokens", "model_context_window_exceeded"})
RESCHEDULE_EVERY: Final = 1.0  # seconds: the idle timer is pushed back at most this often
YIELD_EVERY: Final = 128  # events: let other tasks (getState, interrupt) run this often
NO_KEY_MESSAGE: Final = (
    "No API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment the "
    "server starts from, or play the offline demo with --demo (no key, no network)."
)
KEY_REFUSED_MESSAGE: Final = (
    "The model API refused the key: {detail}. Check ANTHROPIC_API_KEY "
    "(or ANTHROPIC_AUTH_TOKEN), or play the offline demo with --demo."
)

_ERROR_TYPES: dict[str, ErrorKind] = {
    "authentication_error": "auth",
    "permission_error": "auth",
    "billing_error": "auth",
    "rate_limit_error": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server",
    "timeout_error": "timeout",
    "invalid_request_error": "invalid_request",
    "request_too_large": "invalid_request",
    "not_found_error": "invalid_request",
}


def _error_body(body: object) -> dict[str, Any]:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return inner
    return {}


def _kind_of_status(status: int) -> ErrorKind:
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    if status == 529:
        return "overloaded"
    if status in (408, 504):
        return "timeout"
    if status >= 500 or status == 200:  # 200: an error event in the middle of a stream
        return "server"
    return "invalid_request"


def _should_retry_header(err: anthropic.APIStatusError) -> bool | None:
    """The API's own ``x-should-retry`` answer, when it gave one."""
    match err.response.headers.get("x-should-retry"):
        case "true":
            return True
        case "false":
            return False
        case _:
            return None


def error_from_body(body: object, where: str, *, retryable: bool | None = None) -> ProviderError:
    """A ProviderError for the API's error object ``{type, message}`` (HTTP body or SSE)."""
    inner = _error_body(body)
    message = str(inner.get("message") or "no message")
    text = f"{message} ({where})"
    if "prompt is too long" in message.lower():
        return ProviderError("context_too_long", text, retryable=False)
    kind = _ERROR_TYPES.get(str(inner.get("type", "")))
    if kind is None:
        kind = "server" if where == "mid-stream" else "invalid_request"
    return ProviderError(kind, text, retryable=retryable)


def classify(err: BaseException) -> ProviderError:
    """Map any exception met while calling the API to a ProviderError a user can act on."""
    problem = _classify(err)
    if isinstance(err, anthropic.AuthenticationError):  # 401: the key itself was refused
        detail = problem.message
        return ProviderError("auth", KEY_REFUSED_MESSAGE.format(detail=detail), retryable=False)
    return problem


def _classify(err: BaseException) -> ProviderError:
    match err:
        case ProviderError():
            return err
        case anthropic.APITimeoutError() | httpx2.TimeoutException():
            return ProviderError("timeout", "The model API did not answer in time.")
        case anthropic.APIConnectionError() | httpx2.TransportError():
            return ProviderError("connection", f"Lost the connection to the model API: {err}")
        case anthropic.APIStatusError():
            body = _error_body(err.body)
            where = "mid-stream" if err.status_code == 200 else f"HTTP {err.status_code}"
            if not body:
                kind = _kind_of_status(err.status_code)
                return ProviderError(kind, f"{err} ({where})", retryable=_should_retry_header(err))
            problem = error_from_body(body, where, retryable=_should_retry_header(err))
            if body.get("type") not in _ERROR_TYPES and problem.kind != "context_too_long":
                kind = _kind_of_status(err.status_code)
                return ProviderError(kind, problem.message, retryable=problem.retryable)
            return problem
        case anthropic.APIError() | httpx2.HTTPError():
            return ProviderError("connection", f"The model API call failed: {err}")
        case ValueError() | KeyError() | TypeError() | AttributeError():
            # JSONDecodeError and UnicodeDecodeError are ValueErrors: a malformed stream.
            return ProviderError(
                "server", f"The model API sent a malformed stream ({type(err).__name__}: {err})"
            )
        case _:
            return ProviderError(
                "server", f"Reading the model API stream failed ({type(err).__name__}: {err})"
            )


# --- accumulating a stream ----------------------------------------------------------------------


def too_big_message(size: int, limit: int) -> str:
    return (
        f"Not run: the tool input was over {size:,} bytes, more than the limit of {limit:,} "
        "bytes (maxToolInputBytes). Write the file in parts: write_file with a first part, "
        "then edit_file to append the rest in pieces each well under the limit."
    )


def cut_off_message(stop_reason: str | None) -> str:
    return (
        f"Not run: the response was cut off by {stop_reason or 'the end of the stream'} while "
        "this call's input was still being written, so the input is incomplete. Make the call "
        "again with a smaller input (write large files in parts)."
    )


def not_json_message(size: int) -> str:
    return (
        f"Not run: this call's input ({size:,} bytes) was not a valid JSON object. "
        "Make the call again."
    )


@dataclass
class _Text:
    parts: list[str] = field(default_factory=list)
    citations: list[JSON] = field(default_factory=list)  # kept: they go back in the history


@dataclass
class _Thinking:
    parts: list[str] = field(default_factory=list)
    signature: str = ""


@dataclass
class _ToolUse:
    id: str
    name: str
    parts: list[str] = field(default_factory=list)
    size: int = 0
    over: bool = False


@dataclass
class _Whole:
    """Any other block (redacted_thinking, server tool use and results, compaction, ...): kept
    as sent, its deltas folded in: ``input_json_delta`` builds its ``input``; any other delta's
    string fields are appended to the block's, other fields replace them."""

    block: JSON
    input_parts: list[str] = field(default_factory=list)

    def fold(self, delta: JSON) -> None:
        if delta.get("type") == "input_json_delta":
            self.input_parts.append(str(delta.get("partial_json") or ""))
            return
        for key, value in delta.items():
            if key == "type":
                continue
            before = self.block.get(key)
            if isinstance(value, str) and isinstance(before, str | None):
                self.block[key] = (before or "") + value
            else:
                self.block[key] = value

    def closed(self) -> JSON:
        if self.input_parts:
            parsed = _parse_input("".join(self.input_parts))
            if isinstance(parsed, dict):
                self.block["input"] = parsed
        return self.block


_Open = _Text | _Thinking | _ToolUse | _Whole


@dataclass
class StreamAccumulator:
    """Builds a ``ModelResponse`` from raw stream events, in time linear in their size.

    Feed each event's parsed data to ``feed`` and call ``finish`` at the end of the stream.
    What the loop gets:

    - ``content``: the finished blocks, in order, in API param shape (text, thinking with its
      signature, redacted_thinking, tool_use, and any other block type as sent), each also
      given to ``listener.block`` as it completes. Empty text blocks are dropped. A text
      block keeps its ``citations`` (``citations_delta``); server tool blocks
      (``server_tool_use``, ``web_search_tool_result``, ...) are kept whole, as sent (after a
      ``pause_turn`` a ``server_tool_use`` may have no result yet: it goes back as it is).
    - A tool_use whose input grew past ``max_tool_input_bytes``: its further deltas are
      discarded, its ``input`` is ``{}`` and ``input_errors[id]`` says it was too big and how
      to write in parts.
    - A tool_use still open when the stream ended (``max_tokens`` or
      ``model_context_window_exceeded`` in mid-call): ``input`` ``{}`` and ``input_errors[id]``
      says it was cut off, naming the stop reason. One whose JSON does not parse to an object:
      ``input`` ``{}`` and ``input_errors[id]`` says so. A text or thinking block still open
      is kept as far as it got (a thinking block only with its signature: without one the API
      would refuse it back).
    - ``stop_reason``, ``stop_details`` and ``usage`` from ``message_start`` /
      ``message_delta``; a ``message_delta`` without ``usage`` is fine.
    """

    listener: StreamListener
    max_tool_input_bytes: int
    cache_ttl: CacheTtl = "5m"  # what the request's breakpoints asked for (usage without a split)
    open: dict[int, _Open] = field(default_factory=dict)
    done: list[tuple[int, JSON]] = field(default_factory=list)
    input_errors: dict[str, str] = field(default_factory=dict)
    unusable: list[tuple[str, int, bool]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None
    stop_details: JSON | None = None
    stopped: bool = False
    events: int = 0

    def feed(self, data: JSON) -> None:
        self.events += 1
        match data.get("type"):
            case "content_block_delta":
                self._delta(self.open.get(data["index"]), data["delta"])
            case "content_block_start":
                self._start(data["index"], data["content_block"])
            case "content_block_stop":
                block = self.open.pop(data["index"], None)
                if block is not None:
                    self._close(data["index"], block, complete=True)
            case "message_start":
                self._usage(data.get("message", {}).get("usage"))
            case "message_delta":
                delta = data.get("delta") or {}
                self.stop_reason = delta.get("stop_reason", self.stop_reason)
                details = delta.get("stop_details")
                self.stop_details = details if isinstance(details, dict) else self.stop_details
                self._usage(data.get("usage"))
            case "message_stop":
                self.stopped = True
            case _:
                pass  # ping, and event types newer than this code

    def _start(self, index: int, block: JSON) -> None:
        match block.get("type"):
            case "text":
                cited = block.get("citations")
                self.open[index] = _Text(citations=list(cited) if isinstance(cited, list) else [])
                self._delta(self.open[index], {"type": "text_delta", "text": block.get("text")})
            case "thinking":
                self.open[index] = _Thinking(signature=str(block.get("signature") or ""))
                delta = {"type": "thinking_delta", "thinking": block.get("thinking")}
                self._delta(self.open[index], delta)
            case "tool_use":
                self.open[index] = _ToolUse(str(block["id"]), str(block["name"]))
            case _:
                self.open[index] = _Whole(dict(block))

    def _delta(self, block: _Open | None, delta: JSON) -> None:
        match block, delta.get("type"):
            case _ToolUse(over=False) as tool, "input_json_delta":
                piece = str(delta.get("partial_json") or "")
                tool.size += len(piece.encode())
                if tool.size > self.max_tool_input_bytes:
                    tool.over, tool.parts = True, []
                else:
                    tool.parts.append(piece)
            case _ToolUse() as tool, "input_json_delta":
                tool.size += len(str(delta.get("partial_json") or "").encode())
            case _Text() as text, "text_delta":
                said = delta.get("text")
                if said:
                    text.parts.append(said)
                    self.listener.text(said)
            case _Text() as text, "citations_delta":
                # web search / fetch citations: https://docs.anthropic.com/en/docs/build-with-claude/tool-use/web-search-tool
                citation = delta.get("citation")
                if isinstance(citation, dict):
                    text.citations.append(citation)
            case _Thinking() as thinking, "thinking_delta":
                thought = delta.get("thinking")
                if thought:
                    thinking.parts.append(thought)
                    self.listener.thinking(thought)
            case _Thinking() as thinking, "signature_delta":
                thinking.signature += str(delta.get("signature") or "")
            case _Whole() as whole, _:
                whole.fold(delta)
            case _:
                pass  # delta types newer than this code

    def _close(self, index: int, block: _Open, *, complete: bool) -> None:
        param: JSON | None
        match block:
            case _Text(parts=parts, citations=citations):
                text = "".join(parts)
                param = {"type": "text", "text": text} if text else None
                if param is not None and citations:
                    param["citations"] = citations
            case _Thinking(parts=parts, signature=signature):
                thought = "".join(parts)
                param = {"type": "thinking", "thinking": thought, "signature": signature}
                if not signature:
                    param = None  # the API refuses an unsigned thinking block back
            case _ToolUse(id=tool_id, name=name) as tool:
                param = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
                if tool.over:
                    limit = self.max_tool_input_bytes
                    self.input_errors[tool_id] = too_big_message(tool.size, limit)
                else:
                    parsed = _parse_input("".join(tool.parts)) if complete else None
                    if isinstance(parsed, dict):
                        param["input"] = parsed
                    else:
                        self.unusable.append((tool_id, tool.size, complete))  # see finish()
            case _Whole() as whole:
                param = whole.closed()
        if param is not None:
            self.done.append((index, param))
            self.listener.block(param)

    def _usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            for key, value in usage.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self.usage[key] = value
                elif key in ("cache_creation", "server_tool_use") and isinstance(value, dict):
                    self.usage[key] = value  # the writes by TTL; web searches and fetches

    def finish(self) -> ModelResponse:
        """The response so far; blocks still open are closed as cut off (see the class doc)."""
        for index, block in sorted(self.open.items()):
            self._close(index, block, complete=False)
        self.open.clear()
        for tool_id, size, complete in self.unusable:  # the stop reason comes after the blocks
            cut = not complete or self.stop_reason in CUT_OFF_REASONS
            message = cut_off_message(self.stop_reason) if cut else not_json_message(size)
            self.input_errors[tool_id] = message
        self.done.sort(key=lambda pair: pair[0])
        usage = Usage.from_api(self.usage, self.cache_ttl)
        content = tuple(block for _, block in self.done)
        return ModelResponse(
            content, self.stop_reason, usage, self.stop_details, dict(self.input_errors)
        )


def _parse_input(text: str) -> object:
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return None


# --- the client ---------------------------------------------------------------------------------


class AnthropicClient:
    """Streams raw events inside ``async with``: cancelling the task closes the HTTP stream.

    SDK retries (connection errors, timeouts before the headers, 408/409/429/5xx, obeying
    ``x-should-retry``) stay on, at most ``MAX_RETRIES``, each announced by a notice. During the
    stream, no event for ``stream_idle_seconds`` ends the attempt as ``timeout`` (retryable).
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        *,
        max_tool_input_bytes: int = 1_048_576,
        stream_idle_seconds: float = 60.0,
        cache_ttl: CacheTtl = "5m",
    ) -> None:
        install_retry_notices()
        self.cache_ttl = cache_ttl
        has_env_key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        # Without any credential, every call fails at once with an ``auth`` error that says
        # which variable to set (never retried: no network call is made), not at start.
        self.has_key = bool(api_key or has_env_key)
        key = api_key or (None if has_env_key else "missing-api-key")
        self.max_tool_input_bytes = max_tool_input_bytes
        self.idle = stream_idle_seconds
        # The transport's read timeout is a little longer than the idle check below, so
        # mid-stream the clearer message wins; before the headers it bounds each attempt.
        timeout = client_timeout(stream_idle_seconds + 5)
        self.client = anthropic.AsyncAnthropic(
            base_url=base_url,
            api_key=key,
            max_retries=MAX_RETRIES,
            timeout=timeout,
            http_client=http_client(timeout),
        )

    async def stream(
        self, request: ModelRequest, listener: StreamListener, spec: ModelSpec
    ) -> ModelResponse:
        if not self.has_key:
            raise ProviderError("auth", NO_KEY_MESSAGE, retryable=False)
        acc = StreamAccumulator(listener, self.max_tool_input_bytes, self.cache_ttl)

        def announce(wait: float) -> None:
            listener.notice(f"Model API busy or unreachable: retrying in {wait:.1f} s")

        try:
            with on_retry(announce):
                params = api_params(request, spec, self.cache_ttl)
                headers = beta_headers(params["tools"])
                if headers:
                    params["extra_headers"] = headers
                async with open_events(self.client, params) as events:
                    await self._read(events, acc)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            raise classify(err) from err
        if not acc.stopped:
            raise ProviderError(
                "connection", "The model API stream ended before the message was complete."
            )
        return acc.finish()

    async def _read(self, events: Any, acc: StreamAccumulator) -> None:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.idle) as idle:
                pushed = loop.time()
                async for sse in events:
                    if acc.events % YIELD_EVERY == 0:
                        # Events that arrived in one read are handled back to back; let the
                        # rest of the server answer in between.
                        await asyncio.sleep(0)
                    now = loop.time()
                    if now - pushed > RESCHEDULE_EVERY:
                        idle.reschedule(now + self.idle)
                        pushed = now
                    match sse.event:
                        case "error":
                            raise _stream_error(sse.data)
                        case "ping" | None:
                            continue
                        case _:
                            if sse.data:
                                acc.feed(json.loads(sse.data))
        except TimeoutError as err:
            raise ProviderError(
                "timeout",
                f"No data from the model API for {self.idle:g} s: the stream was abandoned.",
            ) from err

    async def count_tokens(self, request: ModelRequest, spec: ModelSpec) -> int:
        """``client.messages.count_tokens`` with the request's parameters minus those the
        endpoint does not take (docs: "Token counting", ``POST /v1/messages/count_tokens``)."""
        if not self.has_key:
            raise ProviderError("auth", NO_KEY_MESSAGE, retryable=False)
        params = count_params(request, spec)
        headers = beta_headers(params.get("tools", []))
        if headers:
            params["extra_headers"] = headers
        try:
            counted = await self.client.messages.count_tokens(**params)
        except (anthropic.APIError, httpx2.HTTPError) as err:
            raise classify(err) from err
        return int(counted.input_tokens)

    async def list_models(self, refresh: bool = False) -> list[ModelInfo]:
        if not self.has_key:
            raise ProviderError("auth", NO_KEY_MESSAGE, retryable=False)
        try:
            page = await self.client.models.list(limit=100)
        except (anthropic.APIError, httpx2.HTTPError) as err:
            raise classify(err) from err
        return [model_info(m) for m in page.data]


def _stream_error(data: str) -> ProviderError:
    """An ``event: error`` in the middle of a stream (overloaded_error, api_error, ...)."""
    try:
        body = json.loads(data)
    except ValueError:
        return ProviderError("server", f"The model API reported an error mid-stream: {data[:200]}")
    return error_from_body(body, "mid-stream")


def model_info(m: anthropic.types.ModelInfo) -> ModelInfo:
    """What ``/v1/models`` says of a model, in catalog terms."""
    thinking: ThinkingForm | None = None
    thinking_off: ThinkingOff | None = None
    capabilities = m.capabilities
    if capabilities is not None:
        types = capabilities.thinking.types
        if not capabilities.thinking.supported:
            thinking = "none"
        elif types.adaptive.supported:
            thinking = "adaptive"
        elif types.enabled.supported:
            thinking = "budget"
        if types.disabled.supported:
            thinking_off = "disabled"
        elif types.between_tools.supported:
            thinking_off = "between_tools"
        else:
            thinking_off = "always_on"
    return ModelInfo(
        m.id,
        m.display_name,
        context_window=m.max_input_tokens,
        max_output=m.max_tokens,
        thinking=thinking,
        thinking_off=thinking_off,
    )


_CONFORMS: type[ModelClient] = AnthropicClient  # what provider.AnthropicProvider loads by name
