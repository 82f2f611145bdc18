"""USD sums, differences and multiples for reports, in exact ``Decimal`` (house rule: money lives here).

A report reads USD amounts that the ledger stored as JSON numbers (converted from ``Decimal``
at the edge). :func:`usd_from_json` turns such a number back into the shortest ``Decimal``
that prints the same (``repr`` of the float), so ``0.0014036`` stays ``0.0014036``. Sums,
paired differences (which may be negative) and the pilot's extrapolations (``x 18``, ``x 36``)
then run under :func:`agentstudy.pricing.money.exact`; only the share of a cap and display
rounding are rounded, and they say so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_UP, Context, Decimal

from agentstudy.pricing.money import exact, usd

DISPLAY_PLACES = 6
"""USD are shown to 6 decimals (micro-USD), like the run summary."""

_ROUNDED = Context(prec=50)


def usd_from_json(value: object, *, what: str = "an amount") -> Decimal:
    """A ledger's JSON USD number as an exact ``Decimal`` (>= 0).

    Floats become the shortest decimal that round-trips (``repr``), integers stay exact.

    Raises:
        ValueError: a boolean, a non-number, NaN, an infinity or a negative amount.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} is not a JSON number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what} is not finite")
    return usd(Decimal(repr(value)) if isinstance(value, float) else Decimal(value), what=what)


def sum_usd(amounts: Iterable[Decimal]) -> Decimal:
    """The exact sum of USD amounts (0 for none).

    Raises:
        ValueError: an amount that is not a finite ``Decimal`` >= 0.
    """
    total = Decimal(0)
    with exact():
        for amount in amounts:
            total += usd(amount)
    return total


def difference_usd(minuend: Decimal, subtrahend: Decimal) -> Decimal:
    """``minuend - subtrahend`` exactly, in USD; negative when the subtrahend is larger.

    Raises:
        ValueError: either amount is not a finite ``Decimal`` >= 0.
    """
    with exact():
        return usd(minuend) - usd(subtrahend)


def times(amount: Decimal, factor: int) -> Decimal:
    """``amount x factor`` exactly (USD), for the pilot's ``x 18`` and ``x 36`` figures.

    Raises:
        ValueError: an amount that is not a finite ``Decimal`` >= 0, or a negative or non-integer factor.
    """
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 0:
        raise ValueError("the factor must be an integer >= 0")
    with exact():
        return usd(amount) * factor


def scaled(amount: Decimal, numerator: int, denominator: int) -> Decimal:
    """``amount x numerator / denominator`` exactly (USD), for a larger pilot's extrapolation
    (36 full attempts / the pilot's attempts; issue 17). Equals :func:`times` when it divides.

    Raises:
        ValueError: an amount that is not a finite ``Decimal`` >= 0, a negative numerator, a
            denominator below 1, or a quotient that is not exact in decimal.
    """
    if numerator < 0 or denominator < 1:
        raise ValueError("the scale must be a numerator >= 0 over a denominator >= 1")
    with exact():
        product = usd(amount) * numerator
    try:
        with exact():
            return product / denominator
    except ArithmeticError:
        raise ValueError(f"{amount} x {numerator} / {denominator} is not exact in decimal") from None


def dearest(amounts: Iterable[Decimal]) -> Decimal | None:
    """The largest USD amount, or ``None`` for none.

    Raises:
        ValueError: an amount that is not a finite ``Decimal`` >= 0.
    """
    values = [usd(amount) for amount in amounts]
    return max(values) if values else None


def percent_of(part: Decimal, whole: Decimal) -> Decimal | None:
    """``100 x part / whole`` rounded half-up to 2 decimals (a display figure), ``None`` when ``whole`` is 0.

    Raises:
        ValueError: either amount is not a finite ``Decimal`` >= 0.
    """
    if usd(whole) == 0:
        return None
    ratio = _ROUNDED.divide(_ROUNDED.multiply(usd(part), Decimal(100)), whole)
    return ratio.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP, context=_ROUNDED)


def display_usd(amount: Decimal, *, signed: bool = False, places: int = DISPLAY_PLACES) -> str:
    """``amount`` rounded half-up to ``places`` decimals as text (``"0.001404"``; ``"+0.000010"`` when signed;
    zero never signed).

    Display only: the value is never used again. A negative amount is allowed (a paired difference).

    Raises:
        ValueError: ``amount`` is not a finite ``Decimal``.
    """
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise ValueError("a displayed amount must be a finite Decimal")
    # wide enough for every digit left of the point, so no amount makes quantize raise (issue 29: a
    # 99-digit token count once made the USD display raise after the ledger was written)
    wide = Context(prec=max(_ROUNDED.prec, amount.adjusted() + places + 2), Emax=MAX_EMAX, Emin=MIN_EMIN)
    rounded = amount.quantize(Decimal(1).scaleb(-places, context=wide), rounding=ROUND_HALF_UP, context=wide)
    if rounded == 0:
        return f"{abs(rounded):f}"
    return f"{rounded:+f}" if signed else f"{rounded:f}"


def mean_usd(amounts: Iterable[Decimal]) -> Decimal | None:
    """The mean of USD amounts (``None`` for none), the exact sum divided with 50 significant digits.

    Raises:
        ValueError: an amount that is not a finite ``Decimal`` >= 0.
    """
    values = [usd(amount) for amount in amounts]
    if not values:
        return None
    return _ROUNDED.divide(sum_usd(values), Decimal(len(values)))


def median_usd(amounts: Iterable[Decimal]) -> Decimal | None:
    """The median of USD amounts (``None`` for none): the middle one, or the mean of the two middle ones.

    Raises:
        ValueError: an amount that is not a finite ``Decimal`` >= 0.
    """
    values = sorted(usd(amount) for amount in amounts)
    if not values:
        return None
    middle = len(values) // 2
    if len(values) % 2:
        return values[middle]
    return _ROUNDED.divide(sum_usd(values[middle - 1 : middle + 1]), Decimal(2))


def exact_factor(numerator: int, denominator: int) -> Decimal | None:
    """``numerator / denominator`` as an exact ``Decimal`` (36 / 8 = 4.5), or ``None`` when the quotient is
    not a finite decimal (36 / 7) or ``denominator`` is below 1: a pilot's extrapolation factor (issues 17, 18)."""
    if denominator < 1:
        return None
    try:
        return scaled(Decimal(1), numerator, denominator)
    except ValueError:
        return None
