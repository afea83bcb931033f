"""Token usage of a model call, a turn or a session: a value that adds up (the ledger's unit)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from tiller.jsontypes import JSON

CacheTtl = Literal["5m", "1h"]
"""How long a prompt-cache entry lives (``cache_control.ttl``); writes cost more for 1h."""
CACHE_TTLS: Final[tuple[CacheTtl, ...]] = get_args(CacheTtl)


@dataclass(frozen=True)
class Usage:
    """Tokens as the API splits them; ``cost_usd`` is None when a price is unknown.

    ``cache_write_1h_tokens`` is the part of ``cache_write_tokens`` written with the 1-hour TTL
    (priced higher); the rest was written for 5 minutes. ``web_search_requests`` and
    ``web_fetch_requests`` count the server tool calls the API ran (``usage.server_tool_use``);
    searches are priced per request, fetches only by their tokens (server_tools.py)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    cache_write_1h_tokens: int = 0
    web_search_requests: int = 0
    web_fetch_requests: int = 0

    @staticmethod
    def from_api(usage: Mapping[str, Any], ttl: CacheTtl = "5m") -> Usage:
        """The Messages API's ``usage`` object. Its ``cache_creation`` splits the writes by
        TTL; where it is missing (proxies, older APIs), every write counts at ``ttl``, the TTL
        the request's breakpoints asked for."""

        def count(source: Mapping[str, Any], key: str, default: int = 0) -> int:
            value = source.get(key, default)
            return value if isinstance(value, int) and not isinstance(value, bool) else default

        writes = count(usage, "cache_creation_input_tokens")
        split = usage.get("cache_creation")
        if isinstance(split, Mapping) and "ephemeral_1h_input_tokens" in split:
            writes_1h = min(writes, count(split, "ephemeral_1h_input_tokens"))
        else:
            writes_1h = writes if ttl == "1h" else 0
        server = usage.get("server_tool_use")
        server = server if isinstance(server, Mapping) else {}
        return Usage(
            count(usage, "input_tokens"),
            count(usage, "output_tokens"),
            count(usage, "cache_read_input_tokens"),
            writes,
            cache_write_1h_tokens=writes_1h,
            web_search_requests=count(server, "web_search_requests"),
            web_fetch_requests=count(server, "web_fetch_requests"),
        )

    @property
    def total_input(self) -> int:
        """Everything the request read: uncached input plus cache reads and cache writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            cost,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            self.web_search_requests + other.web_search_requests,
            self.web_fetch_requests + other.web_fetch_requests,
        )

    def to_wire(self) -> JSON:
        """``Usage`` on the wire; the server tool counts only when there were any."""
        wire: JSON = {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "costUsd": None if self.cost_usd is None else round(self.cost_usd, 6),
        }
        if self.web_search_requests:
            wire["webSearchRequests"] = self.web_search_requests
        if self.web_fetch_requests:
            wire["webFetchRequests"] = self.web_fetch_requests
        return wire

    @staticmethod
    def from_wire(data: JSON) -> Usage:
        cost = data.get("costUsd")
        return Usage(
            int(data.get("inputTokens", 0)),
            int(data.get("outputTokens", 0)),
            int(data.get("cacheReadTokens", 0)),
            int(data.get("cacheWriteTokens", 0)),
            float(cost) if isinstance(cost, int | float) else None,
            web_search_requests=int(data.get("webSearchRequests", 0)),
            web_fetch_requests=int(data.get("webFetchRequests", 0)),
        )


NO_USAGE = Usage()


@dataclass(frozen=True)
class ContextUse:
    """How full the model's context was after a step: what the step read plus what it wrote
    (both are in the next request)."""

    used_tokens: int
    window_tokens: int

    @staticmethod
    def after(step: Usage, window_tokens: int) -> ContextUse:
        return ContextUse(step.total_input + step.output_tokens, window_tokens)

    def to_wire(self) -> JSON:
        return {"usedTokens": self.used_tokens, "windowTokens": self.window_tokens}


@dataclass(frozen=True)
class Ledger:
    """A session's running totals (a value: ``record`` returns the next one).

    ``total`` is every model call of the session, summaries included; ``context`` is the last
    step's ``ContextUse`` (None before the first step)."""

    total: Usage = NO_USAGE
    context: ContextUse | None = None

    def record(self, usage: Usage, context: ContextUse | None) -> Ledger:
        return Ledger(self.total + usage, context or self.context)
