"""The price table ``CLI_PRICES`` (seed 000, "Cost"): USD per million tokens, each row sourced.

Prices are data, never flags. A model absent from the table is a cost problem for the
caller, never a guessed price. Cache rates derive from the input rate: 5-minute writes at
1.25 x, 1-hour writes at 2 x (unattributed writes at the 1-hour rate), reads at 0.1 x.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

CACHE_WRITE_5M_MULTIPLIER = Decimal("1.25")
CACHE_WRITE_1H_MULTIPLIER = Decimal("2")
CACHE_READ_MULTIPLIER = Decimal("0.1")
"""The CLI's own cache-read rate (measured on 2.1.296); no study document states one."""


@dataclass(frozen=True)
class Tier:
    """One price tier: ``input`` and ``output`` in USD per million tokens."""

    input: Decimal
    output: Decimal


@dataclass(frozen=True)
class ModelPrice:
    """Prices of one model.

    ``tiers[0]`` applies when no prompt exceeds ``tier_threshold_tokens``; ``tiers[1]``
    (when present) applies to every token of an attempt whose largest prompt exceeds it.
    ``source`` says where the figures come from.
    """

    tiers: tuple[Tier, ...]
    source: str
    tier_threshold_tokens: int = 100_000


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
        source="list price applied by Claude Code 2.1.296 in its own costUSD (measured 2026-11-30)",
    ),
}
