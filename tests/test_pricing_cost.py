"""List-price cost (seed 000 "Cost", digest 3.8): hand-computed values and the real CLI's own costs."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from agentstudy.pricing.cost import (
    AttemptCost,
    CacheWrites,
    CostProblem,
    ModelTokens,
    compute_cost,
    largest_prompt,
    parse_model_usage,
)
from agentstudy.pricing.table import CLI_PRICES, ModelPrice, Tier

HAIKU55 = "claude-haiku-5-5"


def cost(
    tokens: ModelTokens, model: str = HAIKU55, writes: CacheWrites | None = None, prompts: list[int] | None = None
) -> AttemptCost:
    """Price one model's totals."""
    return compute_cost({model: tokens}, writes or CacheWrites(), prompts or [])


# --------------------------------------------------------------------------- tier cliff


def test_tier_cliff_at_exactly_100000_is_tier_one() -> None:
    # 100,000 input + 1,000 output at 0.10 / 0.50 per million: 0.01 + 0.0005.
    result = cost(ModelTokens(100_000, 1_000, 0, 0), prompts=[100_000])
    assert result.usd == Decimal("0.0105")
    assert result.basis["tier"] == 1
    assert result.basis["models"][HAIKU55]["inputUsdPerMillion"] == 0.10


def test_tier_cliff_at_100001_prices_every_token_in_tier_two() -> None:
    # 100,001 x 0.50 + 1,000 x 2.50 = 50,000.5 + 2,500 micro-units -> 0.0525005 USD.
    result = cost(ModelTokens(100_001, 1_000, 0, 0), prompts=[100_001])
    assert result.usd == Decimal("0.0525005")
    assert result.basis["tier"] == 2
    assert result.basis["largestPromptTokens"] == 100_001
    assert result.basis["models"][HAIKU55]["outputUsdPerMillion"] == 2.50


def test_one_large_message_moves_the_whole_attempt_to_tier_two() -> None:
    # Two messages: 150,000 and 2,000 prompt tokens; totals 152,000 in, 1,100 out, all at tier 2:
    # 152,000 x 0.5 + 1,100 x 2.5 = 76,000 + 2,750 -> 0.07875 USD.
    result = cost(ModelTokens(152_000, 1_100, 0, 0), prompts=[150_000, 2_000])
    assert result.usd == Decimal("0.07875")
    assert (result.basis["tier"], result.basis["tierSource"]) == (2, "per-message")


def test_per_message_sizes_win_over_the_aggregate() -> None:
    # Aggregate 180,000 > 100k, but no single message exceeds it: tier 1.
    result = cost(ModelTokens(180_000, 0, 0, 0), prompts=[90_000, 90_000])
    assert result.basis["tier"] == 1
    assert result.usd == Decimal("0.018")


def test_aggregate_decides_without_per_message_sizes() -> None:
    # Input 60,000 + cache read 30,000 + cache write 10,001 = 100,001 > 100k: tier 2.
    result = cost(ModelTokens(60_000, 0, 30_000, 10_001))
    assert (result.basis["tier"], result.basis["tierSource"], result.basis["largestPromptTokens"]) == (
        2,
        "aggregate",
        100_001,
    )
    # 60,000 x 0.5 + 30,000 x 0.05 + 10,001 x 1.0 (unattributed: 2 x 0.5) = 30,000 + 1,500 + 10,001.
    assert result.usd == Decimal("0.041501")
    at_limit = cost(ModelTokens(60_000, 0, 30_000, 10_000))
    assert at_limit.basis["tier"] == 1


def test_cache_read_counts_towards_the_prompt() -> None:
    # Measured with the real CLI: 1,000 input + 150,000 cache read is a tier-2 prompt.
    result = cost(ModelTokens(1_000, 1_000, 150_000, 0), prompts=[151_000])
    assert result.usd == Decimal("0.0105")  # 500 + 2,500 + 150,000 x 0.05
    assert result.basis["tier"] == 2


def test_single_tier_models_ignore_the_threshold() -> None:
    result = cost(ModelTokens(150_000, 1_000, 0, 0), model="claude-haiku-4-5", prompts=[150_000])
    assert result.usd == Decimal("0.155")
    assert result.basis["tier"] == 1
    assert result.basis["models"]["claude-haiku-4-5"]["tierThresholdTokens"] is None


# --------------------------------------------------------------------------- cache writes


def test_cache_writes_by_ttl_and_unattributed_at_the_one_hour_rate() -> None:
    # haiku-4-5 at 1 / 5: input 1,000 -> 1,000; output 200 -> 1,000; read 3,000 x 0.1 -> 300;
    # 5m 1,000 x 1.25 -> 1,250; 1h 2,000 x 2 -> 4,000; unattributed 1,000 x 2 -> 2,000. Sum 9,550.
    result = cost(ModelTokens(1_000, 200, 3_000, 4_000), "claude-haiku-4-5", CacheWrites(1_000, 2_000))
    assert result.usd == Decimal("0.00955")
    basis = result.basis
    assert (basis["cacheWrite5mTokens"], basis["cacheWrite1hTokens"], basis["cacheWriteUnattributedTokens"]) == (
        1_000,
        2_000,
        1_000,
    )
    assert basis["cacheWriteUnattributedPricedAs"] == "1h"
    model = basis["models"]["claude-haiku-4-5"]
    assert model["cacheReadUsdPerMillion"] == 0.1
    assert model["cacheWrite5mUsdPerMillion"] == 1.25
    assert model["cacheWrite1hUsdPerMillion"] == 2.0


def test_all_writes_unattributed_without_a_split() -> None:
    # 4,000 writes x 2 x 1 = 8,000 + 1,000 + 1,000 + 300.
    result = cost(ModelTokens(1_000, 200, 3_000, 4_000), "claude-haiku-4-5")
    assert result.usd == Decimal("0.0103")
    assert result.basis["cacheWriteUnattributedTokens"] == 4_000


def test_split_is_ignored_with_several_models() -> None:
    totals = {"claude-haiku-4-5": ModelTokens(0, 0, 0, 1_000), HAIKU55: ModelTokens(0, 0, 0, 1_000)}
    result = compute_cost(totals, CacheWrites(500, 0), [])
    # Both models' writes at 2 x input: 1,000 x 2 + 1,000 x 0.2 = 2,200 micro-units.
    assert result.usd == Decimal("0.0022")
    assert result.basis["cacheWrite5mTokens"] == 0
    assert result.basis["cacheWriteUnattributedTokens"] == 2_000
    assert result.basis["tierThresholdTokens"] == 100_000


def test_split_larger_than_the_writes_is_a_cost_problem() -> None:
    with pytest.raises(CostProblem, match="TTL split"):
        cost(ModelTokens(0, 0, 0, 100), writes=CacheWrites(60, 41))


# --------------------------------------------------------------------------- problems and parsing


def test_unknown_model_is_a_cost_problem_never_a_guess() -> None:
    with pytest.raises(CostProblem, match="not in the price table"):
        compute_cost({"claude-fake-model-x": ModelTokens(1, 1, 0, 0)}, CacheWrites(), [])


def test_empty_model_usage_is_valid_zero_usage() -> None:
    totals = parse_model_usage({})
    result = compute_cost(totals, CacheWrites(), [])
    assert totals == {}
    assert result.usd == 0
    assert (result.basis["tier"], result.basis["tierSource"], result.basis["models"]) == (1, "aggregate", {})


@pytest.mark.parametrize(
    "model_usage",
    [
        None,
        [],
        "x",
        {"claude-haiku-4-5": 3},
        {"claude-haiku-4-5": {"inputTokens": -1}},
        {"claude-haiku-4-5": {"inputTokens": 1.5}},
        {"claude-haiku-4-5": {"outputTokens": True}},
        {"claude-haiku-4-5": {"cacheReadInputTokens": "10"}},
        {"claude-haiku-4-5": {"cacheCreationInputTokens": 10**16}},
    ],
)
def test_malformed_model_usage_is_a_cost_problem(model_usage: Any) -> None:
    with pytest.raises(CostProblem):
        parse_model_usage(model_usage)


def test_parse_model_usage_reads_counts_and_ignores_other_keys() -> None:
    totals = parse_model_usage(
        {"claude-haiku-4-5": {"inputTokens": 7, "outputTokens": 3, "cacheReadInputTokens": 2, "costUSD": 9.9}}
    )
    assert totals == {"claude-haiku-4-5": ModelTokens(7, 3, 2, 0)}


@pytest.mark.parametrize("prompts", [[-1], [True], [1.0], [10**16]])
def test_malformed_per_message_sizes_are_a_cost_problem(prompts: list[Any]) -> None:
    with pytest.raises(CostProblem):
        largest_prompt({}, prompts)


def test_custom_table_threshold_is_used() -> None:
    table = {"m": ModelPrice((Tier(Decimal(1), Decimal(1)), Tier(Decimal(3), Decimal(3))), "test", 10)}
    below = compute_cost({"m": ModelTokens(10, 0, 0, 0)}, CacheWrites(), [], table)
    above = compute_cost({"m": ModelTokens(11, 0, 0, 0)}, CacheWrites(), [], table)
    assert (below.usd, below.basis["tierThresholdTokens"]) == (Decimal("0.00001"), 10)
    assert (above.usd, above.basis["tier"]) == (Decimal("0.000033"), 2)


def test_table_rows_carry_their_sources() -> None:
    assert set(CLI_PRICES) == {"claude-haiku-5-5", "claude-haiku-4-5", "claude-sonnet-5-5"}
    assert "study protocol" in CLI_PRICES[HAIKU55].source
    for model in ("claude-haiku-4-5", "claude-sonnet-5-5"):
        assert "Claude Code 2.1.296" in CLI_PRICES[model].source
