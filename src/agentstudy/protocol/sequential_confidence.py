"""The anytime-valid confidence sequence of a sequential study (issue 41 item 7): the e-process inverted. Pure.

For a shift δ, :func:`agentstudy.protocol.sequential.e_process` of the shifted task differences ``d - δ`` is a
test martingale when the task differences are symmetric about δ (the sign-flip null, moved to δ). By Ville's
inequality ``P(E_n(δ) >= 1/alpha for some n) <= alpha`` for the true δ, so the set
``{δ : E_n(δ) < 1/alpha}`` after ``n`` tasks holds the true δ at every n at once with probability at least
``1 - alpha``: it stays valid at whatever time the study stopped, unlike a fixed-design interval computed on an
optionally stopped sample (Howard, Ramdas, McAuliffe and Sekhon 2021; Waudby-Smith and Ramdas 2024).

It is computed on a grid of :data:`GRID` shifts spanning the differences' range widened by it on both sides;
the reported ``low``/``high`` are the hull of the accepted grid points widened by one grid step (so the set
is never narrower than the accepted shifts), ``None`` when an accepted shift reaches the grid's edge (the
data cannot bound that side). The estimate is the mean of the present task differences.

Each construction inverts its own e-process (``protocol.sequential.e_values``, ``magnitudeBet`` with the ledger's
recorded ``betSize``). The one-sided ``magnitudeBet`` and ``magnitudeMixture`` (issue 41 item 7) test "not better"
only, so their sequence bounds the effect on one side: it holds every shift short of which the evidence that the
treatment does better than that shift stays under ``1/alpha``; the bound in the better direction's opposite is the
one reported (``low`` when higher is better, ``high`` when lower is), the other end ``None``. After an efficacy stop
it excludes 0, as the test did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agentstudy.protocol.sequential import LEGACY_CONSTRUCTION, BetterWhen, Construction, e_values

GRID = 4001


@dataclass(frozen=True)
class ConfidenceSequence:
    """The confidence sequence at the last task: ``estimate`` (mean task difference, metric unit) and the ends
    ``low``/``high`` (``None`` when unbounded), at level ``1 - alpha``."""

    estimate: float | None
    low: float | None
    high: float | None
    alpha: float


def confidence_sequence(differences: Sequence[float | None], better_when: BetterWhen, alpha: float,
                        construction: Construction = LEGACY_CONSTRUCTION,
                        bet_size: float | None = None) -> ConfidenceSequence:
    """The confidence sequence after every difference of ``differences`` (treatment − control per task, in the
    order the tasks completed; ``None`` for a task without both arms) under ``construction`` (with its recorded
    ``bet_size`` for ``magnitudeBet``), see the module docstring.

    Raises:
        ValueError: ``magnitudeBet`` without a bet size.
    """
    import numpy as np

    present = [d for d in differences if d is not None and math.isfinite(d)]
    if not present:
        return ConfidenceSequence(None, None, None, alpha)
    estimate = math.fsum(present) / len(present)
    values = np.array([np.nan if d is None else d for d in differences], dtype=np.float64)
    low_data, high_data = min(present), max(present)
    span = max(high_data - low_data, abs(estimate), 1e-12)
    shifts = np.linspace(low_data - span, high_data + span, GRID)
    wealth = e_values(values[None, :] - shifts[:, None], better_when, construction, bet_size)[0][:, -1]
    accepted = np.flatnonzero(wealth < 1.0 / alpha)
    if accepted.size == 0:  # no shift survives (cannot happen for the centre of the data, kept for safety)
        return ConfidenceSequence(estimate, None, None, alpha)
    step = float(shifts[1] - shifts[0])
    first, last = int(accepted[0]), int(accepted[-1])
    low = None if first == 0 else float(shifts[first]) - step
    high = None if last == GRID - 1 else float(shifts[last]) + step
    if construction != LEGACY_CONSTRUCTION:  # one-sided: only the bound against the better direction
        low, high = (low, None) if better_when == "higher" else (None, high)
    return ConfidenceSequence(estimate, low, high, alpha)
