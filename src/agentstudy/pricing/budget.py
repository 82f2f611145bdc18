"""Reservations and settlement of attempt charges (seed 000, "Budget"; digest 3.10).

All amounts are exact ``Decimal`` USD. An attempt is admitted only if its *full* per-attempt
limit fits under the remaining cap (and never once spend has passed the cap); its
reservation is that limit floored to 6 decimals, added to spend before the attempt runs and
passed as ``--max-budget-usd``. Settlement replaces the reservation by the charge:
``completed`` -> ``max(reported, computed)``, anything else -> ``max(reservation, every valid
cost)``. A completed attempt charged above its reservation becomes ``budget-exceeded``; spend
above the cap is ``cumulativeCapExceeded``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from agentstudy.pricing.money import MICRO, exact, floor_micro, usd

__all__ = [
    "CLI_STATUSES",
    "MICRO",
    "AttemptReservation",
    "AttemptSettlement",
    "Budget",
    "close_attempt",
    "completed_charge",
    "conservative_charge",
    "format_max_budget",
    "open_attempt",
    "reservation_for",
    "settle_attempt",
]

CLI_STATUSES = frozenset({"completed", "failed", "timed-out", "budget-exceeded", "invalid-setup", "invalid-cost"})


def reservation_for(limit_usd: Decimal) -> Decimal:
    """The reservation for a per-attempt limit: ``limit`` floored to 6 decimals (USD).

    Example: ``0.12345678`` -> ``0.123456``; ``0.10`` -> ``0.100000``.

    Raises:
        ValueError: if the limit is not a finite amount above zero after flooring.
    """
    if not isinstance(limit_usd, Decimal) or not limit_usd.is_finite() or limit_usd <= 0:
        raise ValueError("the per-attempt limit must be a finite amount above zero")
    reserved = floor_micro(limit_usd)
    if reserved <= 0:
        raise ValueError("the per-attempt limit rounds down to zero")
    return reserved


def format_max_budget(reservation_usd: Decimal) -> str:
    """The ``--max-budget-usd`` value: the reservation floored to exactly 6 decimals (``"0.100000"``).

    Raises:
        ValueError: not a finite amount >= 0.
    """
    return f"{floor_micro(reservation_usd):f}"


def _valid(costs: Iterable[Decimal | None]) -> list[Decimal]:
    return [usd(cost, what="a cost") for cost in costs if cost is not None]


def completed_charge(reported_usd: Decimal | None, computed_usd: Decimal | None) -> Decimal:
    """Charge of a completed attempt: the larger of the valid reported and computed costs (USD).

    Raises:
        ValueError: if neither cost is valid (such an attempt is ``invalid-cost``, not
            completed), or a cost is not a finite amount >= 0.
    """
    costs = _valid((reported_usd, computed_usd))
    if not costs:
        raise ValueError("a completed attempt needs at least one valid cost")
    return max(costs)


def conservative_charge(reservation_usd: Decimal, valid_costs: Iterable[Decimal | None]) -> Decimal:
    """Charge of any non-completed attempt: ``max(reservation, every valid cost)`` (USD; ``None`` = invalid).

    Raises:
        ValueError: an amount that is not finite and >= 0.
    """
    return max([usd(reservation_usd, what="the reservation"), *_valid(valid_costs)])


@dataclass(frozen=True)
class Budget:
    """The run's budget, immutable; every operation returns a new ``Budget`` (USD).

    Attributes:
        cap: the cumulative cap.
        spent: settled charges plus open reservations (the seed's "spent").
        open_usd: reservations not yet settled (0 between attempts).

    The ledger's running sums of reservations and measured costs are ``pricing.tally.Tally``.

    Raises:
        ValueError: an amount that is not a finite ``Decimal`` >= 0, or open reservations
            larger than spend.
    """

    cap: Decimal
    spent: Decimal = Decimal(0)
    open_usd: Decimal = Decimal(0)

    def __post_init__(self) -> None:
        for name in ("cap", "spent", "open_usd"):
            object.__setattr__(self, name, usd(getattr(self, name), what=name))
        if self.open_usd > self.spent:
            raise ValueError("open reservations cannot exceed spend")

    @property
    def cap_exceeded(self) -> bool:
        """``cumulativeCapExceeded``: spend has passed the cap (strictly above it)."""
        return self.spent > self.cap

    @property
    def settled_usd(self) -> Decimal:
        """What the settled attempts were charged: ``spent`` without the open reservations (USD).

        Between attempts it equals ``spent``; while other attempts run (``--concurrency``) it is what a
        progress line can call "spent" without the number falling as their reservations settle.
        """
        with exact():
            return self.spent - self.open_usd

    @property
    def remaining_usd(self) -> Decimal:
        """What is left under the cap, never negative (USD)."""
        with exact():
            return max(self.cap - self.spent, Decimal(0))

    def fits(self, limit_usd: Decimal) -> bool:
        """Whether the full per-attempt limit fits under the remaining cap: ``spent + limit <= cap``.

        Once spend has passed the cap nothing fits, whatever the limit (no further attempt starts).

        Raises:
            ValueError: the limit is not a finite amount above zero.
        """
        limit = usd(limit_usd, what="the limit")
        if limit <= 0:
            raise ValueError("the limit must be above zero")
        if self.cap_exceeded:
            return False
        with exact():
            return self.spent + limit <= self.cap

    def reserve(self, reservation_usd: Decimal) -> Budget:
        """Add a reservation to spend and to the open reservations.

        Raises:
            ValueError: if it does not fit under the cap (callers check ``fits`` first).
        """
        reservation = usd(reservation_usd, what="the reservation")
        if not self.fits(reservation):
            raise ValueError("the reservation does not fit under the remaining cap")
        with exact():
            return Budget(self.cap, self.spent + reservation, self.open_usd + reservation)

    def settle(self, reservation_usd: Decimal, charged_usd: Decimal) -> Budget:
        """Replace an open reservation by its charge: ``spent + charged - reservation``.

        Raises:
            ValueError: the reservation is not open, or an amount is not finite and >= 0.
        """
        reservation = usd(reservation_usd, what="the reservation")
        charged = usd(charged_usd, what="the charge")
        if reservation > self.open_usd:
            raise ValueError("settling a reservation that is not open")
        with exact():
            return Budget(self.cap, self.spent + charged - reservation, self.open_usd - reservation)


def settle_attempt(
    status: str, reservation_usd: Decimal, reported_usd: Decimal | None, computed_usd: Decimal | None,
    *, exceeded_above: Decimal | None = None,
) -> tuple[str, Decimal]:
    """Settle one CLI attempt: its final status and its charge in USD (seed 000, "Budget").

    A ``completed`` attempt is charged ``max(reported, computed)``; if that exceeds
    ``exceeded_above`` (default: the reservation) the status becomes ``budget-exceeded`` (the
    charge stays). ``--strict-cap`` (issue 19) passes the per-attempt limit's own reservation
    there, so a bigger reservation never changes which attempts count as completed. Any other
    status (``error_max_budget_usd`` arrives here as ``budget-exceeded``) is charged
    ``max(reservation, every valid cost)``. ``None`` marks an invalid cost.

    Raises:
        ValueError: an unknown status, a completed attempt without any valid cost, or an
            amount that is not finite and >= 0.
    """
    if status not in CLI_STATUSES:
        raise ValueError(f"unknown attempt status {status!r}")
    if status == "completed":
        charged = completed_charge(reported_usd, computed_usd)
        bound = reservation_usd if exceeded_above is None else exceeded_above
        return ("budget-exceeded" if charged > bound else "completed"), charged
    return status, conservative_charge(reservation_usd, (reported_usd, computed_usd))


@dataclass(frozen=True)
class AttemptReservation:
    """An admitted attempt: the budget after reserving, the ``reservation_usd`` and its ``max_budget_arg``."""

    budget: Budget
    reservation_usd: Decimal
    max_budget_arg: str


@dataclass(frozen=True)
class AttemptSettlement:
    """A settled attempt: final ``status``, ``charged_usd``, the budget after, and ``cumulative_cap_exceeded``."""

    status: str
    charged_usd: Decimal
    budget: Budget
    cumulative_cap_exceeded: bool


def open_attempt(budget: Budget, limit_usd: Decimal) -> AttemptReservation | None:
    """Admit one attempt (digest 3.10 steps 1-3), or ``None`` when it is refused.

    Refused unless the full ``limit_usd`` fits under the remaining cap (so never after the
    cap was passed); otherwise reserves ``reservation_for(limit_usd)``.

    Raises:
        ValueError: the limit is not a finite amount that stays above zero when floored.
    """
    reservation = reservation_for(limit_usd)
    if not budget.fits(limit_usd):
        return None
    return AttemptReservation(budget.reserve(reservation), reservation, format_max_budget(reservation))


def close_attempt(
    budget: Budget, status: str, reservation_usd: Decimal, reported_usd: Decimal | None, computed_usd: Decimal | None
) -> AttemptSettlement:
    """Settle an open attempt into the budget (digest 3.10 steps 4 and 7) with :func:`settle_attempt`.

    Raises:
        ValueError: as :func:`settle_attempt` and :meth:`Budget.settle`.
    """
    final, charged = settle_attempt(status, reservation_usd, reported_usd, computed_usd)
    after = budget.settle(reservation_usd, charged)
    return AttemptSettlement(final, charged, after, after.cap_exceeded)
