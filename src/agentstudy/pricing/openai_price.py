"""The shape of an OpenAI model's price: per-tier rates and tier thresholds (USD per million tokens).

Its own module so that ``pricing.openai`` (our rows, the cost of a Codex attempt) and
``pricing.genai_rates`` (rows read from genai-prices' bundled snapshot) both build on it and
neither imports the other back (issue 21 item 4; no mutual dependency, issue 31).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

__all__ = ["OpenAiPrice", "OpenAiRates"]


@dataclass(frozen=True)
class OpenAiRates:
    """One tier's rates, USD per million tokens: ``input`` (uncached), ``cached_input``,
    ``cache_write_input``, ``output`` (non-reasoning) and ``reasoning_output``.

    Raises:
        ValueError: a rate that is not a finite ``Decimal`` >= 0.
    """

    input: Decimal
    cached_input: Decimal
    cache_write_input: Decimal
    output: Decimal
    reasoning_output: Decimal

    def __post_init__(self) -> None:
        for rate in self.values():
            if not isinstance(rate, Decimal) or not rate.is_finite() or rate < 0:
                raise ValueError("an OpenAI rate must be a finite Decimal >= 0 (USD per million tokens)")

    def values(self) -> tuple[Decimal, ...]:
        """The five rates in field order (USD per million tokens)."""
        return (self.input, self.cached_input, self.cache_write_input, self.output, self.reasoning_output)


@dataclass(frozen=True)
class OpenAiPrice:
    """One OpenAI model's price: ``tiers[0]`` up to ``thresholds[0]`` input tokens, ``tiers[i]`` for
    every token once the input passes ``thresholds[i - 1]`` (strictly); ``source`` names where and
    when the rates were read.

    Raises:
        ValueError: no tier, thresholds not one fewer than tiers or not strictly ascending from 0,
            a higher tier cheaper in any rate than the one below (crossing may only raise a cost),
            or an empty source.
    """

    tiers: tuple[OpenAiRates, ...]
    thresholds: tuple[int, ...]
    source: str

    def __post_init__(self) -> None:
        if not self.tiers or len(self.thresholds) != len(self.tiers) - 1:
            raise ValueError("an OpenAI price has one tier more than thresholds")
        if any(t < 0 for t in self.thresholds) or list(self.thresholds) != sorted(set(self.thresholds)):
            raise ValueError("tier thresholds must be distinct token counts >= 0 in ascending order")
        for lower, upper in zip(self.tiers, self.tiers[1:], strict=False):
            if any(u < lo for lo, u in zip(lower.values(), upper.values(), strict=True)):
                raise ValueError("a higher tier must not be cheaper than the tier below it")
        if not self.source.strip():
            raise ValueError("an OpenAI price row needs a source")

    def tier_index(self, input_tokens: int) -> int:
        """0-based tier for an attempt whose total input is ``input_tokens`` (strictly above a threshold)."""
        return sum(1 for threshold in self.thresholds if input_tokens > threshold)
