"""Web search and web fetch: tools the Messages API runs itself (server tools).

The server only declares them (``ServerTools.definitions``); the API runs each call inside
the response and streams it back as a ``server_tool_use`` block followed by its
``web_search_tool_result`` / ``web_fetch_tool_result`` block. Both are part of the assistant
message and go back in the history unchanged. The pure helpers here turn those blocks into
what the live tool log shows (``server_call``, ``server_result``).

Docs (read 2026-11):
- web search: https://docs.anthropic.com/en/docs/build-with-claude/tool-use/web-search-tool
  (type ``web_search_20250305``; ``allowed_domains`` xor ``blocked_domains``; ``max_uses``;
  $10 per 1,000 searches on top of tokens, counted in ``usage.server_tool_use``)
- web fetch: https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-fetch-tool
  (type ``web_fetch_20250910``, beta header ``web-fetch-2025-09-10``; no charge beyond the
  tokens of the fetched content)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tiller.jsontypes import JSON
from tiller.model.web_domains import allowed_entry, host_of
from tiller.protocol import Mode

WEB_SEARCH_TYPE: Final = "web_search_20250305"
WEB_FETCH_TYPE: Final = "web_fetch_20250910"
WEB_FETCH_BETA: Final = "web-fetch-2025-09-10"
TOOL_SEARCH_BETA: Final = "advanced-tool-use-2025-11-20"  # defer_loading, tool_reference
SEARCH_USD_PER_REQUEST: Final = 10.0 / 1000  # web search pricing: $10 per 1,000 searches

RESULT_TYPES: Final = frozenset({"web_search_tool_result", "web_fetch_tool_result"})
SERVER_BLOCK_TYPES: Final = frozenset({"server_tool_use", *RESULT_TYPES})
MAX_LISTED_RESULTS: Final = 10


WEB_TOOL_KEYS: Final = frozenset(
    {"enabled", "allowedDomains", "blockedDomains", "maxUses", "allowInPlanMode"}
)
MAX_WEB_TOOL_USES: Final = 1000


@dataclass(frozen=True)
class WebToolSettings:
    """One server tool's setting (``webSearch`` / ``webFetch``); off unless ``enabled``.

    A field left ``None`` (or a domain list left empty) was not said: in a layer of settings
    (``over``) the layer below decides it; in the end ``None`` is off."""

    enabled: bool | None = None
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    max_uses: int | None = None
    allow_in_plan_mode: bool | None = None

    def over(self, lower: WebToolSettings) -> WebToolSettings:
        """This layer over ``lower``: each key said here wins, the others are ``lower``'s. The
        two domain lists are one key (the API takes one of them): either one said here
        replaces both of ``lower``'s."""
        own_domains = bool(self.allowed_domains or self.blocked_domains)
        domains = self if own_domains else lower
        return WebToolSettings(
            lower.enabled if self.enabled is None else self.enabled,
            domains.allowed_domains,
            domains.blocked_domains,
            lower.max_uses if self.max_uses is None else self.max_uses,
            lower.allow_in_plan_mode
            if self.allow_in_plan_mode is None
            else self.allow_in_plan_mode,
        )

    def definition(self, kind: str, name: str) -> JSON:
        tool: JSON = {"type": kind, "name": name}
        if self.allowed_domains:
            tool["allowed_domains"] = list(self.allowed_domains)
        if self.blocked_domains:
            tool["blocked_domains"] = list(self.blocked_domains)
        if self.max_uses is not None:
            tool["max_uses"] = self.max_uses
        return tool


@dataclass(frozen=True)
class ServerTools:
    """The server tools a session may declare.

    The API runs a server tool call itself, so the server cannot refuse one after the fact:
    in plan mode a tool is declared only when its ``allowInPlanMode`` is set. Switching into
    or out of plan mode therefore changes the ``tools`` list (a new prompt-cache prefix);
    otherwise the list is the same on every request of a session. The session narrows
    ``web_fetch`` by the WebFetch permission rules at its first turn
    (core/permissions/web_fetch_rules.py)."""

    web_search: WebToolSettings = WebToolSettings()
    web_fetch: WebToolSettings = WebToolSettings()

    def definitions(self, mode: Mode) -> tuple[JSON, ...]:
        wanted = (
            (self.web_search, WEB_SEARCH_TYPE, "web_search"),
            (self.web_fetch, WEB_FETCH_TYPE, "web_fetch"),
        )
        return tuple(
            setting.definition(kind, name)
            for setting, kind, name in wanted
            if setting.enabled and (mode != "plan" or setting.allow_in_plan_mode)
        )


NO_SERVER_TOOLS: Final = ServerTools()


class WebSettingError(ValueError):
    """A wrong ``webSearch`` / ``webFetch`` value: ``key`` names the member
    (``webSearch.maxUses``), ``detail`` says what is wrong."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(f"{key}: {detail}")
        self.key = key
        self.detail = detail


def parse_web_tool(value: Any, key: str) -> WebToolSettings:
    """``{enabled, allowedDomains?, blockedDomains?, maxUses?, allowInPlanMode?}`` (the shape
    of the ``initializationOptions`` key and of the settings files' key alike); ``None``: not
    said. Raises ``WebSettingError`` naming the member that is wrong."""
    if value is None:
        return WebToolSettings()
    if not isinstance(value, dict) or not isinstance(value.get("enabled"), bool):
        raise WebSettingError(
            key, "expected {enabled: bool, allowedDomains?, blockedDomains?, ...}"
        )
    unknown = sorted(value.keys() - WEB_TOOL_KEYS)
    if unknown:
        raise WebSettingError(key, f"unknown keys {unknown}")
    allowed = _domains(value.get("allowedDomains"), f"{key}.allowedDomains", allowed=True)
    blocked = _domains(value.get("blockedDomains"), f"{key}.blockedDomains", allowed=False)
    if allowed and blocked:  # the API takes one or the other
        raise WebSettingError(key, "give allowedDomains or blockedDomains, not both")
    max_uses = value.get("maxUses")
    if max_uses is not None and (
        isinstance(max_uses, bool)
        or not isinstance(max_uses, int)
        or not 1 <= max_uses <= MAX_WEB_TOOL_USES
    ):
        raise WebSettingError(
            f"{key}.maxUses", f"expected 1 … {MAX_WEB_TOOL_USES}, got {max_uses!r}"
        )
    in_plan = value.get("allowInPlanMode")
    if in_plan is not None and not isinstance(in_plan, bool):
        raise WebSettingError(f"{key}.allowInPlanMode", f"expected a bool, got {in_plan!r}")
    return WebToolSettings(value["enabled"], allowed, blocked, max_uses, in_plan)


def _domains(value: Any, key: str, *, allowed: bool) -> tuple[str, ...]:
    """A domain list in the one spelling the API is sent (``model/web_domains.py``):
    ``bücher.example`` is ``xn--bcher-kva.example``; ``Example.com:443`` and
    ``https://example.com/x`` are ``example.com``. An allowed entry keeps a path written after
    its host (``github.com/anthropics``: dropping it would allow more); a blocked entry is its
    host (never less than written). An entry that is not a host is an error naming it."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(d, str) and d.strip() for d in value):
        raise WebSettingError(key, f"expected a list of domains, got {value!r}")
    normal: list[str] = []
    for entry in value:
        domain = allowed_entry(entry) if allowed else host_of(entry)
        if domain is None:
            raise WebSettingError(
                key, f"{entry!r} is not a domain (example.com, which covers its subdomains too)"
            )
        normal.append(domain)
    return tuple(dict.fromkeys(normal))


def beta_headers(tools: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The ``anthropic-beta`` header the declared tools need: web fetch is in beta, and so
    are deferred tools and ``tool_reference`` blocks (the tool search docs)."""
    betas: list[str] = []
    for tool in tools:
        if str(tool.get("type", "")).startswith("web_fetch_") and WEB_FETCH_BETA not in betas:
            betas.append(WEB_FETCH_BETA)
        if tool.get("defer_loading") and TOOL_SEARCH_BETA not in betas:
            betas.append(TOOL_SEARCH_BETA)
    return {"anthropic-beta": ",".join(betas)} if betas else {}


@dataclass(frozen=True)
class ServerCall:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class ServerResult:
    tool_use_id: str
    name: str  # the tool's, from the block type (web_search_tool_result: web_search)
    ok: bool
    output: str


def server_call(block: Mapping[str, Any]) -> ServerCall | None:
    """A ``server_tool_use`` block as a tool call (input: the query or the url)."""
    if block.get("type") != "server_tool_use":
        return None
    raw = block.get("input")
    return ServerCall(str(block.get("id", "")), str(block.get("name", "")), dict(raw or {}))


def server_result(block: Mapping[str, Any]) -> ServerResult | None:
    """A ``web_search_tool_result`` / ``web_fetch_tool_result`` block as a short output:
    one ``title — url`` line per result, or the error code."""
    if block.get("type") not in RESULT_TYPES:
        return None
    tool_use_id = str(block.get("tool_use_id", ""))
    name = str(block.get("type")).removesuffix("_tool_result")
    content = block.get("content")
    if isinstance(content, Mapping):
        if str(content.get("type", "")).endswith("_error"):
            return ServerResult(tool_use_id, name, False, f"error: {content.get('error_code')}")
        if content.get("type") == "web_fetch_result":
            doc = content.get("content")
            title = doc.get("title") if isinstance(doc, Mapping) else None
            return ServerResult(tool_use_id, name, True, _line(title, content.get("url")))
        return ServerResult(tool_use_id, name, True, "")
    items = [c for c in content if isinstance(c, Mapping)] if isinstance(content, list) else []
    lines = [_line(c.get("title"), c.get("url")) for c in items[:MAX_LISTED_RESULTS]]
    if len(items) > MAX_LISTED_RESULTS:
        lines.append(f"… {len(items) - MAX_LISTED_RESULTS} more")
    return ServerResult(tool_use_id, name, True, "\n".join(lines) or "no results")


def _line(title: object, url: object) -> str:
    return f"{title} — {url}" if title else str(url or "")


def without_unanswered(blocks: Sequence[JSON]) -> list[JSON]:
    """``blocks`` less any ``server_tool_use`` whose result never came (a stream that failed
    or was interrupted between the two): not sent back before a user message."""
    answered = {b.get("tool_use_id") for b in blocks if b.get("type") in RESULT_TYPES}
    return [b for b in blocks if b.get("type") != "server_tool_use" or b.get("id") in answered]
