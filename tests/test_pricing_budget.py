"""Reservation and settlement with hand-computed values (seed 000 "Budget", digest 3.10)."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from agentstudy.pricing.budget import (
    Budget,
    close_attempt,
    completed_charge,
    conservative_charge,
    format_max_budget,
    open_attempt,
    reservation_for,
    settle_attempt,
)
from agentstudy.pricing.money import usd
from agentstudy.pricing.tally import Tally

# --------------------------------------------------------------------------- reservation


@pytest.mark.parametrize(
    ("limit", "reservation", "argument"),
    [
        ("0.10", "0.100000", "0.100000"),
        ("0.12345678", "0.123456", "0.123456"),
        ("0.1234569999", "0.123456", "0.123456"),
        ("0.000001", "0.000001", "0.000001"),
        ("0.0000019", "0.000001", "0.000001"),
        ("2", "2.000000", "2.000000"),
        ("1E+3", "1000.000000", "1000.000000"),
    ],
)
def test_reservation_rounds_down_to_six_decimals(limit: str, reservation: str, argument: str) -> None:
    reserved = reservation_for(D(limit))
    assert str(reserved) == reservation
    assert format_max_budget(reserved) == argument


@pytest.mark.parametrize("limit", ["0", "-0.1", "0.0000009", "NaN", "sNaN", "Infinity"])
def test_unusable_limits_are_refused(limit: str) -> None:
    with pytest.raises(ValueError):
        reservation_for(D(limit))


def test_admission_needs_the_full_limit_not_the_floored_reservation() -> None:
    # Cap 0.3000005: the floored reservation 0.300000 would fit, the full limit 0.3000009 does not.
    assert open_attempt(Budget(D("0.3000005")), D("0.3000009")) is None
    opened = open_attempt(Budget(D("0.3000009")), D("0.3000009"))
    assert opened is not None
    assert (opened.reservation_usd, opened.max_budget_arg) == (D("0.300000"), "0.300000")
    assert opened.budget.spent == D("0.3") == opened.budget.open_usd


def test_fits_at_exactly_the_cap_and_not_a_micro_dollar_more() -> None:
    budget = Budget(D("1"), D("0.9"), D("0"))
    assert budget.fits(D("0.1"))
    assert not budget.fits(D("0.100001"))
    assert budget.remaining_usd == D("0.1")


def test_once_spend_passes_the_cap_nothing_starts() -> None:
    budget = Budget(D("1")).reserve(D("0.5"))
    budget = budget.settle(D("0.5"), D("1.000001"))
    assert budget.cap_exceeded
    assert budget.remaining_usd == 0
    assert not budget.fits(D("0.000001"))
    assert open_attempt(budget, D("0.000001")) is None
    with pytest.raises(ValueError, match="does not fit"):
        budget.reserve(D("0.000001"))


def test_spend_equal_to_the_cap_is_not_exceeded() -> None:
    budget = Budget(D("1")).reserve(D("0.5")).settle(D("0.5"), D("1"))
    assert not budget.cap_exceeded
    assert not budget.fits(D("0.000001"))


# --------------------------------------------------------------------------- settlement


def test_completed_is_charged_the_larger_cost() -> None:
    assert settle_attempt("completed", D("0.1"), D("0.0031999999999999997"), D("0.0032")) == ("completed", D("0.0032"))
    assert settle_attempt("completed", D("0.1"), D("0.05"), D("0.04")) == ("completed", D("0.05"))
    assert settle_attempt("completed", D("0.1"), None, D("0.04")) == ("completed", D("0.04"))


def test_completed_exactly_at_the_reservation_stays_completed() -> None:
    assert settle_attempt("completed", D("0.1"), D("0.1"), D("0.099")) == ("completed", D("0.1"))


def test_completed_above_the_reservation_is_budget_exceeded_with_its_full_charge() -> None:
    assert settle_attempt("completed", D("0.1"), D("0.1000001"), D("0.02")) == ("budget-exceeded", D("0.1000001"))


def test_error_max_budget_is_charged_at_least_the_reservation_and_the_reported_cost() -> None:
    # Transcript 10: the CLI reported 10 USD after --max-budget-usd 0.10.
    assert settle_attempt("budget-exceeded", D("0.1"), D("10"), D("10")) == ("budget-exceeded", D("10"))
    assert settle_attempt("budget-exceeded", D("0.1"), D("0.01"), None) == ("budget-exceeded", D("0.1"))


@pytest.mark.parametrize("status", ["failed", "timed-out", "invalid-setup", "invalid-cost"])
def test_other_outcomes_are_never_charged_less_than_the_reservation_or_a_valid_cost(status: str) -> None:
    assert settle_attempt(status, D("0.1"), None, None) == (status, D("0.1"))
    assert settle_attempt(status, D("0.1"), D("0.02"), D("0.03")) == (status, D("0.1"))
    assert settle_attempt(status, D("0.1"), D("0.25"), None) == (status, D("0.25"))
    assert settle_attempt(status, D("0.1"), None, D("0.3")) == (status, D("0.3"))


def test_settlement_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="unknown attempt status"):
        settle_attempt("incomplete", D("0.1"), None, None)
    with pytest.raises(ValueError, match="at least one valid cost"):
        completed_charge(None, None)
    with pytest.raises(ValueError):
        conservative_charge(D("0.1"), [D("-0.01")])
    with pytest.raises(ValueError):
        completed_charge(D("NaN"), None)


def test_close_attempt_settles_into_the_budget_and_flags_the_cap() -> None:
    opened = open_attempt(Budget(D("0.15")), D("0.10"))
    assert opened is not None
    settled = close_attempt(opened.budget, "completed", opened.reservation_usd, D("0.12"), D("0.11"))
    assert (settled.status, settled.charged_usd) == ("budget-exceeded", D("0.12"))
    assert settled.budget.spent == D("0.12")
    assert settled.budget.open_usd == 0
    assert not settled.cumulative_cap_exceeded
    assert open_attempt(settled.budget, D("0.10")) is None  # 0.12 + 0.10 > 0.15

    opened = open_attempt(Budget(D("0.10")), D("0.10"))
    assert opened is not None
    settled = close_attempt(opened.budget, "failed", opened.reservation_usd, D("0.4"), None)
    assert (settled.charged_usd, settled.budget.spent, settled.cumulative_cap_exceeded) == (D("0.4"), D("0.4"), True)


def test_tally_sums_reservations_and_the_larger_valid_cost() -> None:
    tally = Tally().add_reservation(D("0.1")).add_measured(D("0.0031999999999999997"), D("0.0032"))
    tally = tally.add_reservation(D("0.1")).add_measured(None, None).add_reservation(D("0.1"))
    tally = tally.add_measured(D("0.25"), None)
    assert (tally.reserved, tally.measured) == (D("0.3"), D("0.2532"))
    with pytest.raises(ValueError):
        tally.add_measured(D("-1"), None)
    with pytest.raises(ValueError):
        tally.add_reservation(D("NaN"))


def test_settling_without_an_open_reservation_is_refused() -> None:
    with pytest.raises(ValueError, match="not open"):
        Budget(D("1"), D("0.5")).settle(D("0.1"), D("0.1"))


def test_budget_amounts_are_validated() -> None:
    for bad in (D("-1"), D("NaN"), D("Infinity"), D("1e400")):
        with pytest.raises(ValueError):
            Budget(bad)
    with pytest.raises(ValueError):
        Budget(D("1")).fits(D("0"))
    with pytest.raises(ValueError):
        Budget(D("1"), D("0.1"), D("0.2"))


def test_amounts_keep_every_digit_down_to_1e_30() -> None:
    # A float-derived reported cost keeps its 19 decimals; sums stay exact.
    reported = D(str(0.0031999999999999997))
    budget = Budget(D("1")).reserve(D("0.1")).settle(D("0.1"), reported)
    assert budget.spent == D("0.0031999999999999997")
    # Below 1e-30 USD, digits are rounded up, never down.
    assert usd(D("5E-324")) == D("1E-30")
    assert usd(D("1.0000000000000000000000000000001")) == D("1.000000000000000000000000000001")


def test_settled_usd_is_spent_without_the_open_reservations() -> None:
    budget = Budget(D("1")).reserve(D("0.1")).reserve(D("0.1"))
    assert (budget.spent, budget.settled_usd) == (D("0.2"), D("0"))
    budget = budget.settle(D("0.1"), D("0.003"))
    assert (budget.spent, budget.settled_usd) == (D("0.103"), D("0.003"))
    budget = budget.settle(D("0.1"), D("0.002"))
    assert budget.settled_usd == budget.spent == D("0.005")
