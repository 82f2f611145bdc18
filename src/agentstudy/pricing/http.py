"""Per-call money of the HTTP transport (digest 2.1 steps 3, 5, 6 and 7), pure and exact.

Before each Messages API request the transport reserves an upper bound of the call's cost:
``inputCeiling = 2 x UTF-8 bytes of the compact JSON body + 8,192`` input tokens plus
``max_tokens`` output tokens, at the supplied upper prices (USD per million tokens). The call
is refused (``budget-exceeded``, no request) unless ``spent + reserved <= cap``. A response
with valid usage settles to its measured cost and releases the rest; a lost response
(transport error, timeout, non-2xx) or invalid usage keeps the whole reservation charged
(``usageComplete = false``). Validation: ``usage`` is an object; ``input_tokens`` an integer
in ``[0, inputCeiling]``; ``output_tokens`` an integer in ``[0, max_tokens]``;
``cache_creation_input_tokens`` and ``cache_read_input_tokens`` absent or exactly 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentstudy.pricing.budget import Budget
from agentstudy.pricing.money import exact, usd
from agentstudy.pricing.table import CLI_PRICES

INPUT_CEILING_OVERHEAD_TOKENS = 8192
DEFAULT_MAX_TOKENS = 1024
"""The HTTP agent loop's ``max_tokens`` per turn (digest 2.1)."""


class UsageProblem(ValueError):
    """A response's usage fails validation; the call's reservation stays charged."""


@dataclass(frozen=True)
class UpperPrices:
    """The run's upper prices, USD per million tokens, both finite and above zero.

    Raises:
        ValueError: a price that is not a finite ``Decimal`` above zero.
    """

    input_usd_per_million: Decimal
    output_usd_per_million: Decimal

    def __post_init__(self) -> None:
        for price in (self.input_usd_per_million, self.output_usd_per_million):
            if usd(price, what="an upper price") <= 0:
                raise ValueError("upper prices must be above zero")


REHEARSAL_PRICES = UpperPrices(Decimal("0.50"), Decimal("2.50"))
"""The nominal prices of an http rehearsal of a model absent from ``pricing.table.CLI_PRICES``, USD per
million tokens (the protocol's upper prices, digest 1.5)."""


def rehearsal_prices(model: str) -> UpperPrices:
    """The nominal prices of an http rehearsal (and of the http demo) of ``model``, USD per million tokens.

    No money moves in a rehearsal; the ledger records these prices as nominal (issue 18, item 6).
    They are the first tier of ``model``'s row in ``pricing.table.CLI_PRICES`` — what a cli
    rehearsal of the same model is charged at below the tier threshold, which no rehearsal
    prompt reaches — so the charged USD of the two transports are comparable token for token
    (``claude-haiku-5-5``: 0.10 / 0.50); a model without a row gets :data:`REHEARSAL_PRICES`. Pure.
    """
    row = CLI_PRICES.get(model)
    if row is None:
        return REHEARSAL_PRICES
    first = row.tiers[0]
    return UpperPrices(first.input, first.output)


@dataclass(frozen=True)
class CallReservation:
    """The reservation of one request: token ceilings and ``usd`` (exact, unrounded USD)."""

    input_ceiling: int
    max_output_tokens: int
    prices: UpperPrices
    usd: Decimal


@dataclass(frozen=True)
class CallUsage:
    """Validated usage of one response (tokens)."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class CallSettlement:
    """A settled call: the budget after, ``charged_usd``, ``released_usd``, the usage (``None`` when
    lost or invalid, then ``usage_complete`` is false) and the validation ``problem``, if any."""

    budget: Budget
    charged_usd: Decimal
    released_usd: Decimal
    usage: CallUsage | None
    problem: str | None

    @property
    def usage_complete(self) -> bool:
        """Whether the call's usage was valid and settled."""
        return self.usage is not None


def encode_request_body(body: Mapping[str, Any]) -> bytes:
    """The compact JSON request body as UTF-8 bytes (no spaces, non-ASCII kept) — send exactly these.

    Raises:
        ValueError: the body holds NaN or infinity (not JSON).
    """
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _tokens(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be an integer >= 0")
    return value


def input_ceiling(body_utf8_bytes: int) -> int:
    """``2 x body_utf8_bytes + 8192`` input tokens (the largest input the request can bill).

    Raises:
        ValueError: a byte count that is not an integer >= 0.
    """
    return 2 * _tokens(body_utf8_bytes, "the body size") + INPUT_CEILING_OVERHEAD_TOKENS


def call_reservation(body: bytes | int, max_tokens: int, prices: UpperPrices) -> CallReservation:
    """Reservation of one request (digest 2.1 step 3): ``(inputCeiling x in + max_tokens x out) / 1e6`` USD.

    Args:
        body: the exact request bytes, or their count.
        max_tokens: the request's ``max_tokens`` (>= 1).
        prices: the upper prices.

    Raises:
        ValueError: a negative size or a ``max_tokens`` below 1.
    """
    size = len(body) if isinstance(body, bytes) else body
    ceiling = input_ceiling(size)
    if _tokens(max_tokens, "max_tokens") < 1:
        raise ValueError("max_tokens must be at least 1")
    with exact():
        amount = (ceiling * prices.input_usd_per_million + max_tokens * prices.output_usd_per_million).scaleb(-6)
    return CallReservation(ceiling, max_tokens, prices, amount)


def reserve_call(budget: Budget, reservation: CallReservation) -> Budget | None:
    """Add the call's reservation to spend, or ``None`` when ``spent + reserved > cap`` (no request)."""
    if not budget.fits(reservation.usd):
        return None
    return budget.reserve(reservation.usd)


def _bounded(usage: Mapping[str, Any], key: str, ceiling: int) -> int:
    value = usage.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= ceiling:
        raise UsageProblem(f"usage.{key} is not an integer in [0, {ceiling}]")
    return value


def validate_usage(usage: Any, reservation: CallReservation) -> CallUsage:
    """Check a response's ``usage`` against its reservation (digest 2.1 step 6).

    Raises:
        UsageProblem: usage missing or not an object; ``input_tokens`` not an integer in
            ``[0, inputCeiling]``; ``output_tokens`` not an integer in ``[0, max_tokens]``;
            a cache field present with any value but the integer 0 (``null`` included).
    """
    if not isinstance(usage, Mapping):
        raise UsageProblem("usage is missing or not an object")
    input_tokens = _bounded(usage, "input_tokens", reservation.input_ceiling)
    output_tokens = _bounded(usage, "output_tokens", reservation.max_output_tokens)
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if key in usage:
            value = usage[key]
            if isinstance(value, bool) or not isinstance(value, int) or value != 0:
                raise UsageProblem(f"usage.{key} is present and not 0")
    return CallUsage(input_tokens, output_tokens)


def measured_cost(usage: CallUsage, prices: UpperPrices) -> Decimal:
    """``(input x in + output x out) / 1e6`` USD at the upper prices (digest 2.1 step 7)."""
    with exact():
        return (
            usage.input_tokens * prices.input_usd_per_million + usage.output_tokens * prices.output_usd_per_million
        ).scaleb(-6)


def settle_call(
    budget: Budget, reservation: CallReservation, usage: CallUsage | None, problem: str | None = None
) -> CallSettlement:
    """Settle a reserved call (digest 2.1 steps 5-7).

    With valid ``usage`` the charge is its measured cost (never above the reservation, since
    usage is bounded by the ceilings) and the rest is released; with ``None`` (lost response
    or invalid usage) the whole reservation stays charged.

    Raises:
        ValueError: the reservation is not open in ``budget``.
    """
    charged = reservation.usd if usage is None else measured_cost(usage, reservation.prices)
    after = budget.settle(reservation.usd, charged)
    with exact():
        released = reservation.usd - charged
    return CallSettlement(after, charged, released, usage, problem)


def settle_response(budget: Budget, reservation: CallReservation, raw_usage: Any) -> CallSettlement:
    """Validate a 2xx response's raw ``usage`` and settle: measured if valid, else the reservation kept.

    Raises:
        ValueError: the reservation is not open in ``budget``.
    """
    try:
        usage = validate_usage(raw_usage, reservation)
    except UsageProblem as problem:
        return settle_call(budget, reservation, None, str(problem))
    return settle_call(budget, reservation, usage)
