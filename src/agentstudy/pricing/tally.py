"""Running totals of a run's money beyond ``spent``: every reservation made and every measured cost (USD)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Tally:
    """``reserved``: sum of reservations made; ``measured``: sum of attempts' measured costs (USD)."""

    reserved: Decimal = Decimal(0)
    measured: Decimal = Decimal(0)

    def add_reservation(self, reservation_usd: Decimal) -> Tally:
        """Count one more reservation."""
        return Tally(self.reserved + reservation_usd, self.measured)

    def add_measured(self, reported_usd: Decimal | None, computed_usd: Decimal | None) -> Tally:
        """Count an attempt's measured cost: the larger valid one of reported and computed (none: 0)."""
        costs = [c for c in (reported_usd, computed_usd) if c is not None]
        return Tally(self.reserved, self.measured + (max(costs) if costs else Decimal(0)))
