"""Property tests of reservations, charges and the list-price cost (seed 000, "Budget" and "Cost").

Sequences of attempts against a cap are the state machines of ``test_budget_machine.py``;
here: the reservation's rounding, the completed charge, and tier pricing (monotone in every
token count, and crossing the threshold never lowers the price of the same usage).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstudy.pricing.budget import (
    MICRO,
    completed_charge,
    format_max_budget,
    reservation_for,
)
from agentstudy.pricing.cost import CacheWrites, ModelTokens, compute_cost
from agentstudy.pricing.table import CLI_PRICES, ModelPrice, Tier

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def amounts(max_units: int = 10**9) -> st.SearchStrategy[Decimal]:
    """Non-negative Decimal USD amounts with 6, 7 or 8 decimals."""
    return st.builds(
        lambda n, places: Decimal(n).scaleb(-places),
        st.integers(min_value=0, max_value=max_units),
        st.sampled_from([6, 7, 8]),
    )


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
    input_tokens=st.integers(0, 100_000 // 5),
    cache_read=st.integers(0, 100_000 // 5),
    writes_5m=st.integers(0, 100_000 // 5),
    writes_1h=st.integers(0, 100_000 // 5),
    unattributed=st.integers(0, 100_000 // 5),
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


# --------------------------------------------------------------------------- tier pricing, one count at a time

FIELDS = ("input", "output", "cache_read", "unattributed", "write_5m", "write_1h")


def _grow(tokens: ModelTokens, writes: CacheWrites, field: str, extra: int) -> tuple[ModelTokens, CacheWrites]:
    """Add ``extra`` tokens to one count; TTL-attributed writes are also cache-creation tokens."""
    i, o, r, c = (tokens.input_tokens, tokens.output_tokens, tokens.cache_read_input_tokens,
                  tokens.cache_creation_input_tokens)
    five, hour = writes.ephemeral_5m, writes.ephemeral_1h
    if field == "input":
        i += extra
    elif field == "output":
        o += extra
    elif field == "cache_read":
        r += extra
    elif field == "unattributed":
        c += extra
    elif field == "write_5m":
        c, five = c + extra, five + extra
    else:
        c, hour = c + extra, hour + extra
    return ModelTokens(i, o, r, c), CacheWrites(five, hour)


@st.composite
def single_model_usage(draw: st.DrawFn) -> tuple[str, ModelTokens, CacheWrites]:
    model = draw(st.sampled_from(sorted(CLI_PRICES)))
    tokens = draw(model_tokens())
    five = draw(st.integers(0, tokens.cache_creation_input_tokens))
    hour = draw(st.integers(0, tokens.cache_creation_input_tokens - five))
    return model, tokens, CacheWrites(five, hour)


@SETTINGS
@given(
    usage=single_model_usage(),
    field=st.sampled_from(FIELDS),
    extra=st.integers(1, 300_000),
    prompts=st.none() | st.lists(st.integers(0, 300_000), min_size=1, max_size=5),
)
def test_cost_rises_with_every_single_count(
    usage: tuple[str, ModelTokens, CacheWrites], field: str, extra: int, prompts: list[int] | None
) -> None:
    model, tokens, writes = usage
    grown, grown_writes = _grow(tokens, writes, field, extra)
    if prompts is None:
        # Aggregate: the bigger usage may also cross the threshold.
        base, more = compute_cost({model: tokens}, writes, []), compute_cost({model: grown}, grown_writes, [])
        assert more.basis["tier"] >= base.basis["tier"]
    else:
        base, more = compute_cost({model: tokens}, writes, prompts), compute_cost({model: grown}, grown_writes, prompts)
        assert more.basis["tier"] == base.basis["tier"]
    # Every rate in the table is above zero, so one more token always costs more.
    assert more.usd > base.usd


@SETTINGS
@given(usage=single_model_usage(), prompts=st.lists(st.integers(0, 300_000), min_size=1, max_size=5),
       index=st.integers(0, 4), extra=st.integers(0, 300_000), new_message=st.none() | st.integers(0, 300_000))
def test_bigger_or_more_messages_never_lower_the_cost(
    usage: tuple[str, ModelTokens, CacheWrites], prompts: list[int], index: int, extra: int, new_message: int | None
) -> None:
    model, tokens, writes = usage
    grown = list(prompts)
    grown[index % len(grown)] += extra
    if new_message is not None:
        grown.append(new_message)
    assert compute_cost({model: tokens}, writes, grown).usd >= compute_cost({model: tokens}, writes, prompts).usd


@SETTINGS
@given(usage=single_model_usage(), below=st.integers(0, 100_000), above=st.integers(100_001, 10**7))
def test_crossing_the_threshold_never_lowers_the_price_of_the_same_usage(
    usage: tuple[str, ModelTokens, CacheWrites], below: int, above: int
) -> None:
    model, tokens, writes = usage
    tier_one = compute_cost({model: tokens}, writes, [below])
    tier_two = compute_cost({model: tokens}, writes, [above])
    assert tier_one.basis["tier"] == 1
    assert tier_two.usd >= tier_one.usd
    priced_tokens = tokens.input_tokens + tokens.output_tokens + tokens.cache_read_input_tokens
    if len(CLI_PRICES[model].tiers) == 2 and priced_tokens + tokens.cache_creation_input_tokens > 0:
        # claude-haiku-5-5's second tier is dearer in every rate: any token makes it strictly dearer.
        assert tier_two.basis["tier"] == 2
        assert tier_two.usd > tier_one.usd


rates = st.integers(0, 10**6).map(lambda n: Decimal(n).scaleb(-4))


@st.composite
def tiered_price(draw: st.DrawFn) -> ModelPrice:
    """Any valid two-tier row: the second tier is at least as dear in both rates."""
    low_in, low_out, up_in, up_out = draw(rates), draw(rates), draw(rates), draw(rates)
    first = Tier(low_in, low_out)
    second = Tier(low_in + up_in, low_out + up_out)
    return ModelPrice((first, second), "generated", draw(st.integers(1, 200_000)))


@SETTINGS
@given(price=tiered_price(), tokens=model_tokens(), writes_5m=st.integers(0, 10**6), largest=st.integers(0, 400_000))
def test_threshold_crossing_is_monotone_for_any_valid_row(
    price: ModelPrice, tokens: ModelTokens, writes_5m: int, largest: int
) -> None:
    table = {"m": price}
    writes = CacheWrites(min(writes_5m, tokens.cache_creation_input_tokens), 0)
    at = compute_cost({"m": tokens}, writes, [largest], table)
    over = compute_cost({"m": tokens}, writes, [max(largest, price.tier_threshold_tokens + 1)], table)
    assert over.usd >= at.usd
    assert at.basis["tier"] == (2 if largest > price.tier_threshold_tokens else 1)


@SETTINGS
@given(price=tiered_price(), cut_in=st.integers(1, 10**4), cut_out=st.integers(0, 10**4))
def test_a_row_with_a_cheaper_second_tier_is_refused(price: ModelPrice, cut_in: int, cut_out: int) -> None:
    first, second = price.tiers
    lower_in, lower_out = first.input - Decimal(cut_in).scaleb(-4), first.output - Decimal(cut_out).scaleb(-4)
    if lower_in >= 0:
        with pytest.raises(ValueError):
            ModelPrice((first, Tier(lower_in, second.output)), "generated")
    if 0 <= lower_out < first.output:
        with pytest.raises(ValueError):
            ModelPrice((first, Tier(second.input, lower_out)), "generated")
    # The generated row itself is accepted.
    assert ModelPrice((first, second), "generated").tiers == (first, second)


@SETTINGS
@given(usage=single_model_usage(), other=model_tokens(), prompts=st.lists(st.integers(0, 100_000), max_size=3))
def test_cost_is_additive_within_one_tier(
    usage: tuple[str, ModelTokens, CacheWrites], other: ModelTokens, prompts: list[int]
) -> None:
    # With per-message sizes fixing tier 1, the cost of two usages together is exactly the sum.
    model, tokens, writes = usage
    prompts = prompts or [0]
    together = compute_cost({model: add(tokens, other)}, writes, prompts).usd
    first = compute_cost({model: tokens}, writes, prompts).usd
    second = compute_cost({model: other}, CacheWrites(), prompts).usd
    assert together == first + second
