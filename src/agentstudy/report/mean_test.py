"""The task-level test of the mean (issue 41, item 3): the exact sign-flip test together with a skewness-corrected
studentized bootstrap test, and the interval inverted from both.

Why two parts. The sign-flip test (:mod:`agentstudy.report.inversion`) is exact when each task difference is as
likely to be negative as positive (no effect on any task). As a test of *equal arm means* it is only asymptotically
valid: when the arms differ in spread and one is skewed, the task differences are skewed and the test over-rejects at
10–20 tasks. Studentizing the sign-flip statistic does not help: a sign flip keeps ``sum(d_i^2)``, so the flipped
vector's ``t = mean / (sd / sqrt k)`` is an increasing function of its mean and orders the flips exactly as the mean
does. The second part is the studentized bootstrap (bootstrap-t) of Hall's skewness-removing transformation of ``t``
(Hall 1992, JRSS B 54: 221–228; Efron and Tibshirani 1993, chapter 12), second-order accurate for the mean of
skewed data. The test rejects a shift only when both parts reject it: ``p = max(p_flip, p_boot)``. So it keeps the
sign-flip test's exactness under "no effect on any task" and the bootstrap's accuracy for "equal means".

The bootstrap part as thresholds. With ``m``, ``s``, ``g`` (skewness ``mean((d - m)^3) / s^3``) of the k differences,
``t(δ) = (m - δ) / (s / sqrt k)`` and Hall's ``H(δ) = t + g t^2 / (3 sqrt k) + g^2 t^3 / (27 k) + g / (6 sqrt k)``,
which increases with t. Each of ``B`` seeded resamples (k tasks with replacement) gives ``H*`` of its own ``t* = (m* -
m) / (s* / sqrt k)`` and ``g*``. ``H*_j >= H(δ)`` exactly when ``δ >= δ_j = m - (s / sqrt k) H^-1(H*_j)``, so the
bootstrap null is the sorted ``δ_j`` with ``base`` 1 and ``D = B + 1`` — the same shape as the sign-flip null, and
:func:`agentstudy.report.inversion.p_at` / :func:`~agentstudy.report.inversion.inverted_interval` give its p and
interval with the sign-flip test's tolerance. A resample without spread (up to rounding) is studentized by the data's
``s`` with skewness 0, so every ``δ_j`` is finite. Differences without spread, or fewer than :data:`MIN_TASKS`,
have no bootstrap part (the sign-flip test alone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentstudy.report.inversion import MONTE_CARLO_FLIPS, SignFlipNull, inverted_interval, p_at, sign_flip_null

BOOTSTRAP_T_RESAMPLES = 9_999
"""Resamples of the skewness-corrected bootstrap-t (``D = 10,000``, so ``alpha * D / 2`` is whole at 0.05 and 0.01;
about 2.5 s at 25,000 tasks, where the Monte Carlo sign flips take about 18 s)."""
MIN_TASKS = 10
"""Fewer tasks than this: the sign-flip test alone. A bootstrap of so few values is no reliable reference (its
intervals run to several times the data's range), and the sign-flip test's discreteness kept its equal-mean type-I
at or below alpha in every cell measured under 10 tasks (docs/benchmarks.md)."""
_CELLS_PER_BATCH = 2_000_000
"""Resampled values drawn at a time (memory stays linear in the number of tasks)."""


def _hall(t: np.ndarray, skew: np.ndarray, k: int) -> np.ndarray:
    """Hall's (1992) transformation of studentized means ``t`` with sample skewness ``skew`` of ``k`` values."""
    root = math.sqrt(k)
    return np.asarray(t + skew * t**2 / (3 * root) + skew**2 * t**3 / (27 * k) + skew / (6 * root))


def _hall_inverse(h: np.ndarray, skew: float, k: int) -> np.ndarray:
    """The ``t`` whose :func:`_hall` transform is ``h`` (the transform is an increasing cubic, so one real root)."""
    a = skew / (3 * math.sqrt(k))
    shifted = h - skew / (6 * math.sqrt(k))
    if a == 0.0:
        return np.asarray(shifted)
    u = 3 * a * shifted
    with np.errstate(invalid="ignore"):
        # cbrt(1 + u) - 1, accurate for small u (expm1/log1p) and real for 1 + u <= 0
        cube = np.where(u > -1.0, np.expm1(np.log1p(np.where(u > -1.0, u, 0.0)) / 3.0), np.cbrt(1.0 + u) - 1.0)
    return np.asarray(cube / a)


def _moments(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``values`` (n x k): mean, sample SD (ddof 1) and skewness ``mean((x - m)^3) / sd^3`` (0 without
    spread)."""
    mean = values.mean(axis=1)
    centred = values - mean[:, None]
    squares = centred * centred
    sd = np.sqrt(squares.sum(axis=1) / (values.shape[1] - 1))
    squares *= centred
    with np.errstate(divide="ignore", invalid="ignore"):
        skew = np.where(sd > 0, squares.mean(axis=1) / sd**3, 0.0)
    return mean, sd, skew


def bootstrap_t_null(differences: Sequence[float], *, seed: int,
                     resamples: int | None = None) -> SignFlipNull | None:
    """The bootstrap part's null as thresholds ``δ_j`` (module docstring) in a :class:`SignFlipNull` (``means``
    sorted, ``base`` 1, ``denominator`` B + 1, ``exact`` False, ``draws`` B, the sign-flip test's ``tolerance``), or
    ``None`` when fewer than :data:`MIN_TASKS` differences or all equal (no spread to studentize by). Seeded,
    deterministic.
    ``resamples`` defaults to :data:`BOOTSTRAP_T_RESAMPLES`.

    Raises:
        ValueError: a non-finite difference.
    """
    data = np.asarray(differences, dtype=float)
    if not np.all(np.isfinite(data)):
        raise ValueError("the bootstrap-t test needs finite differences")
    k = int(data.size)
    if k < MIN_TASKS:
        return None
    mean, sd, skew = (float(x[0]) for x in _moments(data[None, :]))
    floor = 1e-12 * max(1.0, float(np.max(np.abs(data))))
    if sd <= floor:
        return None
    if resamples is None:
        resamples = BOOTSTRAP_T_RESAMPLES
    rng = np.random.default_rng([seed, 41, 3])
    batch = max(1, _CELLS_PER_BATCH // k)
    parts: list[np.ndarray] = []
    for start in range(0, resamples, batch):
        drawn = data[rng.integers(0, k, size=(min(batch, resamples - start), k))]
        r_mean, r_sd, r_skew = _moments(drawn)
        flat = r_sd <= floor  # no spread (up to rounding): studentized by the data's SD, skewness 0
        t_star = (r_mean - mean) / (np.where(flat, sd, r_sd) / math.sqrt(k))
        h_star = _hall(t_star, np.where(flat, 0.0, r_skew), k)
        parts.append(mean - (sd / math.sqrt(k)) * _hall_inverse(h_star, skew, k))
    thresholds = np.sort(np.concatenate(parts))
    tolerance = 1e-12 * max(1.0, float(np.max(np.abs(data)))) * k
    return SignFlipNull(thresholds, 1, resamples + 1, False, resamples, tolerance)


@dataclass(frozen=True)
class MeanTest:
    """The task-level test of the mean at δ = 0 and its ``1 - alpha`` interval.

    ``p_value`` = ``max(p_flip, p_bootstrap)`` (``p_bootstrap`` ``None`` without a bootstrap part); ``low``/``high``
    the shifts neither part rejects (``None`` ends: unbounded); ``p_monte_carlo_se`` the Monte Carlo SE of whichever
    part gave ``p_value`` (``None`` when that part is the exact sign-flip enumeration); ``flip``/``bootstrap`` the two
    nulls (metric unit)."""

    p_value: float
    p_flip: float
    p_bootstrap: float | None
    low: float | None
    high: float | None
    p_monte_carlo_se: float | None
    flip: SignFlipNull
    bootstrap: SignFlipNull | None


def _se(null: SignFlipNull, p_value: float) -> float | None:
    if null.draws is None:
        return None
    return math.sqrt(min(p_value, 1.0) * (2.0 - min(p_value, 1.0)) / null.draws)


def _interval(null: SignFlipNull, alpha: float) -> tuple[float | None, float | None]:
    low, high = inverted_interval(null, alpha)
    if low is None or high is None or not math.isfinite(low) or not math.isfinite(high):
        return None, None
    return low, high


def mean_test(differences: Sequence[float], *, seed: int, alpha: float, resamples: int | None = None,
              flips: int = MONTE_CARLO_FLIPS) -> MeanTest:
    """The test of "the mean task difference is 0" over ``differences`` (one per task, metric unit; module
    docstring), its interval at ``alpha`` and both parts (``resamples`` bootstrap-t resamples, by default
    :data:`BOOTSTRAP_T_RESAMPLES`; ``flips`` Monte Carlo sign vectors above 16 tasks). The interval is the hull of
    the two parts' intervals (each holds the mean); should 0 ever fall between them while both parts reject it, p
    is raised to ``alpha`` so the interval and the test stay one decision (issue 41 item 5).

    Raises:
        ValueError: no differences, or a non-finite one.
    """
    flip = sign_flip_null(differences, seed=seed, draws=flips)
    bootstrap = bootstrap_t_null(differences, seed=seed, resamples=resamples)
    p_flip = p_at(flip, 0.0)
    low, high = _interval(flip, alpha)
    if bootstrap is None:
        return MeanTest(p_flip, p_flip, None, low, high, _se(flip, p_flip), flip, None)
    p_boot = p_at(bootstrap, 0.0)
    p_value = max(p_flip, p_boot)
    se = _se(flip, p_flip) if p_flip >= p_boot else _se(bootstrap, p_boot)
    b_low, b_high = _interval(bootstrap, alpha)
    if low is None or high is None or b_low is None or b_high is None:
        low = high = None
    else:
        low, high = min(low, b_low), max(high, b_high)
        if p_value < alpha and low <= 0.0 <= high:  # 0 between the two parts' intervals
            p_value = alpha
    return MeanTest(p_value, p_flip, p_boot, low, high, se, flip, bootstrap)
