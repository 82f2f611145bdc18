"""Pure money arithmetic: price tables, attempt costs, reservations and settlement (Decimal USD)."""
