"""Every place Tiller leans on the ``anthropic`` SDK beyond its documented calls, in one file.

- The SDK says it will retry only in a log record ("Retrying request to %s in %f seconds",
  logger ``anthropic._base_client``): ``RetryNotices`` turns that record into a callback.
- The raw Server-Sent Events of a streamed response: ``open_events`` uses
  ``with_streaming_response`` and ``AsyncStream.raw_events`` so nothing re-parses or
  validates each event (Tiller accumulates them itself, linearly).
- ``client_timeout`` builds the SDK client's ``httpx2.Timeout``.

tests/unit/test_provider_stream.py checks each of these against the installed SDK and fails
loudly when an upgrade changes them.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import anthropic
import httpx2

SDK_LOGGER: Final = "anthropic._base_client"
RETRY_LOG_PREFIX: Final = "Retrying request to"
CONNECT_SECONDS: Final = 10.0
WRITE_SECONDS: Final = 60.0

RetryCallback = Callable[[float], None]
"""Called with the seconds the SDK is about to wait before its next attempt."""

_on_retry: contextvars.ContextVar[RetryCallback | None] = contextvars.ContextVar(
    "tiller_on_retry", default=None
)


def retry_wait_of(record: logging.LogRecord) -> float | None:
    """The wait announced by the SDK's retry log record, or None for any other record."""
    if not str(record.msg).startswith(RETRY_LOG_PREFIX):
        return None
    args = record.args if isinstance(record.args, tuple) else ()
    wait = args[1] if len(args) > 1 else None
    return float(wait) if isinstance(wait, int | float) else 0.0


class _RetryHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        callback = _on_retry.get()
        wait = retry_wait_of(record)
        if callback is not None and wait is not None:
            callback(wait)


def install_retry_notices() -> None:
    """Route the SDK's retry log records to the callback of the running request (idempotent)."""
    sdk_log = logging.getLogger(SDK_LOGGER)
    if not any(isinstance(h, _RetryHandler) for h in sdk_log.handlers):
        sdk_log.addHandler(_RetryHandler(level=logging.INFO))
        sdk_log.setLevel(logging.INFO)
        sdk_log.propagate = False


class on_retry:
    """``with on_retry(callback): ...``: SDK retries inside call ``callback(wait_seconds)``."""

    def __init__(self, callback: RetryCallback) -> None:
        self.callback = callback
        self.token: contextvars.Token[RetryCallback | None] | None = None

    def __enter__(self) -> None:
        self.token = _on_retry.set(self.callback)

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _on_retry.reset(self.token)


def client_timeout(stream_idle_seconds: float) -> httpx2.Timeout:
    """Connect in 10 s; no byte for ``stream_idle_seconds`` (a hang before the headers, or
    between events) ends the attempt, which the SDK retries (``max_retries``) like a drop."""
    return httpx2.Timeout(
        connect=CONNECT_SECONDS,
        read=stream_idle_seconds,
        write=WRITE_SECONDS,
        pool=CONNECT_SECONDS,
    )


TLS_ENV: Final = ("SSL_CERT_FILE", "SSL_CERT_DIR")  # read when a TLS context is made


def tls_settings() -> tuple[str | None, ...]:
    """What a TLS context made now reads from the environment (httpx2's `create_ssl_context`
    takes the certificates named by ``SSL_CERT_FILE``/``SSL_CERT_DIR``, else the system's)."""
    return tuple(os.environ.get(name) for name in TLS_ENV)


@functools.cache
def tls_context(settings: tuple[str | None, ...] = ()) -> ssl.SSLContext:
    """This process's one TLS context for ``settings`` (`tls_settings`, read when it is made),
    as the SDK's HTTP client makes its own. Keyed by them: a warm template's context serves
    every fork whose client names the same certificates (the same files, read once), and a
    fork that names others gets one made in its own environment."""
    del settings  # the cache key: create_ssl_context reads the same environment now
    return httpx2.create_ssl_context()


def http_client(timeout: httpx2.Timeout) -> httpx2.AsyncClient:
    """The SDK's own HTTP client, with `tls_context`: made once per process and certificate
    settings, and in the warm template once for every server it forks (loading the
    certificates was 20-50 ms of each fork's way to its first model request)."""
    return anthropic.DefaultAsyncHttpxClient(verify=tls_context(tls_settings()), timeout=timeout)


class RawEvent(Protocol):
    """One Server-Sent Event as sent: its name and its data text (JSON, not yet parsed)."""

    @property
    def event(self) -> str | None: ...
    @property
    def data(self) -> str: ...


@asynccontextmanager
async def open_events(
    client: anthropic.AsyncAnthropic, params: dict[str, Any]
) -> AsyncIterator[AsyncIterator[RawEvent]]:
    """POST /v1/messages with ``stream: true`` (SDK retries apply until the headers arrive)
    and yield its raw events; leaving the block closes the HTTP stream."""
    async with client.messages.with_streaming_response.create(**params, stream=True) as response:
        events: AsyncIterator[RawEvent] = anthropic.AsyncStream.raw_events(response.http_response)
        yield events
