"""The usage ledger prices cache writes by their TTL (5m / 1h) and by Haiku 5.5's prompt band;
``cacheTtl`` chooses the TTL."""

from __future__ import annotations

import pytest

from tiller.core.config import parse_config
from tiller.errors import ConfigError
from tiller.model.models import price, resolve
from tiller.model.usage import Usage

MTOK = 1_000_000


def test_the_api_split_of_cache_writes_is_kept() -> None:
    usage = Usage.from_api(
        {
            "input_tokens": 10,
            "output_tokens": 20,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 40,
            "cache_creation": {"ephemeral_5m_input_tokens": 15, "ephemeral_1h_input_tokens": 25},
        },
        ttl="5m",
    )
    assert (usage.input_tokens, usage.output_tokens) == (10, 20)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (30, 40)
    assert usage.cache_write_1h_tokens == 25  # the API's split wins over the asked TTL


@pytest.mark.parametrize(("ttl", "written_1h"), [("5m", 0), ("1h", 40)])
def test_without_a_split_every_write_counts_at_the_asked_ttl(ttl: str, written_1h: int) -> None:
    usage = Usage.from_api({"cache_creation_input_tokens": 40}, ttl="1h" if ttl == "1h" else "5m")
    assert usage.cache_write_tokens == 40 and usage.cache_write_1h_tokens == written_1h


def test_malformed_counts_are_zero() -> None:
    usage = Usage.from_api({"input_tokens": True, "output_tokens": "9", "cache_creation": None})
    assert usage == Usage()


def test_1h_writes_add_up() -> None:
    total = Usage(cache_write_tokens=5, cache_write_1h_tokens=2) + Usage(
        cache_write_tokens=7, cache_write_1h_tokens=7
    )
    assert (total.cache_write_tokens, total.cache_write_1h_tokens) == (12, 9)


def test_1h_writes_cost_the_1h_rate_and_5m_writes_the_5m_rate() -> None:
    sonnet = resolve("claude-sonnet-5-5")
    five = price(Usage(cache_write_tokens=MTOK), sonnet)
    hour = price(Usage(cache_write_tokens=MTOK, cache_write_1h_tokens=MTOK), sonnet)
    mixed = price(Usage(cache_write_tokens=MTOK, cache_write_1h_tokens=MTOK // 4), sonnet)
    assert five.cost_usd == pytest.approx(2.50)
    assert hour.cost_usd == pytest.approx(4.00)
    assert mixed.cost_usd == pytest.approx(0.75 * 2.50 + 0.25 * 4.00)


def test_haiku_5_5_bands_apply_to_both_write_rates() -> None:
    haiku = resolve("claude-haiku-5-5")
    short = price(
        Usage(input_tokens=1000, cache_write_tokens=50_000, cache_write_1h_tokens=50_000), haiku
    )
    assert short.cost_usd == pytest.approx((1000 * 0.10 + 50_000 * 0.20) / MTOK)
    long = price(
        Usage(input_tokens=1000, cache_write_tokens=150_000, cache_write_1h_tokens=100_000), haiku
    )
    assert long.cost_usd == pytest.approx((1000 * 0.50 + 50_000 * 0.625 + 100_000 * 1.00) / MTOK)


def test_fable_5_2_costs_per_its_own_row() -> None:
    usage = Usage(MTOK, MTOK, MTOK, 2 * MTOK, cache_write_1h_tokens=MTOK)
    assert price(usage, resolve("claude-fable-5-2")).cost_usd == pytest.approx(
        8 + 40 + 0.20 + 10 + 16
    )


def test_cache_ttl_setting_defaults_to_5m_and_takes_1h_only() -> None:
    assert parse_config({}).cache_ttl == "5m"
    assert parse_config({"cacheTtl": "1h"}).cache_ttl == "1h"
    with pytest.raises(ConfigError, match="cacheTtl"):
        parse_config({"cacheTtl": "2h"})
