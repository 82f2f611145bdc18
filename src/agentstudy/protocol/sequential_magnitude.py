"""A magnitude-aware e-process for the sign-flip null (issue 41 item 7): the one-sided ``magnitudeMixture``
construction, which new sequential studies ran before ``magnitudeBet`` (``protocol.sequential_bet``); ledgers that
record it replay with it (``protocol.sequential.e_values``). Measured by bench/bench_sequential_power.py. Pure.

Null: within each task the arms are interchangeable, so given every task's difference size ``|d_i|`` the signs
are independent fair coins (the sign-flip null of the fixed test and of ``protocol.sequential``). Construction:

- each difference is standardized by a scale that depends on sizes only, ``z_i = d_i / s_i`` with
  ``s_i = sqrt(mean(d_1^2 .. d_i^2))`` (the root mean square of the sizes so far; scale-free, any unit);
- for each bet size ``c`` of the grid :data:`BET_GRID`, one side's wealth is ``prod (1 + tanh(c * z_i))``
  (betting that the treatment does better) and the other's ``prod (1 - tanh(c * z_i))``: the bet on task ``i``
  is ``tanh(c |z_i|)`` in ``[0, 1)``, a function of sizes only, so given the sizes and the past signs each factor
  has expectation exactly 1 under the null (``E[1 + sign * t] = 1`` for a fair sign). ``exp(c z) / cosh(c z)``
  is the same factor: the exact sign-flip likelihood ratio of a shift, not a sub-Gaussian bound;
- the e-value is the average over the grid and both sides (two-sided), or over the grid on the declared better
  side only (``two_sided=False``, one-sided: evidence that the treatment does better).

An average of test martingales with respect to the filtration of past signs and all sizes is a test martingale,
so by Ville's inequality (Ville 1939) ``P(E_n >= 1/alpha for some n) <= alpha`` under the null, at every stopping
time of the observed data. The magnitudes enter the bets (larger differences carry larger bets), unlike the
sign bets of ``protocol.sequential``, whose sizes are capped at the earlier mean.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    from agentstudy.protocol.sequential import BetterWhen

BET_GRID: tuple[float, ...] = (0.5, 0.7)
"""The bet sizes mixed with equal weight (per unit of the standardized difference): the ``magnitudeMixture``
construction's, fixed with its name (a change is a new construction). Chosen by simulation (bench/, 20,000 studies
a cell) against (0.25, 0.5, 1.0). Under the runners' whole rule (futility 0.1, out of reach; 20 tasks, 0.5 SD,
200,000 studies, bench_sequential_power's target table) it has 42.5 % power; ``magnitudeBet``, one bet planned from
the horizon on the mean-size scale, has 45.6 %, and replaced it for new studies."""


def standardized(turned: NDArray[np.float64]) -> NDArray[np.float64]:
    """``z_i = d_i / sqrt(mean(d_1^2 .. d_i^2))`` along the last axis; 0 for a tie, a NaN (missing difference) or
    while every size so far is 0."""
    import numpy as np

    values = np.where(np.isfinite(turned), turned, 0.0)
    count = np.cumsum(np.isfinite(turned), axis=-1)
    squares = np.cumsum(values * values, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.sqrt(squares / np.maximum(count, 1))
        z = np.where(scale > 0, values / np.where(scale > 0, scale, 1.0), 0.0)
    return z.astype(np.float64)


def oriented(differences: ArrayLike, better_when: BetterWhen) -> NDArray[np.float64]:
    """Task differences (treatment - control, shape ``(..., n)``) turned so that positive means the
    treatment did better; NaN (a missing difference) stays NaN."""
    import numpy as np

    values = np.asarray(differences, dtype=np.float64)
    return -values if better_when == "lower" else values


def magnitude_e_process(differences: ArrayLike, better_when: BetterWhen, *, two_sided: bool = True,
                        grid: tuple[float, ...] = BET_GRID) -> NDArray[np.float64]:
    """The e-values ``E_1 .. E_n`` after each task (shape of ``differences``, last axis the tasks in completion
    order; treatment minus control, NaN for a missing difference): the grid mixture of the module docstring.

    Raises:
        ValueError: an empty ``grid`` or a bet size that is not positive.
    """
    if not grid or min(grid) <= 0:
        raise ValueError("the bet grid needs at least one positive bet size")
    import numpy as np

    z = standardized(oriented(differences, better_when))
    total = np.zeros(z.shape, dtype=np.float64)
    for c in grid:
        bet = np.tanh(c * z)
        total += np.cumprod(1.0 + bet, axis=-1)
        if two_sided:
            total += np.cumprod(1.0 - bet, axis=-1)
    result: NDArray[np.float64] = total / (len(grid) * (2 if two_sided else 1))
    return result


__all__ = ["BET_GRID", "magnitude_e_process", "standardized"]
