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

One computation for one study and for many. Each resample's moments come from its counts of each task times the
powers 1–3 of the differences about their mean (:func:`_thresholds`; matrix products, so the resampled values are
never materialised). :func:`mean_test` runs it for the report's one data set; :func:`mean_test_rejects` runs the same
flipped sets, resample counts and thresholds for every simulated study of the power planner at once and counts the
decision at 0 (issue 41: a plan simulates exactly the test the report runs).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from agentstudy.report.inversion import (
    MONTE_CARLO_FLIPS,
    SignFlipNull,
    flipped_set_sums,
    inverted_interval,
    p_at,
    sign_flip_null,
)

BOOTSTRAP_T_RESAMPLES = 9_999
"""Resamples of the skewness-corrected bootstrap-t (``D = 10,000``, so ``alpha * D / 2`` is whole at 0.05 and 0.01;
about 2.5 s at 25,000 tasks, where the Monte Carlo sign flips take about 18 s)."""
MIN_TASKS = 10
"""Fewer tasks than this: the sign-flip test alone. A bootstrap of so few values is no reliable reference (its
intervals run to several times the data's range), and the sign-flip test's discreteness kept its equal-mean type-I
at or below alpha in every cell measured under 10 tasks (docs/benchmarks.md)."""
_CELLS_PER_BATCH = 2_000_000
"""Resampled task indices drawn at a time (memory stays linear in the number of tasks)."""
_FLAT = 1e-9
"""A resample's spread at most this share of its mean square about the data's mean is rounding (no spread): a
resample of one repeated value leaves about ``2 k`` machine epsilons there."""


def _hall(t: np.ndarray, skew: np.ndarray, k: int) -> np.ndarray:
    """Hall's (1992) transformation of studentized means ``t`` with sample skewness ``skew`` of ``k`` values."""
    root = math.sqrt(k)
    square = t * t
    return np.asarray(t + skew * square / (3 * root) + skew * skew * (square * t) / (27 * k) + skew / (6 * root))


def _hall_inverse(h: np.ndarray, skew: np.ndarray, k: int) -> np.ndarray:
    """The ``t`` whose :func:`_hall` transform is ``h`` (the transform is an increasing cubic, so one real root);
    ``skew`` broadcasts against ``h`` (a row's skewness beside its resamples)."""
    a = np.asarray(skew / (3 * math.sqrt(k)))
    shifted = h - skew / (6 * math.sqrt(k))
    u = 3 * a * shifted
    with np.errstate(invalid="ignore", divide="ignore"):
        # cbrt(1 + u) - 1, accurate for small u (expm1/log1p) and real for 1 + u <= 0
        cube = np.where(u > -1.0, np.expm1(np.log1p(np.where(u > -1.0, u, 0.0)) / 3.0), np.cbrt(1.0 + u) - 1.0)
        return np.asarray(np.where(a == 0.0, shifted, cube / np.where(a == 0.0, 1.0, a)))


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


def _count_batches(k: int, seed: int, resamples: int) -> Iterator[np.ndarray]:
    """How often each resample draws each task (``resamples`` x ``k`` floats in all, batches of at most
    :data:`_CELLS_PER_BATCH` cells), from the task indices of the generator seeded with ``[seed, 41, 3]``: the same
    for every data set of ``k`` tasks."""
    rng = np.random.default_rng([seed, 41, 3])
    batch = max(1, _CELLS_PER_BATCH // k)
    for start in range(0, resamples, batch):
        drawn = rng.integers(0, k, size=(min(batch, resamples - start), k))
        offsets = np.arange(drawn.shape[0])[:, None] * k
        yield np.bincount((offsets + drawn).ravel(), minlength=drawn.size).reshape(drawn.shape).astype(float)


def _thresholds(rows: np.ndarray, counts: np.ndarray, mean: np.ndarray, sd: np.ndarray, skew: np.ndarray,
                floor: np.ndarray | float) -> np.ndarray:
    """The thresholds ``δ_j`` (module docstring) of the resamples ``counts`` (b x k draws of each task) for each row of
    ``rows`` (n x k differences with moments ``mean``, ``sd``, ``skew`` and no-spread ``floor``, each of n): n x b.
    One computation for the report's test of one data set and the planner's of many (a check is a promise).

    Each resample's moments come from its counts of each task (b x k) times the powers 1-3 of the row's differences
    about the row's mean (matrix products: the resampled values are never materialised). A resample whose spread
    is at most :data:`_FLAT` of its mean square about the row's mean, or whose SD is at most ``floor``, has no spread
    (all its values equal, up to rounding)."""
    n, k = rows.shape
    centred = rows - mean[:, None]
    square = centred * centred
    sums = np.concatenate([centred, square, square * centred]) @ counts.T
    s1, s2, s3 = sums[:n], sums[n:2 * n], sums[2 * n:]
    shift = s1 / k  # the resample's mean minus the row's
    spread = np.maximum(s2 - s1 * shift, 0.0)  # sum over the resample of (value - its mean)^2
    r_sd = np.sqrt(spread / (k - 1))
    flat = (spread <= _FLAT * s2) | (r_sd <= np.asarray(floor, dtype=float).reshape(-1, 1))
    safe_sd = np.where(flat, 1.0, r_sd)
    r_skew = np.where(flat, 0.0, (s3 - 3.0 * shift * s2 + 2.0 * k * (shift * shift * shift)) / k
                      / (safe_sd * safe_sd * safe_sd))
    sd_ = sd[:, None]
    t_star = shift / (np.where(flat, sd_, r_sd) / math.sqrt(k))  # studentized by the data's SD when flat
    h_star = _hall(t_star, r_skew, k)
    return np.asarray(mean[:, None] - (sd_ / math.sqrt(k)) * _hall_inverse(h_star, skew[:, None], k))


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
    parts = [_thresholds(data[None, :], counts, np.array([mean]), np.array([sd]), np.array([skew]), floor)[0]
             for counts in _count_batches(k, seed, resamples)]
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


PLANNER_RESAMPLES = 1_000
"""Bootstrap-t resamples of the power planner's simulated studies (the report runs :data:`BOOTSTRAP_T_RESAMPLES`).
``D = 1,001`` puts ``alpha * D / 2`` just above a whole count at the usual levels (25.025 at 0.05), so the largest
rejecting p is just below alpha as in the report's test; with 999 (``D = 1,000``) it was 0.048 and the planner's
power fell 0.7 points short of the report's test at 10 tasks. Measured on the same 4,000 normal studies a cell
(docs/benchmarks.md): the planner's rejection rate is 0.2 points below the report's test at 10 tasks, 0.7 at 20 and
40, 1.1 at 80 — inside the planner's Monte Carlo SE (1.44 points at 1,200 studies), and never above it."""
PLANNER_FLIPS = 4_000
"""Monte Carlo sign vectors of the planner's simulated studies above 16 tasks (the report: 100,000); ``D = 4,001``
for the reason given at :data:`PLANNER_RESAMPLES`."""
_PLANNER_CELLS = 4_000_000
"""Values held at a time by :func:`mean_test_rejects` (flipped-set sums or resampled differences)."""


def _counts(values: np.ndarray, tolerance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``values`` (null draws x studies): how many are at most ``tolerance`` and at least
    ``-tolerance`` — :func:`agentstudy.report.inversion.p_at`'s ties at δ = 0, counted for many studies."""
    return (values <= tolerance).sum(axis=0), (values >= -tolerance).sum(axis=0)


def _flip_part(data: np.ndarray, tolerance: np.ndarray, seed: int, flips: int) -> tuple[np.ndarray, np.ndarray]:
    """The sign-flip part's two-sided p at 0 and its side (True: the data lie above 0) for each row of ``data``."""
    n = data.shape[0]
    greater, less = np.empty(n), np.empty(n)
    base = denominator = 0
    step = None
    start = 0
    while start < n:
        chunk = data[start:start + (step or 1)]
        flipped = flipped_set_sums(chunk.T, seed=seed, draws=flips)  # the report's flipped sets (same seed, same k)
        base, denominator = flipped.base, flipped.denominator
        g, l_ = _counts(flipped.sums / flipped.sizes[:, None], tolerance[start:start + chunk.shape[0]])
        greater[start:start + chunk.shape[0]], less[start:start + chunk.shape[0]] = base + g, base + l_
        start += chunk.shape[0]
        step = max(1, _PLANNER_CELLS // flipped.sums.shape[0])
    return np.minimum(1.0, 2.0 * np.minimum(greater, less) / denominator), greater < less


def _bootstrap_part(data: np.ndarray, tolerance: np.ndarray, seed: int,
                    resamples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bootstrap part's p at 0, its side and whether the row has one (spread above the floor, as
    :func:`bootstrap_t_null` decides) for each row of ``data`` (at least :data:`MIN_TASKS` columns)."""
    n, k = data.shape
    mean, sd, skew = _moments(data)
    floor = 1e-12 * np.maximum(1.0, np.max(np.abs(data), axis=1))
    present = sd > floor
    greater, less = np.zeros(n), np.zeros(n)
    batches = list(_count_batches(k, seed, resamples))
    rows = np.flatnonzero(present)
    step = max(1, _PLANNER_CELLS // 4 // resamples)
    for start in range(0, rows.size, step):
        chosen = rows[start:start + step]
        for counts in batches:
            thresholds = _thresholds(data[chosen], counts, mean[chosen], sd[chosen], skew[chosen], floor[chosen])
            g, l_ = _counts(thresholds.T, tolerance[chosen])
            greater[chosen] += g
            less[chosen] += l_
    p = np.minimum(1.0, 2.0 * np.minimum(1 + greater, 1 + less) / (resamples + 1))
    return p, greater < less, present


def mean_test_rejects(differences: np.ndarray, alpha: float, *, seed: int, resamples: int = PLANNER_RESAMPLES,
                      flips: int = PLANNER_FLIPS) -> np.ndarray:
    """Whether :func:`mean_test` of each row of ``differences`` (studies x k task differences, metric unit) with
    ``seed``, ``resamples`` and ``flips`` rejects "the mean task difference is 0" at ``alpha`` (``p_value < alpha``,
    the report's decision): a boolean array of one entry per study. The same flipped sets
    (:func:`~agentstudy.report.inversion.flipped_set_sums`), resample indices and thresholds (:func:`_thresholds`)
    as :func:`mean_test` computes for one study, counted at 0 for many at once; the two parts rejecting on opposite
    sides of 0 is no rejection, as :func:`mean_test` raises p to ``alpha`` then. For the power planner (issue 41).

    Raises:
        ValueError: a non-finite difference, or no task.
    """
    data = np.asarray(differences, dtype=float)
    if data.ndim != 2 or data.shape[1] == 0 or not np.all(np.isfinite(data)):
        raise ValueError("the test of the mean needs finite differences, one row per study")
    k = data.shape[1]
    tolerance = 1e-12 * np.maximum(1.0, np.max(np.abs(data), axis=1)) * k
    p_flip, flip_above = _flip_part(data, tolerance, seed, flips)
    rejected: np.ndarray = p_flip < alpha
    rows = np.flatnonzero(rejected)  # the bootstrap part can only keep a rejection: run it where the flips reject
    if k < MIN_TASKS or rows.size == 0:
        return rejected
    p_boot, boot_above, present = _bootstrap_part(data[rows], tolerance[rows], seed, resamples)
    rejected[rows] = np.where(present, (p_boot < alpha) & (boot_above == flip_above[rows]), True)
    return rejected
