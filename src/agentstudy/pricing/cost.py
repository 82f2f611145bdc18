"""Cost of one CLI attempt from the result's ``modelUsage`` (seed 000, "Cost"; digest 3.8).

Totals come from ``modelUsage``; per-message prompt sizes only choose the tier (the largest
single prompt > threshold puts every token of the attempt in tier 2; without per-message
sizes the aggregate prompt decides); cache writes are split by TTL from
``usage.cache_creation``, and writes not attributed to a TTL are priced at the 1-hour rate.
Everything is exact ``Decimal`` USD; the ``costBasis`` record is JSON-ready (camelCase).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentstudy.pricing.money import exact
from agentstudy.pricing.table import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
    CLI_PRICES,
    DEFAULT_TIER_THRESHOLD_TOKENS,
    ModelPrice,
)
from agentstudy.pricing.usd_json import usd_number

MILLION = Decimal(1_000_000)
CACHE_READ_NOTE = "cache reads priced at 0.1 x input (ARCHITECTURE decision 4); no study document states a rate"
MAX_TOKENS = 10**15
"""Largest token count accepted; a count above it is malformed (a cost problem)."""


class CostProblem(ValueError):
    """The usage cannot be priced: missing or malformed ``modelUsage``, or an unknown model."""


def _check_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise CostProblem(f"{what} is not an integer token count in [0, 10**15]")
    return value


@dataclass(frozen=True)
class ModelTokens:
    """Token totals of one model in ``modelUsage`` (all counts are tokens, integers >= 0).

    Raises:
        CostProblem: a count that is not an integer in [0, 10**15].
    """

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            _check_count(getattr(self, name), name)

    @property
    def prompt_tokens(self) -> int:
        """Input + cache read + cache write tokens (the aggregate prompt of this model)."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


@dataclass(frozen=True)
class CacheWrites:
    """Cache-write split by TTL from ``usage.cache_creation`` (tokens).

    Raises:
        CostProblem: a count that is not an integer in [0, 10**15].
    """

    ephemeral_5m: int = 0
    ephemeral_1h: int = 0

    def __post_init__(self) -> None:
        _check_count(self.ephemeral_5m, "ephemeral_5m_input_tokens")
        _check_count(self.ephemeral_1h, "ephemeral_1h_input_tokens")


@dataclass(frozen=True)
class AttemptCost:
    """The computed cost and how it was computed.

    ``usd`` is exact; ``basis`` is the JSON-ready ``costBasis`` record (tier, source, rates,
    largest prompt, 5m / 1h / unattributed write counts, per-model details under ``models``).
    """

    usd: Decimal
    basis: dict[str, Any]


def parse_model_usage(model_usage: Any) -> dict[str, ModelTokens]:
    """Read ``result.modelUsage`` into token totals per model.

    An empty object is valid zero usage: the CLI reports it when no API call was billed (an
    API error before any usage). A missing count is 0; other keys (``costUSD`` ...) are ignored.

    Raises:
        CostProblem: when it is absent, not an object, an entry is not an object, or a count is
            not an integer in [0, 10**15].
    """
    if not isinstance(model_usage, Mapping):
        raise CostProblem("modelUsage is missing or not an object")
    totals: dict[str, ModelTokens] = {}
    for model, entry in model_usage.items():
        if not isinstance(entry, Mapping):
            raise CostProblem(f"modelUsage entry for {model} is not an object")
        counts = [
            _check_count(entry.get(key, 0), f"modelUsage field {key}")
            for key in ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
        ]
        totals[str(model)] = ModelTokens(*counts)
    return totals


def _price(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice:
    try:
        return table[model]
    except KeyError:
        raise CostProblem(f"model {model} is not in the price table") from None


def largest_prompt(totals: Mapping[str, ModelTokens], message_prompts: Sequence[int]) -> tuple[int, str]:
    """The prompt size that picks the tier (tokens) and its source.

    ``("per-message")``: the largest distinct API message's prompt (input + cache read + cache
    write); ``("aggregate")`` when no per-message size is known: the sum of every model's
    input, cache read and cache write totals.

    Raises:
        CostProblem: a per-message size that is not an integer in [0, 10**15].
    """
    if message_prompts:
        return max(_check_count(p, "a per-message prompt size") for p in message_prompts), "per-message"
    return sum(t.prompt_tokens for t in totals.values()), "aggregate"


def _threshold(prices: Sequence[ModelPrice]) -> int | None:
    tiered = {p.tier_threshold_tokens for p in prices if len(p.tiers) > 1}
    if not tiered:
        return DEFAULT_TIER_THRESHOLD_TOKENS
    return tiered.pop() if len(tiered) == 1 else None


def compute_cost(
    totals: Mapping[str, ModelTokens],
    cache_writes: CacheWrites,
    message_prompts: Sequence[int],
    table: Mapping[str, ModelPrice] = CLI_PRICES,
) -> AttemptCost:
    """Price an attempt's token totals at list price (seed 000, "Cost"; digest 3.8).

    Per model: ``input x in + output x out + cache read x 0.1 in + 5m writes x 1.25 in +
    (1h + unattributed writes) x 2 in``, divided by 1e6, with the rates of the tier chosen by
    :func:`largest_prompt` (strictly above the model's threshold -> tier 2, for every token).

    Args:
        totals: ``modelUsage`` totals per model (tokens).
        cache_writes: the 5m / 1h split of cache writes (tokens); applied only when the
            attempt used a single model, otherwise every write is unattributed (1-hour rate).
        message_prompts: the prompt size of each distinct API message (tokens); empty when
            unknown, then the aggregate prompt decides.
        table: price table in USD per million tokens.

    Returns:
        The exact cost in USD and its ``costBasis``.

    Raises:
        CostProblem: a model is absent from the table, the TTL split exceeds the model's
            cache writes, or a per-message size is malformed.
    """
    largest, source = largest_prompt(totals, message_prompts)
    prices = {model: _price(model, table) for model in totals}
    split = cache_writes if len(totals) == 1 else CacheWrites()
    total = Decimal(0)
    models: dict[str, Any] = {}
    writes_5m = writes_1h = unattributed = 0
    tier_numbers = [1]
    for model, tokens in totals.items():
        price = prices[model]
        index = price.tier_index(largest)
        tier = price.tiers[index]
        if split.ephemeral_5m + split.ephemeral_1h > tokens.cache_creation_input_tokens:
            raise CostProblem("cache_creation TTL split exceeds cacheCreationInputTokens")
        rest = tokens.cache_creation_input_tokens - split.ephemeral_5m - split.ephemeral_1h
        with exact():
            usd = (
                tokens.input_tokens * tier.input
                + tokens.output_tokens * tier.output
                + tokens.cache_read_input_tokens * tier.cache_read
                + split.ephemeral_5m * tier.cache_write_5m
                + (split.ephemeral_1h + rest) * tier.cache_write_1h
            ).scaleb(-6)
            total += usd
        writes_5m += split.ephemeral_5m
        writes_1h += split.ephemeral_1h
        unattributed += rest
        tier_numbers.append(index + 1)
        models[model] = {
            "tier": index + 1,
            "tierThresholdTokens": price.tier_threshold_tokens if len(price.tiers) > 1 else None,
            "inputUsdPerMillion": usd_number(tier.input),
            "outputUsdPerMillion": usd_number(tier.output),
            "cacheReadUsdPerMillion": usd_number(tier.cache_read),
            "cacheWrite5mUsdPerMillion": usd_number(tier.cache_write_5m),
            "cacheWrite1hUsdPerMillion": usd_number(tier.cache_write_1h),
            "inputTokens": tokens.input_tokens,
            "outputTokens": tokens.output_tokens,
            "cacheReadInputTokens": tokens.cache_read_input_tokens,
            "cacheCreationInputTokens": tokens.cache_creation_input_tokens,
            "priceSource": price.source,
            "usd": usd_number(usd),
        }
    basis: dict[str, Any] = {
        "tier": max(tier_numbers),
        "tierSource": source,
        "tierThresholdTokens": _threshold(list(prices.values())),
        "largestPromptTokens": largest,
        "cacheWrite5mTokens": writes_5m,
        "cacheWrite1hTokens": writes_1h,
        "cacheWriteUnattributedTokens": unattributed,
        "cacheWriteUnattributedPricedAs": "1h",
        "cacheWrite5mMultiplier": float(CACHE_WRITE_5M_MULTIPLIER),
        "cacheWrite1hMultiplier": float(CACHE_WRITE_1H_MULTIPLIER),
        "cacheReadMultiplier": float(CACHE_READ_MULTIPLIER),
        "cacheReadRateNote": CACHE_READ_NOTE,
        "models": models,
    }
    return AttemptCost(usd=total, basis=basis)
