"""Cost of one CLI attempt from the result's ``modelUsage`` (seed 000, "Cost").

Totals come from ``modelUsage``; per-message prompt sizes only choose the tier; cache
writes are split by TTL from ``usage.cache_creation``. Everything is ``Decimal`` USD.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentstudy.pricing.table import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
    CLI_PRICES,
    ModelPrice,
)

MILLION = Decimal(1_000_000)


class CostProblem(ValueError):
    """The usage cannot be priced: missing or malformed ``modelUsage``, or an unknown model."""


@dataclass(frozen=True)
class ModelTokens:
    """Token totals of one model in ``modelUsage`` (all counts are tokens, integers >= 0)."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


@dataclass(frozen=True)
class CacheWrites:
    """Cache-write split by TTL from ``usage.cache_creation`` (tokens)."""

    ephemeral_5m: int = 0
    ephemeral_1h: int = 0


@dataclass(frozen=True)
class AttemptCost:
    """The computed cost and how it was computed.

    ``usd`` is exact; ``basis`` is the JSON-ready ``costBasis`` record (tier, source, rates,
    largest prompt, 5m / 1h / unattributed write counts).
    """

    usd: Decimal
    basis: dict[str, Any]


def _count(entry: Mapping[str, Any], key: str) -> int:
    value = entry.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CostProblem(f"modelUsage field {key} is not a non-negative integer")
    return value


def parse_model_usage(model_usage: Any) -> dict[str, ModelTokens]:
    """Read ``result.modelUsage`` into token totals per model.

    An empty object is valid: the CLI reports it when no API call was billed (an API error
    before any usage).

    Raises:
        CostProblem: when it is absent, not an object, or has a malformed count.
    """
    if not isinstance(model_usage, Mapping):
        raise CostProblem("modelUsage is missing or not an object")
    totals: dict[str, ModelTokens] = {}
    for model, entry in model_usage.items():
        if not isinstance(entry, Mapping):
            raise CostProblem(f"modelUsage entry for {model} is not an object")
        totals[str(model)] = ModelTokens(
            input_tokens=_count(entry, "inputTokens"),
            output_tokens=_count(entry, "outputTokens"),
            cache_read_input_tokens=_count(entry, "cacheReadInputTokens"),
            cache_creation_input_tokens=_count(entry, "cacheCreationInputTokens"),
        )
    return totals


def _price(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice:
    try:
        return table[model]
    except KeyError:
        raise CostProblem(f"model {model} is not in the price table") from None


def compute_cost(
    totals: Mapping[str, ModelTokens],
    cache_writes: CacheWrites,
    message_prompts: Sequence[int],
    table: Mapping[str, ModelPrice] = CLI_PRICES,
) -> AttemptCost:
    """Price an attempt's token totals (seed 000, "Cost").

    Args:
        totals: ``modelUsage`` totals per model (tokens).
        cache_writes: the 5m / 1h split of cache writes (tokens); applied only when the
            attempt used a single model, otherwise every write is unattributed.
        message_prompts: the prompt size (input + cache read + cache write tokens) of each
            distinct API message; empty when unknown, then the aggregate prompt decides.
        table: price table in USD per million tokens.

    Returns:
        The exact cost in USD and its ``costBasis``.

    Raises:
        CostProblem: a model is absent from the table, or the TTL split exceeds the writes.
    """
    if message_prompts:
        largest, source = max(message_prompts), "per-message"
    else:
        largest = sum(
            t.input_tokens + t.cache_read_input_tokens + t.cache_creation_input_tokens for t in totals.values()
        )
        source = "aggregate"
    total = Decimal(0)
    models: dict[str, Any] = {}
    writes_5m = writes_1h = unattributed = 0
    tiers_used: set[int] = set()
    for model, tokens in totals.items():
        price = _price(model, table)
        tier_index = 1 if len(price.tiers) > 1 and largest > price.tier_threshold_tokens else 0
        tiers_used.add(tier_index + 1)
        tier = price.tiers[tier_index]
        split = cache_writes if len(totals) == 1 else CacheWrites()
        attributed = split.ephemeral_5m + split.ephemeral_1h
        if attributed > tokens.cache_creation_input_tokens:
            raise CostProblem("cache_creation TTL split exceeds cacheCreationInputTokens")
        rest = tokens.cache_creation_input_tokens - attributed
        usd = (
            tokens.input_tokens * tier.input
            + tokens.output_tokens * tier.output
            + tokens.cache_read_input_tokens * tier.input * CACHE_READ_MULTIPLIER
            + split.ephemeral_5m * tier.input * CACHE_WRITE_5M_MULTIPLIER
            + (split.ephemeral_1h + rest) * tier.input * CACHE_WRITE_1H_MULTIPLIER
        ) / MILLION
        total += usd
        writes_5m += split.ephemeral_5m
        writes_1h += split.ephemeral_1h
        unattributed += rest
        models[model] = {
            "tier": tier_index + 1,
            "inputUsdPerMillion": float(tier.input),
            "outputUsdPerMillion": float(tier.output),
            "priceSource": price.source,
            "usd": float(usd),
        }
    basis: dict[str, Any] = {
        "tier": max(tiers_used) if tiers_used else 1,
        "tierSource": source,
        "tierThresholdTokens": 100_000,
        "largestPromptTokens": largest,
        "cacheWrite5mTokens": writes_5m,
        "cacheWrite1hTokens": writes_1h,
        "cacheWriteUnattributedTokens": unattributed,
        "cacheWrite5mMultiplier": float(CACHE_WRITE_5M_MULTIPLIER),
        "cacheWrite1hMultiplier": float(CACHE_WRITE_1H_MULTIPLIER),
        "cacheReadMultiplier": float(CACHE_READ_MULTIPLIER),
        "cacheReadRateNote": "cache reads priced at 0.1 x input, the CLI's own rate; no study document states one",
        "models": models,
    }
    return AttemptCost(usd=total, basis=basis)
