"""The model catalog: what each Claude model takes and costs, and how a request is shaped for it.

Figures come from the Claude API docs (late 2026; see docs/models.md for the sources and how
to keep them current). ``GET /v1/models`` wins where it says more: its ``max_input_tokens``,
``max_tokens`` and ``capabilities.thinking`` replace the catalog's figures (``with_api``).

Ids resolve exactly, or as a dated snapshot of a known id (``claude-sonnet-4-5-20250929``), or
by family (``claude-<line>-<major>[-<minor>]`` of a version the catalog does not list yet),
else to a conservative entry; a limit neither the catalog nor the API gave is a guess, and the
entry's ``notice`` says which.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final, Literal, cast

from tiller.jsontypes import JSON
from tiller.model.server_tools import SEARCH_USD_PER_REQUEST
from tiller.model.usage import CacheTtl, Usage
from tiller.protocol import EFFORTS, Effort, Thinking

ThinkingForm = Literal["adaptive", "budget", "none"]
"""How thinking is switched on: ``{type: adaptive}`` + ``output_config.effort``, or
``{type: enabled, budget_tokens}``, or not at all."""

ThinkingOff = Literal["omit", "disabled", "between_tools", "always_on"]
"""How thinking is switched off: send nothing (older models think only when asked),
``{type: disabled}``, ``{type: between_tools}`` (Sonnet 5.5: ``disabled`` is a 400), or it
cannot be (Opus 5.5, Fable, Mythos: send nothing; the model thinks anyway)."""

Source = Literal["catalog", "api", "family", "unknown"]
Guess = Literal["window", "output", "thinking"]
ALL_GUESSED: Final[frozenset[Guess]] = frozenset(("window", "output", "thinking"))

MIN_BUDGET: Final = 1024
EFFORT_LEVELS: Final[tuple[str, ...]] = ("low", "medium", "high", "xhigh", "max")
"""Every ``output_config.effort`` the API takes, lowest first (``xhigh`` sits between ``high``
and ``max``). Which of them a model takes is ``ModelSpec.efforts``."""
ALL_EFFORTS: Final = EFFORT_LEVELS
NO_XHIGH: Final[tuple[str, ...]] = ("low", "medium", "high", "max")
EFFORT_BUDGET: Final[Mapping[str, int]] = {
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 24576,
    "max": 32768,
}


def as_effort(word: object) -> Effort | None:
    """``word`` as an effort when the API takes it (EFFORT_LEVELS), else None.

    (The cast covers ``xhigh`` while ``protocol.Effort`` does not list it yet.)"""
    return cast(Effort, word) if isinstance(word, str) and word in EFFORT_LEVELS else None


def effort_rank(effort: str) -> int:
    """The position of ``effort`` in EFFORT_LEVELS (an unknown word ranks above ``max``)."""
    return EFFORT_LEVELS.index(effort) if effort in EFFORT_LEVELS else len(EFFORT_LEVELS)


@dataclass(frozen=True)
class Prices:
    """USD per million tokens. ``cache_write`` is the 5-minute rate, ``cache_write_1h`` the
    1-hour one (``cacheTtl: "1h"``). ``long`` applies to every token of a request whose prompt
    (input + cache reads + cache writes) is over ``long_above`` tokens (Haiku 5.5's two bands).
    """

    input: float
    output: float
    cache_write: float
    cache_read: float
    cache_write_1h: float
    long: Prices | None = None
    long_above: int = 0

    def band(self, usage: Usage) -> Prices:
        """The prices of the band ``usage``'s prompt falls in."""
        if self.long is not None and usage.total_input > self.long_above:
            return self.long
        return self

    def write(self, ttl: CacheTtl) -> float:
        return self.cache_write_1h if ttl == "1h" else self.cache_write


@dataclass(frozen=True)
class ModelSpec:
    id: str
    display_name: str | None
    context_window: int
    max_output: int
    thinking: ThinkingForm
    thinking_off: ThinkingOff
    sampling_params: bool
    """Whether non-default temperature/top_p/top_k are accepted (Tiller never sends them)."""
    summarize_thinking: bool
    """Send ``display: "summarized"``: the model's default display omits the thinking text
    (Claude 5; on Sonnet 5.5 the text between tool calls comes back as thinking too)."""
    prices: Prices | None
    source: Source = "catalog"
    efforts: tuple[str, ...] = ALL_EFFORTS
    """The ``output_config.effort`` values the model takes (adaptive models; a budget-form
    model maps any effort to a budget)."""
    off_up_to: str | None = None
    """The highest effort at which thinking can be switched off (Opus 5: ``high``; with
    ``xhigh`` or ``max`` the off switch is a 400). None: at any effort."""
    guessed: frozenset[Guess] = frozenset()
    """What neither the catalog nor ``/v1/models`` said (the ``notice`` names them)."""

    @property
    def notice(self) -> str | None:
        """What the user should know when some figures are a guess (None: none is)."""
        if not self.guessed:
            return None
        assumed = []
        if "window" in self.guessed:
            assumed.append(f"a {self.context_window:,}-token window")
        if "output" in self.guessed:
            assumed.append(f"{self.max_output:,} output tokens")
        if "thinking" in self.guessed:
            form = (
                "the budget form of thinking (off unless you turn it on)"
                if self.thinking == "budget"
                else f"{self.thinking} thinking"
            )
            assumed.append(form)
        where = {
            "family": "from its family",
            "unknown": "as for any model",
            "api": "where the API's model list says nothing",
            "catalog": "",
        }[self.source]
        head = (
            f"Model {self.id} is unknown to Tiller"
            if self.source == "unknown"
            else f"Model {self.id} is not in Tiller's catalog"
        )
        said = f": assuming {', '.join(assumed)} {where}".rstrip() if assumed else ""
        cost = "; cost is not shown" if self.prices is None else ""
        return f"{head}{said}{cost}."

    def to_wire(self) -> JSON:
        """One entry of ``tiller/listModels``."""
        entry: JSON = {"id": self.id}
        if self.display_name:
            entry["displayName"] = self.display_name
        entry |= {
            "contextWindow": self.context_window,
            "maxOutput": self.max_output,
            "thinking": self.thinking,
        }
        return entry

    def default_thinking(self) -> Thinking:
        """On where the model decides how much to think; off where a budget must be paid."""
        return Thinking(enabled=self.thinking == "adaptive")


def _p(i: float, o: float, w: float, r: float, w1h: float | None = None) -> Prices:
    """Input, output, 5-minute write, read, and the 1-hour write (2x input on every model the
    pricing page lists, unless given)."""
    return Prices(i, o, w, r, 2 * i if w1h is None else w1h)


def _spec(
    id: str,
    name: str,
    window: int,
    output: int,
    thinking: ThinkingForm,
    off: ThinkingOff,
    prices: Prices | None,
    *,
    claude5: bool = False,
    efforts: tuple[str, ...] = ALL_EFFORTS,
    off_up_to: str | None = None,
) -> ModelSpec:
    return ModelSpec(
        id, name, window, output, thinking, off,
        sampling_params=not claude5, summarize_thinking=claude5, prices=prices,
        efforts=efforts, off_up_to=off_up_to,
    )  # fmt: skip


K: Final = 1000
M: Final = 1_000_000
HAIKU_5_5_PRICES: Final = Prices(
    0.10, 0.50, 0.125, 0.01, 0.20,
    long=Prices(0.50, 2.50, 0.625, 0.05, 1.00), long_above=100_000,
)  # fmt: skip

CATALOG: Final[tuple[ModelSpec, ...]] = (
    # Claude 5 family: adaptive thinking only, no sampling parameters, thinking text omitted
    # unless asked for. Mythos 5.2's prices are not published: Mythos 5.1's (docs/models.md).
    _spec("claude-fable-5-2", "Claude Fable 5.2", M, 128 * K, "adaptive", "always_on",
          _p(8, 40, 10, 0.20, 16), claude5=True),
    _spec("claude-mythos-5-2", "Claude Mythos 5.2", M, 128 * K, "adaptive", "always_on",
          _p(10, 50, 12.50, 0.25, 20), claude5=True),
    _spec("claude-fable-5-1", "Claude Fable 5.1", M, 128 * K, "adaptive", "always_on",
          _p(10, 50, 12.50, 0.25), claude5=True),
    _spec("claude-mythos-5-1", "Claude Mythos 5.1", M, 128 * K, "adaptive", "always_on",
          _p(10, 50, 12.50, 0.25), claude5=True),
    _spec("claude-fable-5", "Claude Fable 5", M, 128 * K, "adaptive", "always_on",
          _p(10, 50, 12.50, 1.00), claude5=True),
    _spec("claude-mythos-5", "Claude Mythos 5", M, 128 * K, "adaptive", "always_on",
          _p(10, 50, 12.50, 1.00), claude5=True),
    _spec("claude-opus-5-5", "Claude Opus 5.5", M, 128 * K, "adaptive", "always_on",
          _p(4, 20, 5, 0.20), claude5=True),
    _spec("claude-opus-5", "Claude Opus 5", M, 128 * K, "adaptive", "disabled",
          _p(5, 25, 6.25, 0.50), claude5=True, off_up_to="high"),
    _spec("claude-sonnet-5-5", "Claude Sonnet 5.5", M, 128 * K, "adaptive", "between_tools",
          _p(2, 10, 2.50, 0.10), claude5=True),
    _spec("claude-sonnet-5", "Claude Sonnet 5", M, 128 * K, "adaptive", "disabled",
          _p(2, 10, 2.50, 0.20), claude5=True),
    _spec("claude-haiku-5-5", "Claude Haiku 5.5", M, 128 * K, "adaptive", "disabled",
          HAIKU_5_5_PRICES, claude5=True, off_up_to="high"),
    # Claude 4.6-4.8: adaptive preferred (the budget form is deprecated on 4.6, gone on 4.7+).
    _spec("claude-opus-4-8", "Claude Opus 4.8", M, 128 * K, "adaptive", "disabled",
          _p(5, 25, 6.25, 0.50), claude5=True),
    _spec("claude-opus-4-7", "Claude Opus 4.7", M, 128 * K, "adaptive", "disabled",
          _p(5, 25, 6.25, 0.50), claude5=True),
    _spec("claude-opus-4-6", "Claude Opus 4.6", M, 128 * K, "adaptive", "omit",
          _p(5, 25, 6.25, 0.50), efforts=NO_XHIGH),
    _spec("claude-sonnet-4-6", "Claude Sonnet 4.6", M, 64 * K, "adaptive", "omit",
          _p(3, 15, 3.75, 0.30), efforts=NO_XHIGH),
    # 4.5 and older: only the budget form.
    _spec("claude-opus-4-5", "Claude Opus 4.5", 200 * K, 64 * K, "budget", "omit",
          _p(5, 25, 6.25, 0.50)),
    _spec("claude-sonnet-4-5", "Claude Sonnet 4.5", 200 * K, 64 * K, "budget", "omit",
          _p(3, 15, 3.75, 0.30)),
    _spec("claude-haiku-4-5", "Claude Haiku 4.5", 200 * K, 64 * K, "budget", "omit",
          _p(1, 5, 1.25, 0.10)),
    _spec("claude-opus-4-1", "Claude Opus 4.1", 200 * K, 32 * K, "budget", "omit",
          _p(15, 75, 18.75, 1.50)),
    _spec("claude-opus-4-0", "Claude Opus 4", 200 * K, 32 * K, "budget", "omit",
          _p(15, 75, 18.75, 1.50)),
    _spec("claude-sonnet-4-0", "Claude Sonnet 4", 200 * K, 64 * K, "budget", "omit",
          _p(3, 15, 3.75, 0.30)),
    _spec("claude-3-7-sonnet", "Claude Sonnet 3.7", 200 * K, 64 * K, "budget", "omit",
          _p(3, 15, 3.75, 0.30)),
    _spec("claude-3-5-haiku", "Claude Haiku 3.5", 200 * K, 8192, "none", "omit",
          _p(0.80, 4, 1, 0.08)),
)  # fmt: skip

ALIASES: Final[Mapping[str, str]] = {
    "claude-opus-4": "claude-opus-4-0",
    "claude-sonnet-4": "claude-sonnet-4-0",
}

_SNAPSHOT = re.compile(r"-(\d{8}|latest|v\d+)$")
_FAMILY = re.compile(r"^claude-(?P<line>[a-z]+)-(?P<major>\d+)(?:-(?P<minor>\d{1,2}))?$")

UNKNOWN_WINDOW: Final = 200 * K
UNKNOWN_OUTPUT: Final = 8192
FAMILY_OUTPUT: Final = 32 * K


@dataclass(frozen=True)
class ApiModel:
    """What ``GET /v1/models`` says of one model; ``None`` where it says nothing."""

    id: str
    display_name: str | None = None
    context_window: int | None = None
    max_output: int | None = None
    thinking: ThinkingForm | None = None
    thinking_off: ThinkingOff | None = None
    efforts: tuple[str, ...] | None = None  # capabilities.effort: the levels it supports


def _base_id(model_id: str) -> str:
    """``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``; aliases to their entry."""
    base = _SNAPSHOT.sub("", model_id)
    return ALIASES.get(base, base)


@dataclass(frozen=True)
class Catalog:
    entries: Mapping[str, ModelSpec]
    api: Mapping[str, ApiModel]

    @staticmethod
    def default() -> Catalog:
        return Catalog({m.id: m for m in CATALOG}, {})

    def with_api(self, models: Iterable[ApiModel]) -> Catalog:
        return Catalog(self.entries, {**self.api, **{m.id: m for m in models}})

    def resolve(self, model_id: str) -> ModelSpec:
        spec = self._static(model_id)
        api = self.api.get(model_id) or self.api.get(_base_id(model_id))
        if api is None:
            return spec
        told = {
            "window": api.context_window is not None,
            "output": api.max_output is not None,
            "thinking": api.thinking is not None,
        }
        return replace(
            spec,
            display_name=api.display_name or spec.display_name,
            context_window=api.context_window or spec.context_window,
            max_output=api.max_output or spec.max_output,
            thinking=api.thinking or spec.thinking,
            thinking_off=api.thinking_off or spec.thinking_off,
            efforts=api.efforts or spec.efforts,
            source="api" if spec.source in ("family", "unknown") else spec.source,
            guessed=frozenset(g for g in spec.guessed if not told.get(g, False)),
        )

    def _static(self, model_id: str) -> ModelSpec:
        known = self.entries.get(model_id) or self.entries.get(_base_id(model_id))
        if known is not None:
            return replace(known, id=model_id)
        return family_guess(model_id)


def family_guess(model_id: str) -> ModelSpec:
    """A model the catalog does not list: guess from its version, else assume the least.

    Claude 5 and later (and 4.6+) take adaptive thinking and refuse the budget form, so a
    newer id gets the adaptive form; anything else gets the budget form (accepted by every
    model up to 4.6), off by default so nothing is sent unless the user asks. The window is
    the smallest of any current model (compaction then fires early rather than never) and the
    output limit one every Claude 4+ model accepts (8192 where even the family is unknown).
    """
    match_ = _FAMILY.match(_SNAPSHOT.sub("", model_id))
    if match_ is not None:
        major, minor = int(match_["major"]), int(match_["minor"] or 0)
        if major >= 5 or (major == 4 and minor >= 6):
            return ModelSpec(
                model_id, None, UNKNOWN_WINDOW, FAMILY_OUTPUT, "adaptive", "omit",
                sampling_params=major < 5, summarize_thinking=major >= 5, prices=None,
                source="family", guessed=ALL_GUESSED,
            )  # fmt: skip
        if major == 4:
            return ModelSpec(
                model_id, None, UNKNOWN_WINDOW, FAMILY_OUTPUT, "budget", "omit",
                sampling_params=True, summarize_thinking=False, prices=None, source="family",
                guessed=ALL_GUESSED,
            )  # fmt: skip
    return ModelSpec(
        model_id, None, UNKNOWN_WINDOW, UNKNOWN_OUTPUT, "budget", "omit",
        sampling_params=True, summarize_thinking=False, prices=None, source="unknown",
        guessed=ALL_GUESSED,
    )  # fmt: skip


DEFAULT_CATALOG: Final = Catalog.default()


def resolve(model_id: str) -> ModelSpec:
    """The static catalog's view of ``model_id`` (no API knowledge)."""
    return DEFAULT_CATALOG.resolve(model_id)


# --- thinking ---------------------------------------------------------------------------------


def effective_max_tokens(spec: ModelSpec, max_tokens: int | None) -> int:
    """``maxTokens`` as sent: the setting, or the model's max output, never above it."""
    return spec.max_output if max_tokens is None else min(max_tokens, spec.max_output)


def budget_for(thinking: Thinking, max_tokens: int) -> int | None:
    """The ``budget_tokens`` to send on a budget-form model, or None when thinking cannot fit
    (``1024 <= budget < max_tokens``). An effort alone maps to a budget (EFFORT_BUDGET)."""
    wanted = thinking.budget_tokens
    if wanted is None:
        wanted = EFFORT_BUDGET[thinking.effort or "medium"]
    budget = min(wanted, max_tokens - 1)
    return budget if budget >= MIN_BUDGET else None


def effort_for(thinking: Thinking) -> Effort | None:
    """The effort to send on an adaptive model: the one asked for, else one near the budget
    asked for, else None (the model's default)."""
    if thinking.effort is not None or thinking.budget_tokens is None:
        return thinking.effort
    budget = thinking.budget_tokens
    return next((e for e in EFFORTS if budget <= EFFORT_BUDGET[e]), "max")


def thinking_params(spec: ModelSpec, thinking: Thinking, max_tokens: int) -> JSON:
    """The request fields (``thinking``, ``output_config``) that say ``thinking`` to ``spec``."""
    if not thinking.enabled:
        match spec.thinking_off:
            case "disabled":
                return {"thinking": {"type": "disabled"}}
            case "between_tools":
                return {"thinking": {"type": "between_tools"}}
            case "omit" | "always_on":
                return {}
    match spec.thinking:
        case "adaptive":
            config: JSON = {"type": "adaptive"}
            if spec.summarize_thinking:
                config["display"] = "summarized"
            params: JSON = {"thinking": config}
            effort = effort_for(thinking)
            if effort is not None:
                params["output_config"] = {"effort": effort}
            return params
        case "budget":
            budget = budget_for(thinking, max_tokens)
            if budget is None:
                return {}
            return {"thinking": {"type": "enabled", "budget_tokens": budget}}
        case "none":
            return {}


def thinking_problem(thinking: Thinking, spec: ModelSpec, max_tokens: int | None) -> str | None:
    """Why ``thinking`` cannot be sent to ``spec`` with ``max_tokens`` (None: it can).

    Only what the user set explicitly is checked: an effort the model does not take, thinking
    off at an effort above the model's ``off_up_to``, and ``budgetTokens`` on a model that takes
    the budget form, which must satisfy the API's ``1024 <= budgetTokens < maxTokens``.
    """
    return effort_problem(thinking, spec) or _budget_problem(thinking, spec, max_tokens)


def effort_problem(thinking: Thinking, spec: ModelSpec) -> str | None:
    """Why ``thinking.effort`` cannot go with ``spec`` (None: it can): an effort the model does
    not take, or thinking off at an effort above the model's ``off_up_to``."""
    effort = thinking.effort
    if effort is None:
        return None
    if spec.thinking == "adaptive" and effort not in spec.efforts:
        return f"{spec.id} does not take effort {effort}; it takes {', '.join(spec.efforts)}"
    if (
        not thinking.enabled
        and spec.off_up_to is not None
        and spec.thinking_off in ("disabled", "between_tools")
        and effort_rank(effort) > effort_rank(spec.off_up_to)
    ):
        return (
            f"{spec.id} can turn thinking off only at effort {spec.off_up_to} or lower, "
            f"not at {effort}: lower the effort or keep thinking on"
        )
    return None


def _budget_problem(thinking: Thinking, spec: ModelSpec, max_tokens: int | None) -> str | None:
    budget = thinking.budget_tokens
    if budget is None:
        return None
    if budget < MIN_BUDGET:
        return f"budgetTokens must be at least {MIN_BUDGET}, got {budget}"
    if spec.thinking != "budget" or not thinking.enabled:
        return None
    limit = effective_max_tokens(spec, max_tokens)
    if budget >= limit:
        where = "maxTokens" if max_tokens is not None else f"{spec.id}'s max output"
        return f"budgetTokens ({budget}) must be below {where} ({limit})"
    return None


def thinking_note(thinking: Thinking, spec: ModelSpec) -> str | None:
    """A remark on how ``thinking`` will really behave on ``spec`` (for replies and notices)."""
    if not thinking.enabled and spec.thinking_off == "always_on":
        return f"{spec.id} always thinks; thinking stays on at the model's default effort"
    if thinking.enabled and spec.thinking == "none":
        return f"{spec.id} does not think; thinking is not sent"
    if thinking.enabled and spec.thinking == "adaptive" and thinking.effort is None:
        effort = effort_for(thinking)
        if effort is not None:
            return f"{spec.id} takes an effort, not a budget: using effort {effort}"
    return None


# --- prices -----------------------------------------------------------------------------------


def price(usage: Usage, spec: ModelSpec) -> Usage:
    """``usage`` with its cost in USD, or ``cost_usd=None`` when the model's prices are unknown.

    The band is the prompt's (Haiku 5.5: over 100K tokens every token costs the long rate);
    cache writes cost the 5-minute or the 1-hour rate by the TTL they were written with
    (``Usage.cache_write_1h_tokens``); each web search costs ``SEARCH_USD_PER_REQUEST``
    (web fetches cost only their tokens)."""
    if spec.prices is None:
        return replace(usage, cost_usd=None)
    prices = spec.prices.band(usage)
    writes_5m = usage.cache_write_tokens - usage.cache_write_1h_tokens
    cost = (
        usage.input_tokens * prices.input
        + usage.output_tokens * prices.output
        + writes_5m * prices.write("5m")
        + usage.cache_write_1h_tokens * prices.write("1h")
        + usage.cache_read_tokens * prices.cache_read
    ) / 1_000_000 + usage.web_search_requests * SEARCH_USD_PER_REQUEST
    return replace(usage, cost_usd=cost)
