"""Property tests of reservations, settlement and the list-price cost (seed 000, "Budget" and "Cost")."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstudy.pricing.budget import (
    MICRO,
    Budget,
    completed_charge,
    format_max_budget,
    reservation_for,
    settle_attempt,
)
from agentstudy.pricing.cost import CacheWrites, ModelTokens, compute_cost
from agentstudy.pricing.table import CLI_PRICES

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STATUSES = ("completed", "failed", "timed-out", "budget-exceeded", "invalid-setup", "invalid-cost")


def amounts(max_units: int = 10**9) -> st.SearchStrategy[Decimal]:
    """Non-negative Decimal USD amounts with 6, 7 or 8 decimals."""
    return st.builds(
        lambda n, places: Decimal(n).scaleb(-places),
        st.integers(min_value=0, max_value=max_units),
        st.sampled_from([6, 7, 8]),
    )


def positive_limits() -> st.SearchStrategy[Decimal]:
    """Per-attempt limits that do not floor to zero (>= 0.000001 USD)."""
    return amounts(max_units=5 * 10**8).filter(lambda d: d >= MICRO)


@dataclass(frozen=True)
class Attempt:
    status: str
    reported: Decimal | None
    computed: Decimal | None


attempts = st.builds(
    Attempt,
    st.sampled_from(STATUSES),
    st.none() | amounts(max_units=3 * 10**8),
    st.none() | amounts(max_units=3 * 10**8),
)


@SETTINGS
@given(cap=amounts(), limit=positive_limits(), plan=st.lists(attempts, max_size=25), stop_on_failure=st.booleans())
def test_run_loop_budget_invariants(cap: Decimal, limit: Decimal, plan: list[Attempt], stop_on_failure: bool) -> None:
    budget = Budget(cap)
    charges: list[Decimal] = []
    for attempt in plan:
        if not budget.fits(limit):
            break
        assert budget.spent + limit <= budget.cap
        reservation = reservation_for(limit)
        assert Decimal(0) < reservation <= limit
        assert limit - reservation < MICRO
        assert reservation == reservation.quantize(MICRO)
        assert format_max_budget(reservation) == f"{reservation:.6f}"
        before = budget.spent
        budget = budget.reserve(reservation)
        assert budget.spent == before + reservation
        assert budget.spent <= budget.cap

        status = attempt.status
        valid = [c for c in (attempt.reported, attempt.computed) if c is not None]
        if status == "completed" and not valid:
            # A completed attempt without any valid cost cannot be settled as completed: it is invalid-cost.
            with pytest.raises(ValueError):
                settle_attempt(status, reservation, attempt.reported, attempt.computed)
            status = "invalid-cost"
        final, charge = settle_attempt(status, reservation, attempt.reported, attempt.computed)
        if status == "completed":
            assert charge == max(valid)
            assert final == ("budget-exceeded" if charge > reservation else "completed")
        else:
            assert final == status
            assert charge >= reservation
            assert all(charge >= c for c in valid)
            assert charge == max([reservation, *valid])
        budget = budget.settle(reservation, charge)
        charges.append(charge)
        assert budget.spent == sum(charges, Decimal(0))
        assert budget.cap == cap
        assert budget.cap_exceeded is (budget.spent > cap)
        if budget.cap_exceeded or (stop_on_failure and final != "completed"):
            break
    assert budget.spent == sum(charges, Decimal(0))


@SETTINGS
@given(limit=amounts(max_units=10**12))
def test_reservation_floors_to_six_decimals(limit: Decimal) -> None:
    if limit < MICRO:
        with pytest.raises(ValueError):
            reservation_for(limit)
        return
    reservation = reservation_for(limit)
    assert reservation <= limit
    assert limit - reservation < MICRO
    assert reservation.as_tuple().exponent == -6
    rendered = format_max_budget(reservation)
    assert Decimal(rendered) == reservation
    assert len(rendered.split(".")[1]) == 6


@pytest.mark.parametrize("bad", ["0", "-0.5", "0.0000009", "NaN", "Infinity", "-Infinity"])
def test_reservation_rejects_unusable_limits(bad: str) -> None:
    with pytest.raises(ValueError):
        reservation_for(Decimal(bad))


@SETTINGS
@given(reported=st.none() | amounts(), computed=st.none() | amounts())
def test_completed_charge_is_the_max_valid_cost(reported: Decimal | None, computed: Decimal | None) -> None:
    valid = [c for c in (reported, computed) if c is not None]
    if not valid:
        with pytest.raises(ValueError):
            completed_charge(reported, computed)
    else:
        assert completed_charge(reported, computed) == max(valid)


# --------------------------------------------------------------------------- cost

token_counts = st.integers(min_value=0, max_value=2_000_000)


@st.composite
def model_tokens(draw: st.DrawFn) -> ModelTokens:
    return ModelTokens(draw(token_counts), draw(token_counts), draw(token_counts), draw(token_counts))


@st.composite
def usage_case(draw: st.DrawFn) -> tuple[dict[str, ModelTokens], CacheWrites, list[int]]:
    models = draw(st.lists(st.sampled_from(sorted(CLI_PRICES)), min_size=1, max_size=3, unique=True))
    totals = {m: draw(model_tokens()) for m in models}
    writes = CacheWrites()
    if len(totals) == 1:
        (only,) = totals.values()
        five = draw(st.integers(0, only.cache_creation_input_tokens))
        one = draw(st.integers(0, only.cache_creation_input_tokens - five))
        writes = CacheWrites(five, one)
    prompts = draw(st.lists(st.integers(0, 300_000), max_size=6))
    return totals, writes, prompts


def add(a: ModelTokens, b: ModelTokens) -> ModelTokens:
    return ModelTokens(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cache_read_input_tokens + b.cache_read_input_tokens,
        a.cache_creation_input_tokens + b.cache_creation_input_tokens,
    )


@SETTINGS
@given(
    case=usage_case(),
    extra=model_tokens(),
    extra_5m=st.integers(0, 100_000),
    extra_1h=st.integers(0, 100_000),
    extra_prompts=st.lists(st.integers(0, 300_000), max_size=3),
    prompt_growth=st.integers(0, 200_000),
    which=st.integers(0, 2),
)
def test_adding_tokens_never_lowers_the_cost(
    case: tuple[dict[str, ModelTokens], CacheWrites, list[int]],
    extra: ModelTokens,
    extra_5m: int,
    extra_1h: int,
    extra_prompts: list[int],
    prompt_growth: int,
    which: int,
) -> None:
    totals, writes, prompts = case
    base = compute_cost(totals, writes, prompts).usd
    models = sorted(totals)
    target = models[which % len(models)]
    grown = dict(totals)
    grown[target] = add(grown[target], extra)
    grown_writes = writes
    if len(totals) == 1:
        # New TTL-attributed writes are also new cache-creation tokens.
        grown[target] = add(grown[target], ModelTokens(0, 0, 0, extra_5m + extra_1h))
        grown_writes = CacheWrites(writes.ephemeral_5m + extra_5m, writes.ephemeral_1h + extra_1h)
    grown_prompts = [p + prompt_growth for p in prompts] + extra_prompts if prompts else []
    assert compute_cost(grown, grown_writes, grown_prompts).usd >= base
    # A second model appearing (writes become unattributed) never lowers the cost either.
    missing = [m for m in sorted(CLI_PRICES) if m not in grown]
    if missing:
        more = {**grown, missing[0]: extra}
        before = compute_cost(grown, grown_writes, grown_prompts).usd
        assert compute_cost(more, CacheWrites(), grown_prompts).usd >= before


@SETTINGS
@given(tokens=model_tokens(), prompts=st.lists(st.integers(0, 250_000), max_size=6))
def test_tier_two_iff_largest_prompt_over_100k(tokens: ModelTokens, prompts: list[int]) -> None:
    cost = compute_cost({"claude-haiku-5-5": tokens}, CacheWrites(), prompts)
    if prompts:
        largest = max(prompts)
        assert cost.basis["tierSource"] == "per-message"
    else:
        largest = tokens.input_tokens + tokens.cache_read_input_tokens + tokens.cache_creation_input_tokens
        assert cost.basis["tierSource"] == "aggregate"
    assert cost.basis["largestPromptTokens"] == largest
    assert cost.basis["tier"] == (2 if largest > 100_000 else 1)
    assert cost.basis["models"]["claude-haiku-5-5"]["tier"] == cost.basis["tier"]
    single_tier = compute_cost({"claude-haiku-4-5": tokens}, CacheWrites(), prompts)
    assert single_tier.basis["tier"] == 1


@pytest.mark.parametrize(("largest", "tier"), [(100_000, 1), (100_001, 2)])
def test_tier_boundary(largest: int, tier: int) -> None:
    tokens = ModelTokens(10, 10, 0, 0)
    assert compute_cost({"claude-haiku-5-5": tokens}, CacheWrites(), [5, largest]).basis["tier"] == tier


@SETTINGS
@given(input_tokens=token_counts, output_tokens=token_counts, prompts=st.lists(st.integers(0, 250_000), max_size=5))
def test_cost_is_the_hand_formula_without_cache(input_tokens: int, output_tokens: int, prompts: list[int]) -> None:
    tokens = ModelTokens(input_tokens, output_tokens, 0, 0)
    largest = max(prompts) if prompts else input_tokens
    if largest > 100_000:
        rate_in, rate_out = Fraction(1, 2), Fraction(5, 2)
    else:
        rate_in, rate_out = Fraction(1, 10), Fraction(1, 2)
    expected = (input_tokens * rate_in + output_tokens * rate_out) / 1_000_000
    cost = compute_cost({"claude-haiku-5-5": tokens}, CacheWrites(), prompts)
    assert Fraction(cost.usd) == expected
    assert cost.basis["cacheWriteUnattributedTokens"] == 0


@SETTINGS
@given(
    input_tokens=st.integers(0, 90_000 // 4),
    cache_read=st.integers(0, 90_000 // 4),
    writes_5m=st.integers(0, 90_000 // 4),
    writes_1h=st.integers(0, 90_000 // 4),
    unattributed=st.integers(0, 90_000 // 4),
    output_tokens=token_counts,
)
def test_cache_rates_single_model_tier_one(
    input_tokens: int, cache_read: int, writes_5m: int, writes_1h: int, unattributed: int, output_tokens: int
) -> None:
    creation = writes_5m + writes_1h + unattributed
    tokens = ModelTokens(input_tokens, output_tokens, cache_read, creation)
    cost = compute_cost({"claude-haiku-5-5": tokens}, CacheWrites(writes_5m, writes_1h), [])
    rate_in = Fraction(1, 10)
    expected = (
        input_tokens * rate_in
        + output_tokens * Fraction(1, 2)
        + cache_read * rate_in / 10
        + writes_5m * rate_in * Fraction(5, 4)
        + (writes_1h + unattributed) * rate_in * 2
    ) / 1_000_000
    assert Fraction(cost.usd) == expected
    assert cost.basis["tier"] == 1
    assert cost.basis["cacheWrite5mTokens"] == writes_5m
    assert cost.basis["cacheWrite1hTokens"] == writes_1h
    assert cost.basis["cacheWriteUnattributedTokens"] == unattributed
