"""USD sums and comparisons of the controlled-study metrics (digest 5.11), exact in ``Decimal``.

The metrics calculator sums ``agentCostUsd``/``analysisCostUsd`` measurements (JSON numbers in
the ledger), adds them into ``totalCostUsd`` and compares rounds ("more than 5 % dearer").
A JSON number becomes the shortest ``Decimal`` that prints the same (``repr`` of the float),
so ``0.0065`` stays ``0.0065``; every operation then runs under ``money.exact`` (no silent
rounding). Missing stays missing: an empty sum is ``None``, never zero.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from agentstudy.pricing.money import exact, usd
from agentstudy.pricing.sums import difference_usd, usd_from_json


def usd_of(value: int | float) -> Decimal:
    """A JSON USD number as an exact ``Decimal`` (see ``pricing.sums.usd_from_json``).

    Raises:
        ValueError: a boolean, NaN, an infinity or a negative amount.
    """
    return usd_from_json(value, what="a USD amount")


def sum_usd(values: Iterable[int | float]) -> Decimal | None:
    """The exact sum of USD amounts, or ``None`` when there are none (missing, not zero).

    Raises:
        ValueError: as ``usd_of``.
    """
    total: Decimal | None = None
    with exact():
        for value in values:
            total = usd_of(value) if total is None else total + usd_of(value)
    return total


def total_usd(first: Decimal | None, second: Decimal | None) -> Decimal | None:
    """``first + second`` exactly, or ``None`` when either is missing."""
    if first is None or second is None:
        return None
    with exact():
        return usd(first) + usd(second)


def change_usd(baseline: Decimal, current: Decimal) -> Decimal:
    """``current - baseline`` exactly (negative when cheaper)."""
    return difference_usd(current, baseline)


def relative_change_usd(baseline: Decimal, current: Decimal) -> float | None:
    """``(current - baseline) / baseline`` as a float ratio (not money), ``None`` when baseline is 0."""
    if usd(baseline) == 0:
        return None
    return float(change_usd(baseline, current) / baseline)


def above_share(current: Decimal, baseline: Decimal, numerator: int, denominator: int) -> bool:
    """Whether ``current > baseline × numerator / denominator``, compared exactly.

    ``above_share(c, b, 105, 100)`` is "more than 5 % dearer"; ``not above_share(c, b, 95, 100)``
    and ``c != b × 0.95`` is "at least 5 % cheaper" (use ``below_share``).

    Raises:
        ValueError: for a non-positive denominator or a negative numerator.
    """
    if denominator <= 0 or numerator < 0:
        raise ValueError("the share must be a non-negative fraction")
    with exact():
        return usd(current) * denominator > usd(baseline) * numerator


def below_share(current: Decimal, baseline: Decimal, numerator: int, denominator: int) -> bool:
    """Whether ``current < baseline × numerator / denominator``, compared exactly.

    Raises:
        ValueError: as ``above_share``.
    """
    if denominator <= 0 or numerator < 0:
        raise ValueError("the share must be a non-negative fraction")
    with exact():
        return usd(current) * denominator < usd(baseline) * numerator
