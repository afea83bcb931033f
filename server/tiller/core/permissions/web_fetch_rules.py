"""``WebFetch`` and ``WebSearch`` permission rules folded into the API's server tools.

The Messages API runs a web fetch or search itself, inside the response: Tiller can neither
ask before one nor refuse it after. So the rules shape the tools' definitions instead
(``fold``):

- a ``deny`` or ``ask`` rule's domain is blocked (an ask rule cannot ask: fail closed);
  a bare ``WebFetch`` (or ``web_fetch``) deny or ask rule leaves the tool out altogether, and
  so does the stand-in of a WebFetch deny rule that cannot be read;
- a ``WebSearch`` (``web_search``) deny or ask rule leaves ``web_search`` out (its rules take
  no specifier);
- ``allow`` rules never widen what the ``webFetch`` setting allows.

Domains are compared and sent in one spelling (``model/web_domains.py``: IDNA, lower case, no
scheme, port or trailing dot): ``WebFetch(domain:bücher.example)`` blocks
``xn--bcher-kva.example`` and removes it from an allowed list written either way.

Domains, as the API reads them (web search tool docs, "Domain filtering", which the web fetch
tool docs refer to: https://docs.anthropic.com/en/docs/build-with-claude/tool-use/web-search-tool):
an entry covers its host and every subdomain, and ``*.example.com`` is not a valid entry. So
``WebFetch(domain:example.com)`` blocks ``example.com`` (and, wider than the rule, its
subdomains), and ``WebFetch(domain:*.example.com)`` blocks ``example.com`` too (wider than the
rule: its apex as well). Never narrower than the rule.

The API takes ``allowed_domains`` or ``blocked_domains``, never both (the same docs). When the
setting has an allowed list, the rules remove from it every entry any part of which a deny or
ask rule names (``docs.example.com`` denied removes an allowed ``example.com`` whole: the API
cannot say "example.com but not docs"); when nothing is left, the tool is left out (an empty
list would allow every domain).

When: a session folds the rules at its first turn and keeps the result (``Session.web_fetch``,
which carries web_search's fate too,
stored with the session for a resume or a fork), as it keeps its system prompt: the tools list
is part of the prefix every thinking block is bound to, and a changed one is refused with a
400 (see docs/protocol.md, "Append-only"). A later change to the WebFetch rules is told once
and shapes web_fetch from the next session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from tiller.core.permissions.rules import (
    DOMAIN,
    Rule,
    RuleBook,
    RuleError,
    covers_tool,
    parse_rule,
)
from tiller.model.server_tools import ServerTools, WebToolSettings
from tiller.model.web_domains import WILDCARD, host_of, host_pattern_of

RULES_CHANGED = (
    "The WebFetch or WebSearch permission rules changed: web_fetch and web_search stay as "
    "they were at this session's first turn (the tools list is fixed per session, so the "
    "model's earlier thinking stays valid). The new rules apply from the next session."
)


@dataclass(frozen=True)
class FoldedWebFetch:
    """The ``webFetch`` setting as the rules leave it, and the rules that changed it; and
    the rule that leaves ``web_search`` out (None: as the ``webSearch`` setting has it)."""

    setting: WebToolSettings
    by: tuple[Rule, ...] = ()
    search_left_out_by: Rule | None = None

    def describe(self) -> str | None:
        """The shaping rules as ``toolStarted.permission.by`` names them (None: no rule did)."""
        return "; ".join(r.describe() for r in self.by) or None

    def applied_to(self, tools: ServerTools) -> ServerTools:
        search = tools.web_search
        if self.search_left_out_by is not None:
            search = replace(search, enabled=False)
        return replace(tools, web_fetch=self.setting, web_search=search)

    def shape(self) -> tuple[WebToolSettings, bool]:
        """What the tools list carries of it (two folds that differ here differ on the wire)."""
        return self.setting, self.search_left_out_by is None

    def to_json(self) -> str:
        """As the store keeps it with the session (the domains and the rules that shaped them;
        the rest of the setting is read from the settings)."""
        s, search = self.setting, self.search_left_out_by
        return json.dumps({
            "enabled": s.enabled, "allowedDomains": list(s.allowed_domains),
            "blockedDomains": list(s.blocked_domains), "by": [r.to_wire() for r in self.by],
            **({} if search is None else {"webSearchLeftOutBy": search.to_wire()}),
        })  # fmt: skip

    @staticmethod
    def from_json(text: str, base: WebToolSettings) -> FoldedWebFetch:
        """What ``to_json`` kept, over ``base`` (the ``webFetch`` setting now: turned off
        there, the tool stays off)."""
        raw = json.loads(text)
        setting = replace(
            base,
            enabled=base.enabled and bool(raw.get("enabled")),
            allowed_domains=tuple(str(d) for d in raw.get("allowedDomains", ())),
            blocked_domains=tuple(str(d) for d in raw.get("blockedDomains", ())),
        )
        by = [rule for rule in map(_stored_rule, raw.get("by", ())) if rule is not None]
        search = raw.get("webSearchLeftOutBy")
        left_out = None if search is None else _stored_rule(search) or _LEFT_OUT
        return FoldedWebFetch(setting, tuple(by), left_out)


_LEFT_OUT = Rule("deny", "WebSearch", "WebSearch", None, "session", "stored")  # name lost


def _stored_rule(wire: object) -> Rule | None:
    """A rule as ``to_wire`` kept it (None: it cannot be read again: only its naming is lost)."""
    if not isinstance(wire, dict):
        return None
    try:
        return parse_rule(wire["rule"], wire["effect"], wire["scope"], wire["source"])
    except (RuleError, KeyError, TypeError):
        return None


def fold(setting: WebToolSettings, book: RuleBook) -> FoldedWebFetch:
    """``setting`` (web fetch) narrowed by the deny and ask rules of ``book`` that cover web
    fetch, with the first deny or ask rule that covers web search."""
    search = next(
        (r for r in book.rules if r.effect != "allow" and covers_tool(r, "web_search")), None
    )
    return replace(_fold_fetch(setting, book), search_left_out_by=search)


def _fold_fetch(setting: WebToolSettings, book: RuleBook) -> FoldedWebFetch:
    if not setting.enabled:
        return FoldedWebFetch(setting)
    limiting = [r for r in book.rules if r.effect != "allow" and covers_tool(r, "web_fetch")]
    whole = [r for r in limiting if r.specifier is None]
    if whole:
        return FoldedWebFetch(replace(setting, enabled=False), (whole[0],))
    named = [(r, api_domain(r)) for r in limiting if r.specifier]
    if setting.allowed_domains:
        return _narrowed_allow_list(setting, named)
    shaping = [r for r, _ in named]
    blocked = list(dict.fromkeys([*setting.blocked_domains, *(d for _, d in named)]))
    return FoldedWebFetch(replace(setting, blocked_domains=tuple(blocked)), tuple(shaping))


def _narrowed_allow_list(setting: WebToolSettings, named: list[tuple[Rule, str]]) -> FoldedWebFetch:
    kept: list[str] = []
    shaping: dict[Rule, None] = {}
    for entry in setting.allowed_domains:
        hits = [r for r, _ in named if overlaps(r, entry)]
        shaping.update(dict.fromkeys(hits))
        if not hits:
            kept.append(entry)
    if not kept:
        return FoldedWebFetch(replace(setting, enabled=False), tuple(shaping))
    return FoldedWebFetch(replace(setting, allowed_domains=tuple(kept)), tuple(shaping))


def api_domain(rule: Rule) -> str:
    """The entry the API blocks for a ``WebFetch(domain:…)`` rule: its host (in the one
    spelling of ``model/web_domains.py``), without ``*.``."""
    pattern = _rule_pattern(rule)
    return pattern.removeprefix(WILDCARD)


def overlaps(rule: Rule, allowed: str) -> bool:
    """Whether some host is both matched by ``rule`` and covered by the allowed entry (its
    host and every subdomain; a path after the host is ignored: the host decides). An entry
    that is not a host overlaps every rule (it is dropped rather than trusted)."""
    entry = host_of(allowed.strip().removeprefix(WILDCARD))
    if entry is None:
        return True
    pattern = _rule_pattern(rule)
    if pattern.startswith(WILDCARD):
        suffix = pattern.removeprefix(WILDCARD)  # hosts ending ".suffix"
        return entry == suffix or entry.endswith("." + suffix) or suffix.endswith("." + entry)
    return pattern == entry or pattern.endswith("." + entry)


def _rule_pattern(rule: Rule) -> str:
    """A WebFetch rule's domain, normalised (parse_rule did; a rule made otherwise is read
    again the same way, and one that is not a host stays as written, lower case)."""
    written = (rule.specifier or "").removeprefix(DOMAIN).strip()
    return host_pattern_of(written) or written.lower()
