"""How the report writes numbers: one formatter per kind, used by every rendering.

Counts and milliseconds are integers (differences signed); statistics of counts have one
decimal; USD are rounded half-up to 6 decimals for display (``pricing.sums.display_usd``);
correctness scores have 2 decimals, their statistics 3. A missing value is ``—``.
"""

from __future__ import annotations

from decimal import Decimal

from agentstudy.pricing.sums import display_usd

MISSING = "—"


def count(value: int | None) -> str:
    """An integer count (tokens, calls, ms) or ``—``."""
    return MISSING if value is None else str(value)


def signed(value: int | float | Decimal | None, kind: str) -> str:
    """A per-pair difference: ``+12`` (counts), ``+0.000010`` (USD), ``-0.50`` (scores), or ``—``."""
    if value is None:
        return MISSING
    if kind == "usd":
        return display_usd(Decimal(value) if not isinstance(value, float) else Decimal(repr(value)), signed=True)
    if kind == "score":
        return _signed_float(float(value), 2)
    return f"{int(value):+d}" if value else "0"


def _signed_float(value: float, places: int) -> str:
    text = f"{value:+.{places}f}"
    return text[1:] if float(text) == 0 else text


def statistic(value: float | None, kind: str) -> str:
    """A statistic of differences (mean, median, interval bound) in the metric's unit, signed, or ``—``."""
    if value is None:
        return MISSING
    if kind == "usd":
        return display_usd(Decimal(repr(value)), signed=True)
    return _signed_float(value, 3 if kind == "score" else 1)


def interval(low: float | None, high: float | None, note: str | None, kind: str) -> str:
    """``[low, high]``, the reason it is not computable, or a point whose ends coincide with its sentence."""
    if low is None or high is None:
        return note or MISSING
    if low == high and note:  # issue 41 item 5: never a bare [1, 1]
        return f"{statistic(low, kind)} ({note})"
    return f"[{statistic(low, kind)}, {statistic(high, kind)}]"


def p_value(value: float | None, note: str | None) -> str:
    """A p-value to 3 decimals (``< 0.001`` below that), or the reason it is not computable."""
    if value is None:
        return note or MISSING
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def usd(value: Decimal | None) -> str:
    """A USD amount to 6 decimals, or ``—``."""
    return MISSING if value is None else display_usd(value)


def plain(value: float | None, kind: str) -> str:
    """An unsigned descriptive statistic (a scenario's mean or median): 1 decimal, 6 for USD, 3 for scores."""
    if value is None:
        return MISSING
    if kind == "usd":
        return display_usd(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
    return f"{value:.{3 if kind == 'score' else 1}f}"
