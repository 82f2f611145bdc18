"""An interval as a plot's error bar, never a crash (issue 40 break 12). Pure.

An interval computed in floating point may miss its own estimate by a rounding step (a uniform ledger of
12,500 equal task differences gave ``ci_low`` a hair above the mean), and matplotlib refuses a negative bar
length. Here an interval is clipped to contain its estimate; one with a value that is not finite is not drawn
(the estimate is shown alone).
"""

from __future__ import annotations

import math


def error_bar(estimate: float, low: float | None, high: float | None) -> tuple[float, float] | None:
    """The bar lengths ``(below, above)`` of the interval ``[low, high]`` around ``estimate``, each >= 0 (the
    interval clipped to contain the estimate); ``None`` when a bound is missing or any value is not finite."""
    if low is None or high is None or not all(math.isfinite(v) for v in (estimate, low, high)):
        return None
    return max(estimate - min(low, high), 0.0), max(max(low, high) - estimate, 0.0)


__all__ = ["error_bar"]
