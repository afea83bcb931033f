"""The Anthropic Messages API through the official SDK (imported lazily: it is slow to load)."""

from __future__ import annotations

import contextvars
import logging
import os
from typing import Any

import anthropic
import httpx2

from .protocol import ErrorKind
from .usage import Usage
from .provider import (
    JSON,
    ModelInfo,
    ModelRequest,
    ModelResponse,
    ProviderError,
    StreamListener,
    api_params,
)

_ERROR_TYPES: dict[str, ErrorKind] = {
    "authentication_error": "auth",
    "permission_error": "auth",
    "rate_limit_error": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server",
    "timeout_error": "timeout",
    "invalid_request_error": "invalid_request",
    "request_too_large": "invalid_request",
}


def _error_body(err: anthropic.APIStatusError) -> dict[str, Any]:
    body = err.body
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


def classify(err: BaseException) -> ProviderError:
    """Map an SDK or transport exception to a ProviderError with a kind a user can act on."""
    match err:
        case ProviderError():
            return err
        case anthropic.APITimeoutError():
            return ProviderError("timeout", "The model API did not answer in time.")
        case anthropic.APIConnectionError() | httpx2.TransportError():
            return ProviderError("connection", f"Lost the connection to the model API: {err}")
        case anthropic.APIStatusError():
            body = _error_body(err)
            message = str(body.get("message") or err)
            where = "mid-stream" if err.status_code == 200 else f"HTTP {err.status_code}"
            text = f"{message} ({where})"
            if "prompt is too long" in message.lower():
                return ProviderError("context_too_long", text)
            kind = _ERROR_TYPES.get(str(body.get("type", ""))) or _kind_of_status(err.status_code)
            return ProviderError(kind, text)
        case _:
            return ProviderError("internal", f"{type(err).__name__}: {err}")


_retry_listener: contextvars.ContextVar[StreamListener | None] = contextvars.ContextVar(
    "tiller_retry_listener", default=None
)


class _RetryNoticeHandler(logging.Handler):
    """Turns the SDK's "Retrying request to %s in %f seconds" log into a user notice."""

    def emit(self, record: logging.LogRecord) -> None:
        listener = _retry_listener.get()
        if listener is None or not str(record.msg).startswith("Retrying request"):
            return
        args = record.args if isinstance(record.args, tuple) else ()
        wait = args[1] if len(args) > 1 and isinstance(args[1], int | float) else 0.0
        listener.notice(f"Model API busy or unreachable: retrying in {wait:.1f} s")


def _install_retry_notices() -> None:
    sdk_log = logging.getLogger("anthropic._base_client")
    if not any(isinstance(h, _RetryNoticeHandler) for h in sdk_log.handlers):
        sdk_log.addHandler(_RetryNoticeHandler(level=logging.INFO))
        sdk_log.setLevel(logging.INFO)
        sdk_log.propagate = False


def block_param(block: Any) -> JSON | None:
    """An SDK content block in the shape the API accepts back in ``messages``."""
    match block.type:
        case "text":
            return {"type": "text", "text": block.text}
        case "thinking":
            return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
        case "redacted_thinking":
            return {"type": "redacted_thinking", "data": block.data}
        case "tool_use":
            return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
        case _:
            return None


class AnthropicClient:
    """Streams with ``AsyncAnthropic().messages.stream`` inside ``async with``: cancelling the
    task closes the HTTP stream. SDK retries (connection errors, 429, 5xx) stay on."""

    def __init__(self, base_url: str | None, api_key: str | None) -> None:
        _install_retry_notices()
        has_env_key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        # Without any credential, fail at the first call with an ``auth`` error, not at start.
        key = api_key or (None if has_env_key else "missing-api-key")
        self.client = anthropic.AsyncAnthropic(base_url=base_url, api_key=key)

    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse:
        token = _retry_listener.set(listener)
        try:
            async with self.client.messages.stream(**api_params(request)) as stream:
                async for event in stream:
                    match event.type:
                        case "text":
                            listener.text(event.text)
                        case "thinking":
                            listener.thinking(event.thinking)
                        case "content_block_stop":
                            param = block_param(event.content_block)
                            if param is not None:
                                listener.block(param)
                        case _:
                            pass
                final = await stream.get_final_message()
        except (anthropic.APIError, httpx2.HTTPError) as err:
            raise classify(err) from err
        finally:
            _retry_listener.reset(token)
        content = tuple(p for p in (block_param(b) for b in final.content) if p is not None)
        u = final.usage
        usage = Usage(
            u.input_tokens,
            u.output_tokens,
            u.cache_read_input_tokens or 0,
            u.cache_creation_input_tokens or 0,
        )
        return ModelResponse(content, final.stop_reason, usage)

    async def list_models(self) -> list[ModelInfo]:
        try:
            page = await self.client.models.list(limit=100)
        except (anthropic.APIError, httpx2.HTTPError) as err:
            raise classify(err) from err
        return [ModelInfo(m.id, m.display_name) for m in page.data]
