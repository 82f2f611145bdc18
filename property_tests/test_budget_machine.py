"""Stateful budget properties (seed 000 "Budget", digest 2.1 and 3.10) with hypothesis state machines.

``CliBudgetMachine`` runs arbitrary sequences of CLI attempts (any limit, any outcome, any
valid or invalid reported and computed cost) against a cap; ``HttpBudgetMachine`` runs
arbitrary sequences of Messages API calls (any body size, ``max_tokens``, valid, invalid or
lost usage). Each step admits or refuses one attempt (one call) and settles it; the checks,
against an independent model kept in ``fractions.Fraction``, run inside the step while the
reservation is open and after every step: no attempt starts unless its full limit fits; a
non-completed attempt is never charged less than its reservation or any valid cost;
cumulative spend equals the sum of charges (plus the open reservation while one is open);
once spend passes the cap no further attempt starts.
"""

from __future__ import annotations

from decimal import Context, Decimal, localcontext
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agentstudy.pricing.budget import MICRO, Budget, close_attempt, open_attempt, settle_attempt
from agentstudy.pricing.http import (
    CallReservation,
    UpperPrices,
    call_reservation,
    reserve_call,
    settle_call,
    settle_response,
)
from agentstudy.pricing.money import RESOLUTION
from agentstudy.pricing.tally import Tally

STATUSES = ("completed", "failed", "timed-out", "budget-exceeded", "invalid-setup", "invalid-cost")
MACHINE_SETTINGS = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def decimals(max_units: int) -> st.SearchStrategy[Decimal]:
    """Non-negative USD amounts with 0 to 9 decimals."""
    return st.builds(lambda n, places: Decimal(n).scaleb(-places), st.integers(0, max_units), st.integers(0, 9))


def float_costs() -> st.SearchStrategy[Decimal]:
    """Costs as the CLI reports them: finite floats >= 0 read through ``str`` (subnormals included)."""
    return st.floats(min_value=0, max_value=1e4, allow_nan=False, allow_infinity=False).map(lambda f: Decimal(str(f)))


costs = st.none() | decimals(10**9) | float_costs()
positive_prices = st.builds(lambda n, places: Decimal(n).scaleb(-places), st.integers(1, 10**4), st.integers(0, 6))
limits = st.builds(lambda n, places: Decimal(n).scaleb(-places), st.integers(1, 10**9), st.integers(0, 6)) | (
    st.integers(1000, 10**12).map(lambda n: Decimal(n).scaleb(-9))
)
"""Per-attempt limits >= 1 micro-USD, some with digits below the micro-USD."""


class CliBudgetMachine(RuleBasedStateMachine):
    """A run of CLI attempts; each step admits (or refuses) one attempt and settles it with any outcome.

    An attempt is one step (open, check, settle): hypothesis' swarm testing may disable any
    rule, so a rule never depends on another rule to finish what it started.
    """

    def __init__(self) -> None:
        super().__init__()
        self.budget = Budget(Decimal(0))
        self.charges: list[Fraction] = []
        self.reservations: list[Fraction] = []
        self.measured: list[Fraction] = []
        self.tally = Tally()

    @initialize(cap=decimals(10**10))
    def set_cap(self, cap: Decimal) -> None:
        self.budget = Budget(cap)

    @rule(limit=limits, status=st.sampled_from(STATUSES), data=st.data())
    def attempt(self, limit: Decimal, status: str, data: st.DataObject) -> None:
        self._attempt(limit, status, data)

    @rule(excess_nano=st.sampled_from([0, 1]) | st.integers(0, 999), status=st.sampled_from(STATUSES), data=st.data())
    def attempt_at_the_edge(self, excess_nano: int, status: str, data: st.DataObject) -> None:
        # A limit at most 999 nano-USD above what remains: its floored reservation would fit, it must not.
        with localcontext(Context(prec=200)):
            limit = self.budget.cap - self.budget.spent + Decimal(excess_nano).scaleb(-9)
        if limit >= MICRO:
            self._attempt(limit, status, data)

    @rule()
    def smallest_attempt_after_cap(self) -> None:
        if self.budget.cap_exceeded:
            assert open_attempt(self.budget, MICRO) is None, "an attempt started after spend passed the cap"

    def _attempt(self, limit: Decimal, status: str, data: st.DataObject) -> None:
        before = self.budget
        fits = Fraction(before.spent) + Fraction(limit) <= Fraction(before.cap)
        opened = open_attempt(before, limit)
        event("attempt admitted" if opened else "attempt refused")
        if Fraction(before.spent) > Fraction(before.cap):
            assert opened is None, "an attempt started after spend passed the cap"
        if opened is None:
            assert not fits
            return
        assert fits, "an attempt started although its full limit did not fit"
        reservation = Fraction(opened.reservation_usd)
        assert 0 < reservation <= Fraction(limit) < reservation + Fraction(1, 10**6)
        assert reservation * 10**6 == int(reservation * 10**6)
        assert Fraction(opened.max_budget_arg) == reservation
        assert len(opened.max_budget_arg.split(".")[1]) == 6
        self.reservations.append(reservation)
        self.tally = self.tally.add_reservation(opened.reservation_usd)
        # While the attempt runs: spend holds the reservation and stays under the cap.
        assert Fraction(opened.budget.spent) == sum(self.charges, Fraction(0)) + reservation
        assert Fraction(opened.budget.open_usd) == reservation
        assert opened.budget.spent <= opened.budget.cap
        self._finish(opened.budget, opened.reservation_usd, status, data)

    def _finish(self, budget: Budget, reservation: Decimal, status: str, data: st.DataObject) -> None:
        # Costs anywhere, or a hair either side of the reservation (where budget-exceeded is decided).
        nanos = st.sampled_from([0, 1, -1]) | st.integers(-1000, 1000)
        near = nanos.map(lambda n: max(reservation + Decimal(n).scaleb(-9), Decimal(0)))
        reported = data.draw(costs | near, label="reported")
        computed = data.draw(costs | near, label="computed")
        valid = [Fraction(c) for c in (reported, computed) if c is not None]
        if status == "completed" and not valid:
            # The outcome precedence makes such an attempt invalid-cost before settlement.
            with pytest.raises(ValueError):
                settle_attempt(status, reservation, reported, computed)
            status = "invalid-cost"
        settled = close_attempt(budget, status, reservation, reported, computed)
        charge = Fraction(settled.charged_usd)
        note(f"{status} reservation={reservation} reported={reported} computed={computed} -> {settled.status} {charge}")
        event(f"settled {settled.status}")
        if status == "completed":
            expected = max(valid)
            assert settled.status == ("budget-exceeded" if charge > Fraction(reservation) else "completed")
        else:
            expected = max([Fraction(reservation), *valid])
            assert settled.status == status
            assert charge >= Fraction(reservation)
            assert all(charge >= c for c in valid)
        # Exactly the rule's value, up to the 1e-30 USD resolution, and never below it.
        assert expected <= charge < expected + Fraction(RESOLUTION)
        self.charges.append(charge)
        self.budget = settled.budget
        self.tally = self.tally.add_measured(reported, computed)
        self.measured.append(max(valid) if valid else Fraction(0))
        event("cap exceeded" if settled.cumulative_cap_exceeded else "cap not exceeded")
        assert settled.cumulative_cap_exceeded is (Fraction(self.budget.spent) > Fraction(self.budget.cap))

    @invariant()
    def spend_is_the_sum_of_charges(self) -> None:
        assert Fraction(self.budget.spent) == sum(self.charges, Fraction(0))
        assert self.budget.open_usd == 0
        assert Fraction(self.tally.reserved) == sum(self.reservations, Fraction(0))
        # Measured costs are kept to 1e-30 USD, rounded up: never below the raw sum.
        raw = sum(self.measured, Fraction(0))
        assert raw <= Fraction(self.tally.measured) <= raw + len(self.measured) * Fraction(RESOLUTION)

    @invariant()
    def cap_flag_is_spend_above_cap(self) -> None:
        assert self.budget.cap_exceeded is (Fraction(self.budget.spent) > Fraction(self.budget.cap))


def _valid_usage_model(usage: dict[str, Any], reservation: CallReservation) -> tuple[int, int] | None:
    """The digest's validation rules, restated independently of ``pricing.http``."""

    def integer(value: Any) -> bool:
        return type(value) is int

    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    if not (integer(tokens_in) and 0 <= tokens_in <= reservation.input_ceiling):
        return None
    if not (integer(tokens_out) and 0 <= tokens_out <= reservation.max_output_tokens):
        return None
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if key in usage and not (integer(usage[key]) and usage[key] == 0):
            return None
    return tokens_in, tokens_out


field_values = st.one_of(
    st.integers(-5, 20_000), st.booleans(), st.none(), st.floats(allow_nan=False), st.text(max_size=3)
)
usage_dicts = st.dictionaries(
    st.sampled_from(["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "x"]),
    field_values,
)


class HttpBudgetMachine(RuleBasedStateMachine):
    """An HTTP run: calls reserved one at a time, each settled by valid, invalid or lost usage."""

    def __init__(self) -> None:
        super().__init__()
        self.budget = Budget(Decimal(0))
        self.prices = UpperPrices(Decimal(1), Decimal(1))
        self.charges: list[Fraction] = []

    @initialize(cap=decimals(10**8), price_in=positive_prices, price_out=positive_prices)
    def set_up(self, cap: Decimal, price_in: Decimal, price_out: Decimal) -> None:
        self.budget, self.prices = Budget(cap), UpperPrices(price_in, price_out)

    @rule(
        body_bytes=st.integers(0, 300_000),
        max_tokens=st.integers(1, 8192),
        kind=st.sampled_from(["valid", "almost-valid", "arbitrary", "lost"]),
        data=st.data(),
    )
    def call(self, body_bytes: int, max_tokens: int, kind: str, data: st.DataObject) -> None:
        reservation = call_reservation(body_bytes, max_tokens, self.prices)
        expected = (
            (2 * body_bytes + 8192) * Fraction(self.prices.input_usd_per_million)
            + max_tokens * Fraction(self.prices.output_usd_per_million)
        ) / 10**6
        assert Fraction(reservation.usd) == expected
        fits = Fraction(self.budget.spent) + expected <= Fraction(self.budget.cap)
        budget = reserve_call(self.budget, reservation)
        assert (budget is not None) is fits
        event("call reserved" if fits else "call refused (no request)")
        if budget is None:
            return
        # While the request is in flight: spend holds the reservation and stays under the cap.
        assert Fraction(budget.spent) == sum(self.charges, Fraction(0)) + expected <= Fraction(budget.cap)
        event(f"response {kind}")
        if kind == "lost":
            settled = settle_call(budget, reservation, None)
            assert settled.charged_usd == reservation.usd and not settled.usage_complete
        else:
            usage = self._usage(kind, reservation, data)
            settled = settle_response(budget, reservation, usage)
            valid = _valid_usage_model(usage, reservation) if isinstance(usage, dict) else None
            assert settled.usage_complete is (valid is not None)
            if valid is None:
                assert settled.charged_usd == reservation.usd, "an invalid usage released its reservation"
            else:
                measured = (
                    valid[0] * Fraction(self.prices.input_usd_per_million)
                    + valid[1] * Fraction(self.prices.output_usd_per_million)
                ) / 10**6
                assert Fraction(settled.charged_usd) == measured <= Fraction(reservation.usd)
                assert Fraction(settled.released_usd) == Fraction(reservation.usd) - measured
        self.charges.append(Fraction(settled.charged_usd))
        self.budget = settled.budget

    @staticmethod
    def _usage(kind: str, reservation: CallReservation, data: st.DataObject) -> Any:
        if kind == "arbitrary":
            return data.draw(st.none() | usage_dicts, label="usage")
        usage: dict[str, Any] = {
            "input_tokens": data.draw(st.integers(0, reservation.input_ceiling), label="input_tokens"),
            "output_tokens": data.draw(st.integers(0, reservation.max_output_tokens), label="output_tokens"),
        }
        if kind == "almost-valid":
            # A valid usage with a few fields replaced, added or removed.
            usage.update(data.draw(usage_dicts, label="changes"))
            usage.pop(data.draw(st.sampled_from(["", "input_tokens", "output_tokens"]), label="dropped"), None)
        return usage

    @invariant()
    def spend_is_the_sum_of_charges(self) -> None:
        assert Fraction(self.budget.spent) == sum(self.charges, Fraction(0))
        assert self.budget.open_usd == 0

    @invariant()
    def spend_never_passes_the_cap(self) -> None:
        assert self.budget.spent <= self.budget.cap
        assert not self.budget.cap_exceeded


TestCliBudgetMachine = CliBudgetMachine.TestCase
TestCliBudgetMachine.settings = MACHINE_SETTINGS
TestHttpBudgetMachine = HttpBudgetMachine.TestCase
TestHttpBudgetMachine.settings = MACHINE_SETTINGS
