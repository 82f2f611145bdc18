"""``--strict-cap``'s worst-case turn and reservation rules (issue 19, item 1), pure.

The expected numbers are worked out here by hand from the price table's rows, not by calling the
function under test a second time.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from agentstudy.pricing.budget import settle_attempt
from agentstudy.pricing.strict_cap import (
    HTTP_RULE,
    LIMIT,
    LIMIT_PLUS_WORST_TURN,
    NoWorstTurn,
    ReservationRule,
    overshoot_usd,
    worst_turn_usd,
)
from agentstudy.pricing.table import CLI_PRICES, MODEL_LIMITS, ModelLimits, ModelPrice, Tier
from agentstudy.pricing.tally import Tally


def test_every_priced_model_has_its_limits_with_a_source() -> None:
    assert set(MODEL_LIMITS) == set(CLI_PRICES)
    assert all("measured 2026-12-01" in limits.source for limits in MODEL_LIMITS.values())


def test_the_worst_turn_of_each_table_model_by_hand() -> None:
    # claude-haiku-5-5: tier 2 is 0.50 in / 2.50 out per million; a 1-hour cache write is 2 x 0.50 = 1.00,
    # the dearest way to bill a prompt token. 1,000,000 x 1.00 / 1e6 = 1.00; 128,000 x 2.50 / 1e6 = 0.32.
    assert worst_turn_usd("claude-haiku-5-5") == Decimal("1.32")
    # claude-haiku-4-5: one tier, 1 in / 5 out; 200,000 x 2 / 1e6 = 0.40; 32,000 x 5 / 1e6 = 0.16.
    assert worst_turn_usd("claude-haiku-4-5") == Decimal("0.56")
    # claude-sonnet-5-5: 2 in / 10 out; 1,000,000 x 4 / 1e6 = 4; 128,000 x 10 / 1e6 = 1.28.
    assert worst_turn_usd("claude-sonnet-5-5") == Decimal("5.28")


def test_the_highest_tier_and_rounding_up_to_a_micro_usd() -> None:
    tiers = (Tier(Decimal("0.001"), Decimal("0.002")), Tier(Decimal("0.003"), Decimal("0.007")))
    prices = {"m": ModelPrice(tiers=tiers, source="test")}
    limits = {"m": ModelLimits(333, 77, "test")}
    # 333 x 0.006 / 1e6 = 0.000001998; 77 x 0.007 / 1e6 = 0.000000539; sum 0.000002537 -> up to 0.000003.
    assert worst_turn_usd("m", prices, limits) == Decimal("0.000003")


def test_a_model_without_limits_or_prices_has_no_worst_turn() -> None:
    with pytest.raises(NoWorstTurn, match="context window"):
        worst_turn_usd("m", {"m": CLI_PRICES["claude-haiku-4-5"]}, {})
    with pytest.raises(NoWorstTurn, match="prices"):
        worst_turn_usd("claude-unknown-9")


def test_the_rules_reserve_admit_and_bound_as_documented() -> None:
    seed = ReservationRule.for_cli(Decimal("0.1234567"), "claude-haiku-5-5", strict=False)
    assert seed.name == LIMIT and seed.worst_turn_usd is None
    assert seed.reservation_usd == seed.base_usd == Decimal("0.123456")
    assert seed.admission_usd == Decimal("0.1234567")  # the full limit must fit, as the seed says
    strict = ReservationRule.for_cli(Decimal("0.0015"), "claude-haiku-5-5", strict=True)
    assert strict.name == LIMIT_PLUS_WORST_TURN
    assert strict.base_usd == Decimal("0.0015")  # what Claude Code is told (--max-budget-usd)
    assert strict.reservation_usd == strict.admission_usd == Decimal("1.3215")
    with pytest.raises(ValueError):
        _ = HTTP_RULE.reservation_usd


def test_a_completed_attempt_over_its_limit_is_budget_exceeded_under_either_rule() -> None:
    strict = ReservationRule.for_cli(Decimal("0.0015"), "claude-haiku-5-5", strict=True)
    status, charged = settle_attempt("completed", strict.reservation_usd, Decimal("0.0015186"), None,
                                     exceeded_above=strict.base_usd)
    assert (status, charged) == ("budget-exceeded", Decimal("0.0015186"))  # the measured charge stays
    status, charged = settle_attempt("failed", strict.reservation_usd, Decimal("0.0001"), None,
                                     exceeded_above=strict.base_usd)
    assert (status, charged) == ("failed", Decimal("1.3215"))  # non-completed: max(reservation, measured)


def test_the_tally_keeps_the_largest_overshoot() -> None:
    tally = Tally().add_measured(Decimal("0.0015"), None, Decimal("0.0015"))
    assert tally.largest_overshoot is None  # at the limit is no overshoot
    tally = tally.add_measured(Decimal("0.0015186"), Decimal("0.0014"), Decimal("0.0015"))
    tally = tally.add_measured(None, Decimal("0.0015100"), Decimal("0.0015"))
    assert tally.largest_overshoot == Decimal("0.0000186")
    assert tally.measured == Decimal("0.0015") + Decimal("0.0015186") + Decimal("0.00151")
    assert overshoot_usd(Decimal("0.1"), Decimal("0.2")) == 0
