"""Exact ``Decimal`` USD arithmetic for ``pricing`` (house rule: money is Decimal, never float).

Every sum, difference and product of money in ``pricing`` runs under :func:`exact`, a decimal
context whose precision (1,000 digits) covers every amount :func:`usd` admits and which *traps*
``Inexact``: an operation that would silently round raises instead, so a passing computation
is an exact one. :func:`usd` validates an amount and fixes its resolution at 1e-30 USD,
rounding *up* (towards a larger charge) only digits below that resolution. Flooring to whole
micro-USD (the ``--max-budget-usd`` reservation, seed 000 "Budget") is :func:`floor_micro`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from decimal import (
    ROUND_CEILING,
    ROUND_FLOOR,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    localcontext,
)

MICRO = Decimal("0.000001")
"""One micro-USD: the resolution of reservations and of ``--max-budget-usd``."""

RESOLUTION = Decimal("1e-30")
"""The finest USD digit kept; digits below it are rounded up by :func:`usd`."""
_RESOLUTION_EXPONENT = -30

MAX_MAGNITUDE_DIGITS = 400
"""Amounts must be below 10**400 USD (any finite float is below 10**309)."""

_EXACT = Context(prec=1000, traps=[InvalidOperation, DivisionByZero, Overflow, Inexact])
_WIDE = Context(prec=1000, traps=[InvalidOperation, DivisionByZero, Overflow])


def exact() -> AbstractContextManager[Context]:
    """A context manager for money arithmetic that raises ``decimal.Inexact`` instead of rounding."""
    return localcontext(_EXACT)


def usd(value: Decimal, *, what: str = "amount") -> Decimal:
    """Validate a USD amount: a finite ``Decimal`` >= 0 below 10**400, kept to 1e-30 USD.

    Digits below 1e-30 are rounded up (a charge never shrinks); every other value is
    returned unchanged in value.

    Raises:
        ValueError: not a ``Decimal``, NaN, infinite, negative, or 10**400 USD or more.
    """
    if not isinstance(value, Decimal) or not value.is_finite():
        raise ValueError(f"{what} must be a finite Decimal USD amount")
    if value < 0:
        raise ValueError(f"{what} must not be negative")
    if value and value.adjusted() >= MAX_MAGNITUDE_DIGITS:
        raise ValueError(f"{what} is out of range")
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent < _RESOLUTION_EXPONENT:
        return value.quantize(RESOLUTION, rounding=ROUND_CEILING, context=_WIDE)
    return value


def floor_micro(value: Decimal) -> Decimal:
    """``value`` rounded down to whole micro-USD, always with exactly 6 decimals (USD).

    Raises:
        ValueError: as :func:`usd`.
    """
    return usd(value).quantize(MICRO, rounding=ROUND_FLOOR, context=_WIDE)
