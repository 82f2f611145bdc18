"""USD amounts at the JSON edge (issue 17 item 8): one conversion from exact ``Decimal`` to a JSON number.

The seed's ledgers store money as JSON numbers, and every reader (ours, ``jq``, JavaScript)
parses a number as a double, so a writer hands its encoder an ``int`` or a ``float`` and the
encoder writes that float's shortest round-trip text (``repr``). :func:`usd_number` makes that
text *the Decimal's own digits* whenever a double can hold them: every amount with at most 15
significant digits — every money input (at most 9 decimals, at most 1,000,000 USD), every
charge, reservation and price this project computes from them — is written digit for digit
(``Decimal("0.0345927")`` → ``0.0345927``, never ``0.034592700000000004``) and reads back as
the same ``Decimal`` through ``pricing.sums.usd_from_json``. A wider amount (more than 15
significant digits) has no exact double; it becomes the nearest one, which is what any reader
would have parsed from its exact text anyway.

Float noise in ledgers came from arithmetic on floats, never from this conversion: the CLI's
own ``total_cost_usd`` is a JavaScript double sum (``0.0013654000000000001``), which
``transports.cli_evaluation.reported_cost`` reads at a double's 15 significant digits.
Every writer of USD into JSON calls :func:`usd_number` (or :func:`optional_usd_number`); no
writer calls ``float()`` on money.
"""

from __future__ import annotations

from decimal import Decimal

EXACT_SIGNIFICANT_DIGITS = 15
"""A double holds every decimal of at most 15 significant digits exactly (round trip through ``repr``)."""


def usd_number(value: Decimal) -> int | float:
    """The JSON number of a USD ``Decimal``: an ``int`` when whole, else the double whose ``repr`` is its digits.

    Exact (``Decimal(repr(usd_number(v))) == v``) for every finite amount of at most 15
    significant digits; a wider one becomes the nearest double. Negative amounts (a paired
    difference) are allowed.

    Raises:
        ValueError: ``value`` is not a finite ``Decimal`` (a float passed here is a bug: money is Decimal).
    """
    if not isinstance(value, Decimal) or not value.is_finite():
        raise ValueError("a USD amount written to JSON must be a finite Decimal")
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def optional_usd_number(value: Decimal | None) -> int | float | None:
    """:func:`usd_number`, with ``None`` (an invalid or missing amount) kept as JSON ``null``.

    Raises:
        ValueError: as :func:`usd_number`.
    """
    return None if value is None else usd_number(value)
