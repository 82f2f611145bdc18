"""Reservations and settlement of attempt charges (seed 000, "Budget").

All amounts are ``Decimal`` USD. An attempt is admitted only if its full per-attempt limit
fits under the remaining cap; the reservation is that limit floored to 6 decimals and is
added to spend before the attempt runs; settlement replaces it by the charge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

MICRO = Decimal("0.000001")


def reservation_for(limit_usd: Decimal) -> Decimal:
    """The reservation for a per-attempt limit: ``limit`` floored to 6 decimals (USD).

    Raises:
        ValueError: if the limit is not a finite amount above zero after flooring.
    """
    if not limit_usd.is_finite() or limit_usd <= 0:
        raise ValueError("the per-attempt limit must be a finite amount above zero")
    reserved = limit_usd.quantize(MICRO, rounding=ROUND_FLOOR)
    if reserved <= 0:
        raise ValueError("the per-attempt limit rounds down to zero")
    return reserved


def format_max_budget(reservation_usd: Decimal) -> str:
    """The ``--max-budget-usd`` value: the reservation with exactly 6 decimals."""
    return f"{reservation_usd.quantize(MICRO, rounding=ROUND_FLOOR):.6f}"


def completed_charge(reported_usd: Decimal | None, computed_usd: Decimal | None) -> Decimal:
    """Charge of a completed attempt: the larger of the valid reported and computed costs.

    Raises:
        ValueError: if neither cost is valid (such an attempt is ``invalid-cost``, not completed).
    """
    costs = [cost for cost in (reported_usd, computed_usd) if cost is not None]
    if not costs:
        raise ValueError("a completed attempt needs at least one valid cost")
    return max(costs)


def conservative_charge(reservation_usd: Decimal, valid_costs: Iterable[Decimal | None]) -> Decimal:
    """Charge of any non-completed attempt: ``max(reservation, every valid cost)`` (USD)."""
    return max([reservation_usd, *(cost for cost in valid_costs if cost is not None)])


@dataclass(frozen=True)
class Budget:
    """The run's budget: ``cap`` and ``spent`` in USD (spent includes open reservations)."""

    cap: Decimal
    spent: Decimal = Decimal(0)

    def fits(self, limit_usd: Decimal) -> bool:
        """Whether the full per-attempt limit fits under the remaining cap."""
        return self.spent + limit_usd <= self.cap

    def reserve(self, reservation_usd: Decimal) -> Budget:
        """Add a reservation to spend.

        Raises:
            ValueError: if it does not fit under the cap (callers check ``fits`` first).
        """
        if not self.fits(reservation_usd):
            raise ValueError("the reservation does not fit under the remaining cap")
        return Budget(self.cap, self.spent + reservation_usd)

    def settle(self, reservation_usd: Decimal, charged_usd: Decimal) -> Budget:
        """Replace a reservation by its charge: ``spent + charged - reservation``."""
        return Budget(self.cap, self.spent + charged_usd - reservation_usd)

    @property
    def cap_exceeded(self) -> bool:
        """``cumulativeCapExceeded``: spend has passed the cap."""
        return self.spent > self.cap


def settle_attempt(
    status: str, reservation_usd: Decimal, reported_usd: Decimal | None, computed_usd: Decimal | None
) -> tuple[str, Decimal]:
    """Settle one CLI attempt: its final status and its charge in USD (seed 000, "Budget").

    A ``completed`` attempt is charged ``max(reported, computed)``; if that exceeds the
    reservation the status becomes ``budget-exceeded`` (the charge stays). Any other status
    is charged ``max(reservation, every valid cost)``.
    """
    if status == "completed":
        charged = completed_charge(reported_usd, computed_usd)
        return ("budget-exceeded" if charged > reservation_usd else "completed"), charged
    return status, conservative_charge(reservation_usd, (reported_usd, computed_usd))
