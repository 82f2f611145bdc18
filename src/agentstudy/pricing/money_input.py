"""The one parser of money typed by an operator (flags and environment variables), pure.

Every USD amount a command reads from its flags or environment (caps, per-attempt and
per-item limits, reservations, upper prices per million tokens) goes through
:func:`parse_usd_input`. The accepted syntax is a plain ASCII decimal, as JSON writes a number
without sign or exponent:

- ASCII digits ``0-9``, at most one ``.`` with at least one digit on each side
  (``0.10``, ``5``, ``12.5``; not ``.5``, ``5.``);
- no leading zero before another digit (``0.5`` and ``0`` but not ``05`` or ``00.5``);
- no sign (not even ``+``), exponent, underscore, whitespace, thousands separator or
  non-ASCII digit (``1e3``, ``1_0``, `` 1``, ``١``, ``NaN``, ``Infinity`` are all refused);
- at most :data:`INPUT_DECIMALS` (9) digits after the dot, trailing zeros included:
  more is refused, never rounded;
- above zero and at most :data:`MAX_INPUT_USD` (1,000,000).

So an accepted amount has at most 15 significant digits and survives the ledger's JSON
number (a double) exactly: ``Decimal(repr(float(amount))) == amount``. It is never NaN,
infinite or zero.

Cross-field rules of a run are :func:`check_attempt_limit` (a per-attempt or per-item limit
must reserve at least one micro-USD and fit under the cap) and, for the HTTP transport,
:func:`check_cap_fits_call`.
"""

from __future__ import annotations

import re
from decimal import Decimal

from agentstudy.pricing.budget import reservation_for

MAX_INPUT_USD = Decimal(1_000_000)
"""The largest amount an operator may type, USD (or USD per million tokens for a price)."""

INPUT_DECIMALS = 9
"""Digits allowed after the dot: the finest amount is 1e-9 USD (0.000000001)."""

_SYNTAX = re.compile(r"(?:0|[1-9][0-9]*)(?:\.(?P<decimals>[0-9]+))?")
"""Plain ASCII decimal: no sign, exponent or leading zero; ``[0-9]`` (``\\d`` would match other digits)."""
_MAX_CHARS = 40


class MoneyInputError(ValueError):
    """An operator's USD amount breaks the input rules (one-line reason, naming ``what``)."""


def parse_usd_input(raw: str | None, *, what: str) -> Decimal:
    """Parse one operator-typed USD amount exactly (rules in the module docstring).

    Args:
        raw: the flag's or environment variable's text, unchanged (``None`` when unset).
        what: how the error names the input (``"--budget-usd"``).

    Returns:
        The exact ``Decimal`` of ``raw`` (trailing zeros kept: ``"0.10"`` -> ``Decimal("0.10")``),
        finite, in ``(0, 1,000,000]``, with at most 9 decimals.

    Raises:
        MoneyInputError: unset or empty, not plain ASCII decimal syntax, more than 9 decimals,
            zero, or above 1,000,000.
    """
    if raw is None or raw == "":
        raise MoneyInputError(f"{what} is required")
    match = _SYNTAX.fullmatch(raw) if len(raw) <= _MAX_CHARS else None
    if match is None:
        shown = raw if len(raw) <= _MAX_CHARS else raw[:_MAX_CHARS] + "..."
        raise MoneyInputError(f"{what} must be a finite amount above zero written as a plain decimal like 0.10 "
                              f"(ASCII digits and one dot; no sign, exponent, underscore, space or leading zero), "
                              f"got {shown!r}")
    decimals = match.group("decimals")
    if decimals is not None and len(decimals) > INPUT_DECIMALS:
        raise MoneyInputError(f"{what} has more than {INPUT_DECIMALS} decimals (refused, not rounded): {raw!r}")
    value = Decimal(raw)
    if value <= 0:
        raise MoneyInputError(f"{what} must be a finite amount above zero, got {raw!r}")
    if value > MAX_INPUT_USD:
        raise MoneyInputError(f"{what} must be at most {MAX_INPUT_USD} USD, got {raw!r}")
    return value


def check_attempt_limit(
    limit_usd: Decimal, cap_usd: Decimal | None, *, limit_what: str, cap_what: str
) -> Decimal:
    """Check a per-attempt (or per-item) limit against its cap before anything is written.

    The limit's reservation is the limit floored to whole micro-USD (``reservation_for``); it
    must be above zero, and the full limit must fit under the cap (an admission rule: the
    first attempt is admitted only when ``limit <= cap``), so a run can always admit one.
    ``cap_usd=None`` (a dry run without a cap) checks the reservation only.

    Returns:
        The reservation of one attempt (USD, 6 decimals).

    Raises:
        MoneyInputError: the limit floors to zero micro-USD, or it is above the cap.
    """
    try:
        reservation = reservation_for(limit_usd)
    except ValueError:
        raise MoneyInputError(f"{limit_what} must be at least 0.000001 USD (its reservation is floored to "
                              f"whole micro-USD), got {limit_usd}") from None
    if cap_usd is not None and limit_usd > cap_usd:
        raise MoneyInputError(f"{limit_what} ({limit_usd} USD) is above {cap_what} ({cap_usd} USD): "
                              "not one attempt could be admitted")
    return reservation


def check_cap_fits_call(cap_usd: Decimal, first_call_usd: Decimal, *, cap_what: str) -> None:
    """Refuse a cap that cannot hold the reservation of the run's first request (HTTP transport).

    Args:
        cap_usd: the run's cumulative cap.
        first_call_usd: the reservation of the first request (or a lower bound of it), USD.

    Raises:
        MoneyInputError: ``first_call_usd > cap_usd``.
    """
    if first_call_usd > cap_usd:
        raise MoneyInputError(f"{cap_what} ({cap_usd} USD) cannot hold the reservation of the first request "
                              f"({first_call_usd.normalize():f} USD at the upper prices): nothing could be sent")
