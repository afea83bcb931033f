"""Where model responses come from: the Anthropic Messages API, or a JSON script.

A provider streams one response. Deltas and completed blocks go to a ``StreamListener`` as
they arrive, so whoever is listening keeps what was shown even if the stream dies half-way.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tiller import preload
from tiller.errors import TillerError
from tiller.hardening import forget_credentials
from tiller.jsontypes import JSON
from tiller.model.history import Message
from tiller.model.models import (
    DEFAULT_CATALOG,
    ApiModel,
    Catalog,
    ModelSpec,
    effective_max_tokens,
    thinking_params,
)
from tiller.model.usage import NO_USAGE, CacheTtl, Usage
from tiller.protocol import ErrorKind, Thinking

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelRequest:
    model: str
    system: str
    tools: tuple[JSON, ...]
    messages: tuple[Message, ...]
    max_tokens: int | None  # None: the model's max output
    thinking: Thinking
    server_tools: tuple[JSON, ...] = ()  # web search / fetch definitions (server_tools.py)


@dataclass(frozen=True)
class ModelResponse:
    """One finished response. ``usage`` has no cost yet (the ledger prices it);
    ``stop_details`` is the API's object as sent (e.g. a refusal's category/explanation);
    ``input_errors`` maps a tool_use id to why its input cannot be used (e.g. over
    ``maxToolInputBytes``): the loop answers such a call with that error, never runs it.

    Every tool_use block in ``content`` has a dict ``input`` (``{}`` where its input was
    unusable), so ``content`` is always valid to send back. A tool_use cut off by
    ``max_tokens`` / ``model_context_window_exceeded`` is in ``input_errors`` with a message
    that says so (see anthropic_provider.StreamAccumulator)."""

    content: tuple[JSON, ...]
    stop_reason: str | None
    usage: Usage = NO_USAGE
    stop_details: JSON | None = None
    input_errors: Mapping[str, str] = field(default_factory=dict)


ModelInfo = ApiModel  # what ``list_models`` returns: an id and whatever the API says of it


class StreamListener(Protocol):
    def text(self, delta: str) -> None: ...
    def thinking(self, delta: str) -> None: ...
    def block(self, block: JSON) -> None:
        """A content block is complete (in API param shape)."""
        ...

    def notice(self, text: str) -> None: ...


class CountUnsupported(TillerError):
    """The provider cannot count a prompt's tokens: callers treat the size as unknown."""


class Provider(Protocol):
    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse: ...
    async def count_tokens(self, request: ModelRequest) -> int:
        """The prompt's input tokens (``POST /v1/messages/count_tokens``); raises
        ``CountUnsupported`` when the provider cannot tell, ``ProviderError`` when it fails."""
        ...

    async def list_models(self, refresh: bool = False) -> list[ModelInfo]: ...
    def spec(self, model_id: str) -> ModelSpec:
        """The catalog's entry for ``model_id``, with what ``list_models`` learnt from the API."""
        ...


class ModelClient(Protocol):
    """A loaded API client (anthropic_provider.AnthropicClient, imported by name, lazily)."""

    async def stream(
        self, request: ModelRequest, listener: StreamListener, spec: ModelSpec
    ) -> ModelResponse: ...
    async def count_tokens(self, request: ModelRequest, spec: ModelSpec) -> int: ...
    async def list_models(self, refresh: bool = False) -> list[ModelInfo]: ...


RETRYABLE_KINDS: frozenset[ErrorKind] = frozenset(
    {"rate_limit", "overloaded", "server", "connection", "timeout"}
)


class ProviderError(TillerError):
    """A failed model call, classified into docs/protocol.md's ``error.kind``.

    ``retryable`` follows the kind unless the API said otherwise (``x-should-retry``).
    """

    def __init__(self, kind: ErrorKind, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message, code=kind)
        self.kind: ErrorKind = kind
        self.retryable: bool = kind in RETRYABLE_KINDS if retryable is None else retryable


# --- model lookup --------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownModel:
    info: ModelInfo


@dataclass(frozen=True)
class UnknownModel:
    message: str


@dataclass(frozen=True)
class Unverified:
    """The API's list was not available: the id may or may not exist."""

    reason: str


ModelLookup = KnownModel | UnknownModel | Unverified


def _is_alias_of(model_id: str, listed: str) -> bool:
    """``claude-sonnet-4-5`` (or ``...-latest``) names the listed ``claude-sonnet-4-5-20250929``."""
    base = model_id.removesuffix("-latest")
    rest = listed.removeprefix(base + "-")
    return rest != listed and len(rest) == 8 and rest.isdigit()


def _listed_as(listed: Sequence[ModelInfo], model_id: str) -> ModelInfo | None:
    return next((i for i in listed if i.id == model_id or _is_alias_of(model_id, i.id)), None)


async def lookup_model(provider: Provider, model_id: str) -> ModelLookup:
    """Whether the API knows ``model_id`` (for ``setModel``: refuse a typo at once)."""
    try:
        listed = await provider.list_models()
    except ProviderError as err:
        return Unverified(f"could not list models ({err.kind}): {err.message}")
    if not listed:
        return Unverified("the provider lists no models")
    known = _listed_as(listed, model_id)
    if known is None:  # listed before the model was offered? ask once more before refusing
        with contextlib.suppress(ProviderError):
            listed = await provider.list_models(refresh=True) or listed
            known = _listed_as(listed, model_id)
    if known is not None:
        return KnownModel(known)
    names = ", ".join(sorted(m.id for m in listed)[:20])
    return UnknownModel(f"unknown model {model_id!r}: the API offers {names}")


# --- request shaping -----------------------------------------------------------------------

EPHEMERAL: JSON = {"type": "ephemeral"}  # the 5-minute TTL (the API's default)
EPHEMERAL_1H: JSON = {"type": "ephemeral", "ttl": "1h"}
CACHE_LOOKBACK_BLOCKS = 20
"""The API looks for an earlier cache entry at most this many blocks before a breakpoint."""
CACHEABLE = frozenset({"text", "tool_result", "tool_use", "image", "document"})


def api_params(
    request: ModelRequest, spec: ModelSpec | None = None, cache_ttl: CacheTtl = "5m"
) -> JSON:
    """The Messages API parameters for ``request`` on the model ``spec`` describes.

    Thinking in the form the model takes (models.thinking_params); ``max_tokens`` defaults to
    the model's max output; never a sampling parameter. Cache breakpoints: see
    ``cache_breakpoints``, all with the ``cacheTtl`` setting's TTL. Server tools come after
    the client's, so the tools breakpoint (on the last one) covers both; deferred tools
    after them all.

    The message blocks are the history's own, not copies (copying them all made each step's
    cost grow with the history): read them, never change them. A block given a breakpoint is
    a new dict. The SDK copies the parameters before it sends them.
    """
    spec = spec or DEFAULT_CATALOG.resolve(request.model)
    marker = EPHEMERAL_1H if cache_ttl == "1h" else EPHEMERAL
    max_tokens = effective_max_tokens(spec, request.max_tokens)
    # Deferred tools (MCP, ``defer_loading``) last: they are not part of the cached prefix
    # (tool search docs), so the tools breakpoint goes on the last tool that is.
    loaded = [
        dict(t) for t in (*request.tools, *request.server_tools) if not t.get("defer_loading")
    ]
    deferred = [dict(t) for t in request.tools if t.get("defer_loading")]
    if loaded:
        loaded[-1]["cache_control"] = marker
    tools = [*loaded, *deferred]
    params: JSON = {
        "model": request.model,
        "max_tokens": max_tokens,
        "system": [{"type": "text", "text": request.system, "cache_control": marker}],
        "messages": cache_breakpoints(
            [{"role": m.role, "content": list(m.content)} for m in request.messages], marker
        ),
        "tools": tools,
    }
    params.update(thinking_params(spec, request.thinking, max_tokens))
    return params


COUNT_PARAMS = ("model", "system", "messages", "tools", "thinking", "tool_choice")
"""What ``POST /v1/messages/count_tokens`` takes of a Messages request (the docs' "Token
counting" page and API reference: no ``max_tokens``, ``stream``, ``metadata``, ...)."""


def count_params(request: ModelRequest, spec: ModelSpec | None = None) -> JSON:
    """The count_tokens parameters for ``request``: those of ``api_params`` the endpoint takes
    (cache_control markers are accepted and do not change the count)."""
    params = api_params(request, spec)
    return {k: v for k, v in params.items() if k in COUNT_PARAMS}


def cache_breakpoints(messages: list[JSON], marker: JSON = EPHEMERAL) -> list[JSON]:
    """Mark the tail, and the previous request's tail when it is too far back to be found.

    With the tools and system breakpoints that makes at most 4 (the API's limit). Each step
    of a turn ends with a user message; its last block was the tail breakpoint of the previous
    request, so its prefix is in the cache. The API looks back only ~20 blocks from a
    breakpoint for an earlier entry, so when a step added more blocks than that (many tool
    calls and results), a breakpoint on that earlier tail keeps reading it from cache.
    """
    if not messages or not messages[-1]["content"]:
        return messages
    _mark_last(messages[-1]["content"], marker)
    users = (i for i in range(len(messages) - 2, -1, -1) if messages[i]["role"] == "user")
    earlier = next((i for i in users if messages[i]["content"]), None)  # from the end: cheap
    if earlier is not None:
        since = sum(len(m["content"]) for m in messages[earlier + 1 :])
        if since >= CACHE_LOOKBACK_BLOCKS:
            _mark_last(messages[earlier]["content"], marker)
    return messages


def _mark_last(content: list[JSON], marker: JSON) -> None:
    """Put the breakpoint on the last block, as a new dict (the block may be shared)."""
    block = content[-1]
    if block.get("type") in CACHEABLE:
        content[-1] = {**block, "cache_control": marker}


# --- the real thing -------------------------------------------------------------------------


@dataclass
class AnthropicProvider:
    """The Messages API. The SDK takes seconds to import, so it loads in a daemon thread on
    first use (or ``warm_up`` right after start) and never delays ``initialize`` or ``exit``."""

    base_url: str | None = None
    api_key: str | None = None
    max_tool_input_bytes: int = 1_048_576
    stream_idle_seconds: float = 60.0
    cache_ttl: CacheTtl = "5m"
    catalog: Catalog = DEFAULT_CATALOG
    _loading: asyncio.Future[ModelClient] | None = None
    _listed: tuple[float, list[ModelInfo]] | None = None

    async def warm_up(self) -> ModelClient:
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        # shield: an interrupt cancels the waiting turn, never the shared load.
        return await asyncio.shield(self._loading)

    async def _load(self) -> ModelClient:
        module = await _import_in_daemon_thread("tiller.model.anthropic_provider")
        client: ModelClient = module.AnthropicClient(
            self.base_url,
            self.api_key,
            max_tool_input_bytes=self.max_tool_input_bytes,
            stream_idle_seconds=self.stream_idle_seconds,
            cache_ttl=self.cache_ttl,
        )
        # The client holds its own copy of a key from the environment: commands that find
        # this process must not find it there (hardening.py).
        forget_credentials()
        # The SDK brings ~200k long-lived objects; keep them out of every later GC pass
        # (a full collection drops from ~150 ms to ~1 ms).
        gc.freeze()
        return client

    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse:
        client = await self.warm_up()
        return await client.stream(request, listener, self.spec(request.model))

    async def count_tokens(self, request: ModelRequest) -> int:
        client = await self.warm_up()
        return await client.count_tokens(request, self.spec(request.model))

    async def list_models(self, refresh: bool = False) -> list[ModelInfo]:
        """The API's models, cached for MODELS_TTL seconds (``refresh``: asked again); what
        they say joins the catalog."""
        now = time.monotonic()
        if not refresh and self._listed is not None and now - self._listed[0] < MODELS_TTL:
            return self._listed[1]
        models = await (await self.warm_up()).list_models()
        self._listed = (now, models)
        self.catalog = self.catalog.with_api(models)
        return models

    def spec(self, model_id: str) -> ModelSpec:
        return self.catalog.resolve(model_id)


MODELS_TTL = 300.0


async def _import_in_daemon_thread(name: str) -> Any:
    """Import a module off the event loop, in a thread that never holds up process exit
    (tiller.preload: started once, every caller awaits the same import)."""
    return await preload.imported(name)


# --- scripted responses (offline demo, in-process tests) ------------------------------------


@dataclass
class ScriptedProvider:
    """Plays a JSON script ``{"responses": [{"content": [...], "stop_reason"?}, ...]}``.

    ``script`` is a path (the bundled demo is ``DemoProvider``). Text streams in small chunks
    (``chunkDelay`` seconds apart, default 0.01) so a client sees it arrive.
    """

    responses: Sequence[JSON]
    model_ids: tuple[str, ...] = ()
    played: int = 0

    @staticmethod
    def load(script: str) -> ScriptedProvider:
        data = json.loads(Path(script).read_text("utf-8"))
        responses = data["responses"] if isinstance(data, dict) else data
        if not isinstance(responses, list):
            raise TillerError(f"script {script!r}: expected a list of responses")
        return ScriptedProvider(responses)

    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse:
        if self.played < len(self.responses):
            spec = self.responses[self.played]
        else:
            spec = {"content": [{"type": "text", "text": "(end of script)"}]}
        self.played += 1
        delay = float(spec.get("chunkDelay", 0.01))
        content: list[JSON] = []
        for n, block in enumerate(spec.get("content", [])):
            block = dict(block)
            match block.get("type"):
                case "text":
                    await _play(block["text"], listener.text, delay)
                case "thinking":
                    await _play(block["thinking"], listener.thinking, delay)
                    block.setdefault("signature", "scripted")
                case "tool_use":
                    block.setdefault("id", f"toolu_script_{self.played}_{n}")
                    block.setdefault("input", {})
                    await asyncio.sleep(delay)
            listener.block(block)
            content.append(block)
        has_tools = any(b.get("type") == "tool_use" for b in content)
        stop = spec.get("stop_reason") or ("tool_use" if has_tools else "end_turn")
        return ModelResponse(tuple(content), stop)

    async def count_tokens(self, request: ModelRequest) -> int:
        raise CountUnsupported("a scripted provider does not count tokens")

    async def list_models(self, refresh: bool = False) -> list[ModelInfo]:
        return [ModelInfo(m) for m in self.model_ids]

    def spec(self, model_id: str) -> ModelSpec:
        return DEFAULT_CATALOG.resolve(model_id)


async def _play(text: str, sink: Callable[[str], None], delay: float, size: int = 12) -> None:
    for i in range(0, len(text), size):
        sink(text[i : i + size])
        await asyncio.sleep(delay)
