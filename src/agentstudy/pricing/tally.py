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
    """``reserved``: sum of reservations made; ``measured``: sum of attempts' measured costs (USD)."""

    reserved: Decimal = Decimal(0)
    measured: Decimal = Decimal(0)

    def add_reservation(self, reservation_usd: Decimal) -> Tally:
        """Count one more reservation.

        Raises:
            ValueError: the amount is not a finite ``Decimal`` >= 0.
        """
        with exact():
            return Tally(self.reserved + usd(reservation_usd, what="the reservation"), self.measured)

    def add_measured(self, reported_usd: Decimal | None, computed_usd: Decimal | None) -> Tally:
        """Count an attempt's measured cost: the larger valid one of reported and computed (none: 0).

        Raises:
            ValueError: a cost that is not a finite ``Decimal`` >= 0 (``None`` marks an invalid one).
        """
        costs = [usd(c, what="a cost") for c in (reported_usd, computed_usd) if c is not None]
        with exact():
            return Tally(self.reserved, self.measured + (max(costs) if costs else Decimal(0)))
