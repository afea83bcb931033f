"""Where model responses come from: the Anthropic Messages API, or a JSON script.

A provider streams one response. Deltas and completed blocks go to a ``StreamListener`` as
they arrive, so whoever is listening keeps what was shown even if the stream dies half-way.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import TillerError
from .history import Message
from .protocol import ErrorKind, Thinking
from .usage import NO_USAGE, Usage

if TYPE_CHECKING:
    from .anthropic_provider import AnthropicClient

JSON = dict[str, Any]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelRequest:
    model: str
    system: str
    tools: tuple[JSON, ...]
    messages: tuple[Message, ...]
    max_tokens: int
    thinking: Thinking


@dataclass(frozen=True)
class ModelResponse:
    """One finished response. ``usage`` has no cost yet (the ledger prices it);
    ``stop_details`` is the API's object as sent (e.g. a refusal's category/explanation);
    ``input_errors`` maps a tool_use id to why its input cannot be used (e.g. over
    ``maxToolInputBytes``): the loop answers such a call with that error, never runs it."""

    content: tuple[JSON, ...]
    stop_reason: str | None
    usage: Usage = NO_USAGE
    stop_details: JSON | None = None
    input_errors: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelInfo:
    id: str
    display_name: str | None = None


class StreamListener(Protocol):
    def text(self, delta: str) -> None: ...
    def thinking(self, delta: str) -> None: ...
    def block(self, block: JSON) -> None:
        """A content block is complete (in API param shape)."""
        ...

    def notice(self, text: str) -> None: ...


class Provider(Protocol):
    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse: ...
    async def list_models(self) -> list[ModelInfo]: ...


class ProviderError(TillerError):
    """A failed model call, classified into PROTOCOL's ``error.kind``."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message, code=kind)
        self.kind: ErrorKind = kind

    @property
    def retryable(self) -> bool:
        return self.kind in ("rate_limit", "overloaded", "server", "connection", "timeout")


# --- request shaping -----------------------------------------------------------------------

EPHEMERAL: JSON = {"type": "ephemeral"}


def api_params(request: ModelRequest) -> JSON:
    """The Messages API parameters, with cache breakpoints on the stable prefix and the tail."""
    tools = [dict(t) for t in request.tools]
    if tools:
        tools[-1]["cache_control"] = EPHEMERAL
    messages = [m.to_api() for m in request.messages]
    if messages and messages[-1]["content"]:
        last = messages[-1]["content"][-1]
        if last.get("type") in ("text", "tool_result", "tool_use"):
            last["cache_control"] = EPHEMERAL
    params: JSON = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "system": [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}],
        "messages": messages,
        "tools": tools,
    }
    if request.thinking.enabled:
        params["thinking"] = {"type": "enabled", "budget_tokens": request.thinking.budget_tokens}
    return params


# --- the real thing -------------------------------------------------------------------------


@dataclass
class AnthropicProvider:
    """The Messages API. The SDK takes seconds to import, so it loads in a daemon thread on
    first use (or ``warm_up`` right after start) and never delays ``initialize`` or ``exit``."""

    base_url: str | None = None
    api_key: str | None = None
    _loading: asyncio.Future[AnthropicClient] | None = None

    async def warm_up(self) -> AnthropicClient:
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        # shield: an interrupt cancels the waiting turn, never the shared load.
        return await asyncio.shield(self._loading)

    async def _load(self) -> AnthropicClient:
        module = await _import_in_daemon_thread("tiller.anthropic_provider")
        client: AnthropicClient = module.AnthropicClient(self.base_url, self.api_key)
        # The SDK brings ~200k long-lived objects; keep them out of every later GC pass
        # (a full collection drops from ~150 ms to ~1 ms).
        gc.freeze()
        return client

    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse:
        return await (await self.warm_up()).stream(request, listener)

    async def list_models(self) -> list[ModelInfo]:
        return await (await self.warm_up()).list_models()


async def _import_in_daemon_thread(name: str) -> Any:
    """Import a module off the event loop, in a thread that never holds up process exit."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def work() -> None:
        try:
            module = importlib.import_module(name)
        except BaseException as err:
            loop.call_soon_threadsafe(settle, None, err)
        else:
            loop.call_soon_threadsafe(settle, module, None)

    threading.Thread(target=work, name=f"import-{name}", daemon=True).start()
    return await done


# --- scripted responses (offline demo, in-process tests) ------------------------------------


@dataclass
class ScriptedProvider:
    """Plays a JSON script ``{"responses": [{"content": [...], "stop_reason"?}, ...]}``.

    ``script`` is a path, or ``"demo"`` for the bundled demo. Text streams in small chunks
    (``chunkDelay`` seconds apart, default 0.01) so a client sees it arrive.
    """

    responses: Sequence[JSON]
    model_ids: tuple[str, ...] = ()
    played: int = 0

    @staticmethod
    def load(script: str) -> ScriptedProvider:
        if script == "demo":
            text = resources.files("tiller.demo").joinpath("demo.json").read_text("utf-8")
        else:
            text = Path(script).read_text("utf-8")
        data = json.loads(text)
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

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(m) for m in self.model_ids]


async def _play(text: str, sink: Callable[[str], None], delay: float, size: int = 12) -> None:
    for i in range(0, len(text), size):
        sink(text[i : i + size])
        await asyncio.sleep(delay)
