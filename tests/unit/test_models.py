"""The model catalog: resolution of ids and snapshots, /v1/models winning, guesses, prices."""

from __future__ import annotations

import pytest

from tiller.core.config import DEFAULT_MODEL, parse_config
from tiller.errors import ConfigError
from tiller.model.models import (
    CATALOG,
    EFFORT_LEVELS,
    ApiModel,
    Catalog,
    as_effort,
    price,
    resolve,
    thinking_note,
    thinking_params,
    thinking_problem,
)
from tiller.model.usage import Usage
from tiller.protocol import Thinking


def test_default_model_is_the_current_sonnet_with_its_real_limits() -> None:
    assert DEFAULT_MODEL == "claude-sonnet-5-5"
    spec = resolve(DEFAULT_MODEL)
    assert (spec.context_window, spec.max_output) == (1_000_000, 128_000)
    assert spec.thinking == "adaptive" and not spec.sampling_params
    assert spec.notice is None


@pytest.mark.parametrize(
    ("model_id", "form"),
    [
        ("claude-sonnet-5-5", "adaptive"),
        ("claude-opus-5-5", "adaptive"),
        ("claude-haiku-5-5", "adaptive"),
        ("claude-fable-5-1", "adaptive"),
        ("claude-mythos-5", "adaptive"),
        ("claude-sonnet-4-6", "adaptive"),
        ("claude-opus-4-6", "adaptive"),
        ("claude-sonnet-4-5", "budget"),
        ("claude-haiku-4-5", "budget"),
        ("claude-3-5-haiku", "none"),
    ],
)
def test_each_family_gets_its_thinking_form(model_id: str, form: str) -> None:
    assert resolve(model_id).thinking == form


def test_dated_snapshots_and_aliases_resolve_to_their_entry() -> None:
    snapshot = resolve("claude-sonnet-4-5-20250929")
    assert snapshot.id == "claude-sonnet-4-5-20250929"
    assert snapshot.display_name == "Claude Sonnet 4.5" and snapshot.source == "catalog"
    assert resolve("claude-opus-4-20250514").display_name == "Claude Opus 4"
    assert resolve("claude-3-7-sonnet-latest").thinking == "budget"


def test_a_prefix_is_not_a_snapshot() -> None:
    """``claude-opus-4-7`` must not borrow the $15 Opus 4 entry by prefix."""
    assert resolve("claude-opus-4-7").display_name == "Claude Opus 4.7"
    newer = resolve("claude-opus-4-9")
    assert newer.source == "family" and newer.thinking == "adaptive"


def test_unknown_ids_get_a_conservative_entry_and_a_notice() -> None:
    future = resolve("claude-sonnet-6")
    assert future.source == "family" and future.thinking == "adaptive"
    assert future.context_window == 200_000 and future.prices is None
    assert future.notice is not None and "claude-sonnet-6" in future.notice
    odd = resolve("my-proxy-model")
    assert odd.source == "unknown"
    assert (odd.context_window, odd.max_output, odd.thinking) == (200_000, 8192, "budget")
    assert odd.default_thinking() == Thinking()  # off: nothing is sent unless asked
    assert odd.notice is not None and "unknown" in odd.notice


def test_api_figures_win_over_the_catalog() -> None:
    catalog = Catalog.default().with_api(
        [
            ApiModel("claude-sonnet-5-5", "Sonnet 5.5 (API)", 900_000, 100_000),
            ApiModel("claude-new-9", "New", 2_000_000, 256_000, "adaptive", "disabled"),
        ]
    )
    sonnet = catalog.resolve("claude-sonnet-5-5")
    assert (sonnet.display_name, sonnet.context_window, sonnet.max_output) == (
        "Sonnet 5.5 (API)",
        900_000,
        100_000,
    )
    assert sonnet.prices == resolve("claude-sonnet-5-5").prices  # the API has no prices
    new = catalog.resolve("claude-new-9")
    assert new.source == "api" and new.notice is None
    assert (new.context_window, new.thinking, new.thinking_off) == (
        2_000_000,
        "adaptive",
        "disabled",
    )


def test_wire_shape_of_a_list_models_entry() -> None:
    assert resolve("claude-haiku-4-5").to_wire() == {
        "id": "claude-haiku-4-5",
        "displayName": "Claude Haiku 4.5",
        "contextWindow": 200_000,
        "maxOutput": 64_000,
        "thinking": "budget",
    }
    assert "displayName" not in resolve("x-model").to_wire()


def test_every_catalog_entry_is_priced_and_sane() -> None:
    for spec in CATALOG:
        assert spec.prices is not None, spec.id
        assert spec.prices.cache_read < spec.prices.input < spec.prices.cache_write, spec.id
        assert spec.max_output < spec.context_window, spec.id


def test_price_of_a_usage_counts_every_token_kind() -> None:
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=1_000_000,
        cache_read_tokens=1_000_000,
        cache_write_tokens=1_000_000,
    )
    priced = price(usage, resolve("claude-sonnet-4-5"))
    assert priced.cost_usd == pytest.approx(3 + 15 + 0.30 + 3.75)
    assert price(usage, resolve("my-proxy-model")).cost_usd is None


def test_haiku_5_5_long_prompts_cost_the_higher_band() -> None:
    haiku = resolve("claude-haiku-5-5")
    short = price(Usage(input_tokens=100_000, output_tokens=1000), haiku)
    assert short.cost_usd == pytest.approx((100_000 * 0.10 + 1000 * 0.50) / 1e6)
    long = price(Usage(input_tokens=50_000, output_tokens=1000, cache_read_tokens=60_000), haiku)
    assert long.cost_usd == pytest.approx((50_000 * 0.50 + 1000 * 2.50 + 60_000 * 0.05) / 1e6)


def test_budget_must_be_below_max_tokens_on_budget_models_only() -> None:
    on = Thinking(True, 8192)
    assert thinking_problem(on, resolve("claude-sonnet-4-5"), 8192) is not None
    assert thinking_problem(on, resolve("claude-sonnet-4-5"), 8193) is None
    assert thinking_problem(on, resolve("claude-sonnet-4-5"), None) is None  # 64K by default
    assert thinking_problem(on, resolve("claude-sonnet-5-5"), 4096) is None  # mapped to effort
    assert thinking_problem(Thinking(True, 100), resolve("claude-sonnet-5-5"), None) is not None


def test_initialize_validates_thinking_against_max_tokens_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"thinking\.budgetTokens.*below maxTokens"):
        parse_config(
            {
                "model": "claude-sonnet-4-5",
                "maxTokens": 4096,
                "thinking": {"enabled": True, "budgetTokens": 4096},
            }
        )
    with pytest.raises(ConfigError, match=r"thinking\.effort"):
        parse_config({"thinking": {"enabled": True, "effort": "extreme"}})
    config = parse_config({})
    assert config.model == "claude-sonnet-5-5" and config.max_tokens is None
    assert config.thinking == Thinking(True)  # adaptive where the model takes it
    assert (config.max_tool_input_bytes, config.stream_idle_seconds) == (1_048_576, 60)
    assert parse_config({"model": "claude-haiku-4-5"}).thinking == Thinking()


# --- issue 18: Fable/Mythos 5.2, xhigh, thinking off per effort, notices -------------------


@pytest.mark.parametrize("model_id", ["claude-fable-5-2", "claude-mythos-5-2"])
def test_fable_and_mythos_5_2_are_in_the_catalog(model_id: str) -> None:
    spec = resolve(model_id)
    assert spec.source == "catalog" and spec.notice is None
    assert (spec.context_window, spec.max_output) == (1_000_000, 128_000)
    assert (spec.thinking, spec.thinking_off, spec.sampling_params) == (
        "adaptive",
        "always_on",
        False,
    )
    assert "xhigh" in spec.efforts


def test_fable_5_2_prices_and_mythos_5_2_priced_never_below_it() -> None:
    fable = resolve("claude-fable-5-2").prices
    mythos = resolve("claude-mythos-5-2").prices
    assert fable is not None and mythos is not None
    assert (fable.input, fable.output, fable.cache_write, fable.cache_write_1h) == (8, 40, 10, 16)
    assert fable.cache_read == pytest.approx(0.20)
    assert mythos.input >= fable.input and mythos.output >= fable.output


def test_every_entry_has_a_1h_write_price_above_the_5m_one() -> None:
    for spec in CATALOG:
        assert spec.prices is not None
        for band in (spec.prices, spec.prices.long):
            if band is not None:
                assert band.cache_write < band.cache_write_1h == pytest.approx(2 * band.input)


def test_xhigh_is_accepted_where_the_model_takes_it_and_sent_as_is() -> None:
    config = parse_config({"thinking": {"enabled": True, "effort": "xhigh"}})
    assert str(config.thinking.effort) == "xhigh"  # str(): protocol.Effort may predate xhigh
    sent = thinking_params(resolve("claude-sonnet-5-5"), config.thinking, 128_000)
    assert sent["output_config"] == {"effort": "xhigh"}
    # a budget-form model maps it to a budget between high's and max's
    budget = thinking_params(resolve("claude-sonnet-4-5"), config.thinking, 64_000)
    assert budget["thinking"] == {"type": "enabled", "budget_tokens": 24_576}


def test_xhigh_is_refused_on_models_that_predate_it_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"thinking\.effort.*claude-sonnet-4-6 does not take"):
        parse_config(
            {"model": "claude-sonnet-4-6", "thinking": {"enabled": True, "effort": "xhigh"}}
        )
    assert "xhigh" not in resolve("claude-opus-4-6").efforts
    assert parse_config(
        {"model": "claude-opus-4-6", "thinking": {"enabled": True, "effort": "max"}}
    )


@pytest.mark.parametrize("model_id", ["claude-opus-5", "claude-haiku-5-5"])
@pytest.mark.parametrize("effort", ["xhigh", "max"])
def test_thinking_off_above_high_is_refused_on_opus_5_and_haiku_5_5(
    model_id: str, effort: str
) -> None:
    off = {"enabled": False, "effort": effort}
    with pytest.raises(ConfigError, match=r"thinking\.effort.*only at effort high or lower"):
        parse_config({"model": model_id, "thinking": off})
    problem = thinking_problem(Thinking(False, None, as_effort(effort)), resolve(model_id), None)
    assert problem is not None and f"not at {effort}" in problem
    # on is fine at that effort, and off is fine at high
    assert (
        thinking_problem(Thinking(True, None, as_effort(effort)), resolve(model_id), None) is None
    )
    assert parse_config({"model": model_id, "thinking": {"enabled": False, "effort": "high"}})


@pytest.mark.parametrize("model_id", ["claude-sonnet-5", "claude-sonnet-5-5", "claude-opus-4-8"])
def test_thinking_off_at_max_is_fine_where_the_model_sets_no_limit(model_id: str) -> None:
    assert thinking_problem(Thinking(False, None, "max"), resolve(model_id), None) is None


def test_models_that_always_think_get_a_note_not_a_refusal() -> None:
    spec = resolve("claude-fable-5-2")
    assert thinking_problem(Thinking(False, None, "max"), spec, None) is None
    note = thinking_note(Thinking(False), spec)
    assert note is not None and "always thinks" in note


def test_effort_levels_are_ordered_with_xhigh_between_high_and_max() -> None:
    assert EFFORT_LEVELS == ("low", "medium", "high", "xhigh", "max")
    assert str(as_effort("xhigh")) == "xhigh" and as_effort("extreme") is None
    assert as_effort(3) is None


def test_a_partial_api_entry_still_says_what_was_assumed() -> None:
    catalog = Catalog.default().with_api([ApiModel("claude-opus-6", context_window=2_000_000)])
    spec = catalog.resolve("claude-opus-6")
    assert spec.context_window == 2_000_000 and spec.max_output == 32_000
    assert spec.notice is not None
    assert "32,000 output tokens" in spec.notice and "2,000,000" not in spec.notice
    full = Catalog.default().with_api(
        [ApiModel("claude-opus-6", None, 2_000_000, 256_000, "adaptive", "always_on")]
    )
    assert full.resolve("claude-opus-6").notice is None
    assert full.resolve("claude-opus-6").max_output == 256_000


def test_api_effort_levels_replace_the_catalogs() -> None:
    catalog = Catalog.default().with_api(
        [ApiModel("claude-sonnet-4-6", efforts=("low", "medium", "high", "xhigh", "max"))]
    )
    assert "xhigh" in catalog.resolve("claude-sonnet-4-6").efforts


def test_unknown_notices_name_the_assumed_window_never_silently() -> None:
    notice = resolve("my-proxy-model").notice
    assert notice is not None and "200,000-token window" in notice and "8,192" in notice
    family = resolve("claude-sonnet-6").notice
    assert family is not None and "from its family" in family and "cost is not shown" in family
