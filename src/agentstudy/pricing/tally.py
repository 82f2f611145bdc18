"""Running totals of a run's money beyond ``spent``: every reservation made and every measured cost (USD).

The ledger's ``budget.reserved`` and ``budget.measured`` (digest 4.1). Exact ``Decimal``
arithmetic under ``pricing.money.exact``; amounts are validated like every other charge.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from agentstudy.pricing.money import exact, usd


@dataclass(frozen=True)
class Tally:
    """``reserved``: sum of reservations made; ``measured``: sum of attempts' measured costs (USD).

    ``largest_overshoot``: the most an attempt's measured cost went above its per-attempt limit
    (issue 19: ``budget.largestOvershootUsd``); ``None`` while none did, or when no limit is given.
    """

    reserved: Decimal = Decimal(0)
    measured: Decimal = Decimal(0)
    largest_overshoot: Decimal | None = None

    def add_reservation(self, reservation_usd: Decimal) -> Tally:
        """Count one more reservation.

        Raises:
            ValueError: the amount is not a finite ``Decimal`` >= 0.
        """
        with exact():
            return Tally(self.reserved + usd(reservation_usd, what="the reservation"), self.measured,
                         self.largest_overshoot)

    def add_measured(self, reported_usd: Decimal | None, computed_usd: Decimal | None,
                     limit_usd: Decimal | None = None) -> Tally:
        """Count an attempt's measured cost: the larger valid one of reported and computed (none: 0).

        With ``limit_usd`` (the per-attempt limit), a measured cost above it raises
        ``largest_overshoot`` to ``measured - limit`` when that is larger.

        Raises:
            ValueError: a cost that is not a finite ``Decimal`` >= 0 (``None`` marks an invalid one).
        """
        costs = [usd(c, what="a cost") for c in (reported_usd, computed_usd) if c is not None]
        measured = max(costs) if costs else Decimal(0)
        largest = self.largest_overshoot
        with exact():
            if limit_usd is not None and measured > limit_usd:
                largest = max(largest or Decimal(0), measured - limit_usd)
            return Tally(self.reserved, self.measured + measured, largest)
