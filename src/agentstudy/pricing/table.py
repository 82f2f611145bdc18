"""The price table ``CLI_PRICES`` (seed 000, "Cost"): USD per million tokens, each row sourced.

Prices are data, never flags. A model absent from the table is a cost problem for the
caller, never a guessed price. Cache rates derive from the input rate of the tier in use:
5-minute writes at 1.25 x, 1-hour writes at 2 x (unattributed writes at the 1-hour rate),
reads at 0.1 x. A table row is checked when it is built: rates are finite and >= 0, and a
higher tier never has a lower rate than the tier below it (so crossing the threshold can
only raise the price of the same usage).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentstudy.pricing.money import exact
from agentstudy.pricing.usd_json import usd_number

CACHE_WRITE_5M_MULTIPLIER = Decimal("1.25")
CACHE_WRITE_1H_MULTIPLIER = Decimal("2")
CACHE_READ_MULTIPLIER = Decimal("0.1")
"""Cache reads at 0.1 x input (ARCHITECTURE decision 4; no study document states a rate). Claude
Code 2.1.296 applies 0.1 x to claude-haiku-4-5 and claude-haiku-5-5, but 0.05 x to claude-sonnet-5-5."""

DEFAULT_TIER_THRESHOLD_TOKENS = 100_000
"""Tier 2 applies when the largest prompt exceeds this many tokens (strictly greater)."""


@dataclass(frozen=True)
class Tier:
    """One price tier: ``input`` and ``output`` in USD per million tokens.

    Raises:
        ValueError: a rate that is not a finite ``Decimal`` >= 0.
    """

    input: Decimal
    output: Decimal

    def __post_init__(self) -> None:
        for rate in (self.input, self.output):
            if not isinstance(rate, Decimal) or not rate.is_finite() or rate < 0:
                raise ValueError("a tier rate must be a finite Decimal >= 0 (USD per million tokens)")

    @property
    def cache_read(self) -> Decimal:
        """Cache-read rate, USD per million tokens (0.1 x input)."""
        with exact():
            return self.input * CACHE_READ_MULTIPLIER

    @property
    def cache_write_5m(self) -> Decimal:
        """5-minute cache-write rate, USD per million tokens (1.25 x input)."""
        with exact():
            return self.input * CACHE_WRITE_5M_MULTIPLIER

    @property
    def cache_write_1h(self) -> Decimal:
        """1-hour (and unattributed) cache-write rate, USD per million tokens (2 x input)."""
        with exact():
            return self.input * CACHE_WRITE_1H_MULTIPLIER


@dataclass(frozen=True)
class ModelPrice:
    """Prices of one model.

    ``tiers[0]`` applies when no prompt exceeds ``tier_threshold_tokens``; ``tiers[1]``
    (when present) applies to every token of an attempt whose largest prompt exceeds it.
    ``source`` says where the figures come from.

    Raises:
        ValueError: no tier, more than two tiers, a threshold below 1, or a second tier
            with a lower input or output rate than the first.
    """

    tiers: tuple[Tier, ...]
    source: str
    tier_threshold_tokens: int = DEFAULT_TIER_THRESHOLD_TOKENS

    def __post_init__(self) -> None:
        if not 1 <= len(self.tiers) <= 2:
            raise ValueError("a model has one or two price tiers")
        if self.tier_threshold_tokens < 1:
            raise ValueError("the tier threshold must be at least one token")
        for lower, upper in zip(self.tiers, self.tiers[1:], strict=False):
            if upper.input < lower.input or upper.output < lower.output:
                raise ValueError("a higher tier must not be cheaper than the tier below it")

    def tier_index(self, largest_prompt_tokens: int) -> int:
        """0 (tier 1) or 1 (tier 2): tier 2 iff it exists and the prompt exceeds the threshold."""
        return 1 if len(self.tiers) > 1 and largest_prompt_tokens > self.tier_threshold_tokens else 0


CLI_PRICES: dict[str, ModelPrice] = {
    "claude-haiku-5-5": ModelPrice(
        tiers=(Tier(Decimal("0.10"), Decimal("0.50")), Tier(Decimal("0.50"), Decimal("2.50"))),
        source="study protocol minimal-study-v1 (upper prices; second tier above 100,000 prompt tokens)",
    ),
    "claude-haiku-4-5": ModelPrice(
        tiers=(Tier(Decimal("1"), Decimal("5")),),
        source="list price applied by Claude Code 2.1.296 in its own costUSD (measured 2026-11-30)",
    ),
    "claude-sonnet-5-5": ModelPrice(
        tiers=(Tier(Decimal("2"), Decimal("10")),),
        source=(
            "list price applied by Claude Code 2.1.296 in its own costUSD (measured 2026-11-30); "
            "the CLI prices this model's cache reads at 0.05 x input, the table at 0.1 x"
        ),
    ),
}


@dataclass(frozen=True)
class ModelLimits:
    """What one request to a model may hold (tokens): the prompt it accepts and the output it may return.

    ``context_window_tokens`` bounds a prompt (input, cache writes and cache reads together);
    ``max_output_tokens`` bounds one response. ``source`` says where and when they were measured.

    Raises:
        ValueError: a bound below one token, or an empty source.
    """

    context_window_tokens: int
    max_output_tokens: int
    source: str

    def __post_init__(self) -> None:
        if self.context_window_tokens < 1 or self.max_output_tokens < 1:
            raise ValueError("a model's context window and maximum output are at least one token")
        if not self.source.strip():
            raise ValueError("a model's limits need a source")


_LIMITS_SOURCE = (
    "modelUsage.contextWindow / maxOutputTokens reported by Claude Code 2.1.296 for this model "
    "(measured 2026-12-01 against the local rehearsal server; shared/transcripts agree for claude-haiku-4-5)"
)

MODEL_LIMITS: dict[str, ModelLimits] = {
    "claude-haiku-5-5": ModelLimits(1_000_000, 128_000, _LIMITS_SOURCE),
    "claude-haiku-4-5": ModelLimits(200_000, 32_000, _LIMITS_SOURCE),
    "claude-sonnet-5-5": ModelLimits(1_000_000, 128_000, _LIMITS_SOURCE),
}
"""Every ``CLI_PRICES`` model's request limits (issue 19, ``--strict-cap``'s worst-case turn); data, never flags."""


def price_entry(model: str, table: Mapping[str, ModelPrice] = CLI_PRICES) -> dict[str, Any] | None:
    """The ledger's JSON ``prices`` entry for ``model`` (USD per million tokens), or ``None`` if absent.

    Shape: ``{source, tierThresholdTokens, tiers: [{input, output}, ...],
    cacheWrite5mMultiplier, cacheWrite1hMultiplier, cacheReadMultiplier}``; numbers are
    converted to JSON floats here, at the edge.
    """
    price = table.get(model)
    if price is None:
        return None
    return {
        "source": price.source,
        "tierThresholdTokens": price.tier_threshold_tokens,
        "tiers": [{"input": usd_number(t.input), "output": usd_number(t.output)} for t in price.tiers],
        "cacheWrite5mMultiplier": float(CACHE_WRITE_5M_MULTIPLIER),
        "cacheWrite1hMultiplier": float(CACHE_WRITE_1H_MULTIPLIER),
        "cacheReadMultiplier": float(CACHE_READ_MULTIPLIER),
    }
