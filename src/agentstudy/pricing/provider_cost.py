"""Agent cost of one controlled-study observation from provider-reported tokens (digest section 5.7, "Cost").

``cost = (uncached × input + cached × cachedInput + output × outputRate) / 1e6`` USD, with
``cached = min(cachedInputTokens or 0, inputTokens)`` and rates in USD per million tokens,
rounded to 8 decimals. Arithmetic is exact (``Decimal``); the original rounds its binary
float result with ``toFixed(8)``, so the two can differ only where float error crosses a
half unit of the 8th decimal.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext

MILLION = Decimal(1_000_000)
COST_QUANTUM = Decimal("0.00000001")


@dataclass(frozen=True)
class ProviderRates:
    """USD per million tokens: uncached input, cached input, output (each finite and ≥ 0)."""

    input_per_million_usd: Decimal
    cached_input_per_million_usd: Decimal
    output_per_million_usd: Decimal


def provider_cost_usd(
    rates: ProviderRates | None,
    input_tokens: int | None,
    output_tokens: int | None,
    cached_input_tokens: Decimal | int | None = None,
) -> Decimal | None:
    """The agent cost in USD (8 decimals), or ``None`` when pricing or either token count is missing.

    ``cached_input_tokens`` (from ``measurements.cachedInputTokens``) is capped at
    ``input_tokens``; missing means 0. Missing data stays missing: no zero is invented.

    Raises:
        ValueError: for a negative token count or rate.
    """
    if rates is None or input_tokens is None or output_tokens is None:
        return None
    cached_raw = Decimal(cached_input_tokens or 0)
    values = (Decimal(input_tokens), Decimal(output_tokens), cached_raw, rates.input_per_million_usd,
              rates.cached_input_per_million_usd, rates.output_per_million_usd)
    if any(not value.is_finite() or value < 0 for value in values):
        raise ValueError("token counts and rates must be finite and non-negative")
    with localcontext() as context:
        context.prec = 1000  # wide enough that nothing below rounds before the final quantize
        cached = min(cached_raw, Decimal(input_tokens))
        uncached = Decimal(input_tokens) - cached
        total = (uncached * rates.input_per_million_usd + cached * rates.cached_input_per_million_usd
                 + Decimal(output_tokens) * rates.output_per_million_usd) / MILLION
        return total.quantize(COST_QUANTUM, rounding=ROUND_HALF_UP)
