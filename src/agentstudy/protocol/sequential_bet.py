"""The ``magnitudeBet`` e-process (issue 41 item 7): one pre-declared bet size per study, chosen from its planned
horizon; the construction of every new sequential study (``protocol.sequential.e_values``). Pure.

Null: within each task the arms are interchangeable, so given every task's difference size ``|d_i|`` the signs are
independent fair coins (the sign-flip null of the fixed test and of ``protocol.sequential``). Construction:

- each difference is standardized by a scale that depends on sizes only, ``z_i = d_i / a_i`` with
  ``a_i = mean(|d_1| .. |d_i|)`` (the mean size so far, the current task's included; scale-free, any unit). Since
  ``a_i >= |d_i| / i``, ``|z_i| <= i``;
- the wealth betting that the treatment does better is ``E_n = prod (1 + tanh(c * z_i))`` with one bet size ``c``
  (per unit of the standardized difference) fixed before any data by :func:`planned_bet_size` from the design's
  ``maxTasks`` and alpha, and recorded in the ledger's sequential block as ``betSize``. The bet on task ``i`` is
  ``tanh(c |z_i|)`` in ``[0, 1)``, a function of the sizes only, so given the sizes and the past signs each factor
  has expectation exactly 1 under the null (``E[1 + s t] = 1`` for a fair sign ``s``). ``exp(c z) / cosh(c z)`` is
  the same factor: the sign-flip likelihood ratio of a shift.

``E`` is therefore a non-negative martingale with ``E_0 = 1`` (a test martingale) with respect to the filtration of
the past signs and all sizes, and by Ville's inequality (Ville 1939) ``P(E_n >= 1/alpha for some n) <= alpha``
under the null, at every stopping time: testing by betting (Shafer 2021; Waudby-Smith and Ramdas 2023). One-sided:
it bets only that the treatment does better; "worse" never stops for efficacy.

Why one bet and this scale: the log-optimal bet for a given effect shrinks as the horizon grows, so one fixed
size loses power at other horizons, while a mixture over sizes (``magnitudeMixture``,
``protocol.sequential_magnitude``) pays for the sizes it does not need. :func:`planned_bet_size` is fitted by
simulation (bench/bench_sequential_power.py, normal differences) so that the bet is near the best for the effect
the fixed design of ``maxTasks`` tasks is powered for. The mean-size scale beats the root mean square of
``magnitudeMixture`` at 20 tasks and 0.5 SD (whole rule, 200,000 studies: 45.6 % power against 44.9 % for the
best single bet on that scale, 42.5 % for the mixture; it is less moved by one large size).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    from agentstudy.protocol.sequential import BetterWhen

SQRT_WEIGHT = 0.9
""":func:`planned_bet_size`'s coefficient of ``sqrt(ln(1/alpha) / maxTasks)`` (fitted, bench/)."""
LINEAR_WEIGHT = 2.0
""":func:`planned_bet_size`'s coefficient of ``ln(1/alpha) / maxTasks`` (fitted, bench/)."""


def planned_bet_size(max_tasks: int, alpha: float) -> float:
    """The bet size ``c`` of a new ``magnitudeBet`` design: ``0.9 sqrt(L / N) + 2 L / N`` with ``L = ln(1/alpha)``
    and ``N = maxTasks``, rounded to 3 decimals (what the ledger records): 0.648 at 20 tasks and alpha 0.05, 1.092
    at 10, 0.396 at 40. Fitted by simulation (whole rule, futility 0.1, normal differences at the effect the fixed
    design of ``N`` tasks has 80 % power for, one-sided: 0.79 SD at 10, 0.56 at 20, 0.39 at 40 tasks) so that it is
    near the best single bet; the optimum is flat, a few hundredths either side cost under a point of power.

    Raises:
        ValueError: ``max_tasks`` < 1 or alpha not in (0, 1).
    """
    if max_tasks < 1 or not 0 < alpha < 1:
        raise ValueError(f"a bet size needs maxTasks >= 1 and alpha in (0, 1), got {max_tasks} and {alpha}")
    scale = math.log(1.0 / alpha) / max_tasks
    return round(SQRT_WEIGHT * math.sqrt(scale) + LINEAR_WEIGHT * scale, 3)


def mean_size_standardized(turned: NDArray[np.float64]) -> NDArray[np.float64]:
    """``z_i = d_i / mean(|d_1| .. |d_i|)`` along the last axis over the present differences; 0 for a tie, a NaN
    (a missing difference, which does not count in the mean) or while every size so far is 0."""
    import numpy as np

    present = np.isfinite(turned)
    values = np.where(present, turned, 0.0)
    count = np.cumsum(present, axis=-1)
    sizes = np.cumsum(np.abs(values), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = sizes / np.maximum(count, 1)
        z = np.where(scale > 0, values / np.where(scale > 0, scale, 1.0), 0.0)
    return z.astype(np.float64)


def bet_e_process(differences: ArrayLike, better_when: BetterWhen, bet_size: float) -> NDArray[np.float64]:
    """The one-sided e-values ``E_1 .. E_n`` after each task (shape of ``differences``, last axis the tasks in
    completion order; treatment minus control, NaN for a missing difference): ``prod (1 + tanh(bet_size z_i))``,
    see the module docstring.

    Raises:
        ValueError: a bet size that is not a positive finite number.
    """
    if not (math.isfinite(bet_size) and bet_size > 0):
        raise ValueError(f"the bet size must be a positive number, got {bet_size}")
    import numpy as np

    from agentstudy.protocol.sequential_magnitude import oriented

    z = mean_size_standardized(oriented(differences, better_when))
    return np.cumprod(1.0 + np.tanh(bet_size * z), axis=-1).astype(np.float64)


__all__ = ["LINEAR_WEIGHT", "SQRT_WEIGHT", "bet_e_process", "mean_size_standardized", "planned_bet_size"]
