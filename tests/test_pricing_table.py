"""The price table (seed 000 "Cost"): rows, derived cache rates, row checks and the ledger entry."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from agentstudy.pricing.table import CLI_PRICES, ModelPrice, Tier, price_entry


def test_rows_are_the_issue_figures() -> None:
    haiku55 = CLI_PRICES["claude-haiku-5-5"]
    assert haiku55.tiers == (Tier(D("0.10"), D("0.50")), Tier(D("0.50"), D("2.50")))
    assert haiku55.tier_threshold_tokens == 100_000
    assert CLI_PRICES["claude-haiku-4-5"].tiers == (Tier(D("1"), D("5")),)
    assert CLI_PRICES["claude-sonnet-5-5"].tiers == (Tier(D("2"), D("10")),)


def test_cache_rates_derive_from_the_tier_input_rate() -> None:
    tier = CLI_PRICES["claude-haiku-5-5"].tiers[1]
    assert (tier.cache_read, tier.cache_write_5m, tier.cache_write_1h) == (D("0.05"), D("0.625"), D("1.00"))


def test_tier_index_is_strictly_above_the_threshold() -> None:
    price = CLI_PRICES["claude-haiku-5-5"]
    assert [price.tier_index(n) for n in (0, 100_000, 100_001)] == [0, 0, 1]
    assert CLI_PRICES["claude-haiku-4-5"].tier_index(10**9) == 0


@pytest.mark.parametrize(
    "tiers",
    [
        (),
        (Tier(D(1), D(1)), Tier(D(2), D(2)), Tier(D(3), D(3))),
        (Tier(D(1), D(5)), Tier(D("0.5"), D(6))),
        (Tier(D(1), D(5)), Tier(D(2), D(4))),
    ],
)
def test_rows_that_break_monotone_pricing_are_refused(tiers: tuple[Tier, ...]) -> None:
    with pytest.raises(ValueError):
        ModelPrice(tiers, "test")


@pytest.mark.parametrize(("rate_in", "rate_out"), [("-1", "1"), ("1", "NaN"), ("Infinity", "1")])
def test_bad_rates_are_refused(rate_in: str, rate_out: str) -> None:
    with pytest.raises(ValueError):
        Tier(D(rate_in), D(rate_out))


def test_threshold_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ModelPrice((Tier(D(1), D(1)),), "test", 0)


def test_price_entry_for_the_ledger() -> None:
    entry = price_entry("claude-haiku-5-5")
    assert entry is not None
    assert entry["tiers"] == [{"input": 0.1, "output": 0.5}, {"input": 0.5, "output": 2.5}]
    assert entry["tierThresholdTokens"] == 100_000
    assert (entry["cacheWrite5mMultiplier"], entry["cacheWrite1hMultiplier"], entry["cacheReadMultiplier"]) == (
        1.25,
        2.0,
        0.1,
    )
    assert entry["source"].startswith("study protocol")
    assert price_entry("claude-unknown") is None
