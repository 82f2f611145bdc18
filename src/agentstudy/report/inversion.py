"""The exact sign-flip test over task differences and its inversion into an interval (issue 30, item 2).

For k task differences ``d`` the test of "the mean task difference is δ" flips the signs of
``d - δ``. A sign vector that flips the set F of tasks gives a mean at least the observed one
exactly when ``sum(d_i - δ for i in F) <= 0``, i.e. when F is empty or the mean of ``d`` over F is
at most δ. So with ``m`` the means of ``d`` over the non-empty flipped sets,

    p_greater(δ) = (base + #{m <= δ}) / D,   p_less(δ) = (base + #{m >= δ}) / D,
    p(δ) = min(1, 2 min(p_greater, p_less)),

exact with every non-empty subset, ``base`` 1 (no flip) and ``D = 2^k`` for ``k <= 16`` tasks; above
that a seeded Monte Carlo of ``draws`` sign vectors, ``base`` 1 + the draws that flip nothing and
``D = draws + 1`` (scipy ``permutation_test``'s convention). The interval ``{δ : p(δ) >= alpha}`` is
then the closed interval between two order statistics of ``m``: it excludes 0 exactly when
``p(0) < alpha``, because both come from the same counts. When ``alpha * D / 2 <= base`` no δ is
rejected and the interval is unbounded (``None`` ends). Pure numpy; exact to the floating-point
comparison of subset sums (a tolerance of 1e-12 of the data's scale decides ties, as scipy's does);
the same tolerance snaps an interval end to 0, so "the interval excludes 0" and "p < alpha" are one
decision (issue 41 item 5).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

MAX_EXACT_TASKS = 16
MONTE_CARLO_FLIPS = 100_000
_BATCH = 8192
PACKED_MIN_TASKS = 257
"""From this many tasks on, Monte Carlo subsets are drawn from random bytes in smaller batches (issue 29, scale)."""


@dataclass(frozen=True)
class SignFlipNull:
    """The flipped-set means of one set of differences: ``means`` sorted ascending (non-empty flipped
    sets), ``base`` (flips that change nothing: the identity, plus empty Monte Carlo draws),
    ``denominator`` D, ``exact`` and ``draws`` (``None`` when exact). ``tolerance`` decides ties."""

    means: np.ndarray
    base: int
    denominator: int
    exact: bool
    draws: int | None
    tolerance: float


@lru_cache(maxsize=32)
def _subset_bits(k: int) -> np.ndarray:
    """Every non-empty subset of k items as a (2^k - 1, k) 0/1 float matrix (cached per k)."""
    codes = np.arange(1, 2**k, dtype=np.int64)
    return ((codes[:, None] >> np.arange(k)[None, :]) & 1).astype(float)


def sign_flip_null(differences: Sequence[float], *, seed: int, max_exact: int = MAX_EXACT_TASKS,
                   draws: int = MONTE_CARLO_FLIPS) -> SignFlipNull:
    """The null of the sign-flip test of ``differences`` (one per task; see the module docstring).

    Exact when ``k <= max_exact`` or ``2^k <= draws``; else ``draws`` random sign vectors from a
    generator seeded with ``seed`` (the same vectors for every δ, so p and interval agree).

    Raises:
        ValueError: no differences, or a non-finite one.
    """
    data = np.asarray(differences, dtype=float)
    if data.size == 0 or not np.all(np.isfinite(data)):
        raise ValueError("the sign-flip test needs at least one finite difference")
    tolerance = 1e-12 * max(1.0, float(np.max(np.abs(data)))) * int(data.size)
    flipped = flipped_set_sums(data[:, None], seed=seed, max_exact=max_exact, draws=draws)
    means = flipped.sums[:, 0] / flipped.sizes
    return SignFlipNull(np.sort(means), flipped.base, flipped.denominator, flipped.draws is None, flipped.draws,
                        tolerance)


@dataclass(frozen=True)
class FlippedSets:
    """The non-empty flipped sets of one sign-flip null: per set the sums of each data column (``sums``, n x c)
    and its size (``sizes``), ``base`` (flips that change nothing), ``denominator`` D and ``draws`` (``None`` when
    exact). The same sets for every column, so tests built on several columns share one null."""

    sums: np.ndarray
    sizes: np.ndarray
    base: int
    denominator: int
    draws: int | None


def flipped_set_sums(columns: np.ndarray, *, seed: int, max_exact: int = MAX_EXACT_TASKS,
                     draws: int = MONTE_CARLO_FLIPS) -> FlippedSets:
    """Every non-empty flipped set's column sums of ``columns`` (k tasks x c columns): exact when
    ``k <= max_exact`` or ``2^k <= draws``, else ``draws`` seeded random sign vectors (as :func:`sign_flip_null`)."""
    k = int(columns.shape[0])
    if k <= max_exact or 2**k <= draws:
        bits = _subset_bits(k)
        return FlippedSets(bits @ columns, bits.sum(axis=1), 1, 2**k, None)
    rng = np.random.default_rng(seed)
    if k >= PACKED_MIN_TASKS:
        def packed(size: int) -> np.ndarray:
            return np.unpackbits(rng.integers(0, 256, size=(size, (k + 7) // 8), dtype=np.uint8), axis=1, count=k)

        return _sampled(columns, draws, max(64, 4_000_000 // k), packed)
    return _sampled(columns, draws, _BATCH, lambda size: rng.random((size, k)) < 0.5)


def _sampled(columns: np.ndarray, draws: int, batch: int, subsets: Callable[[int], np.ndarray]) -> FlippedSets:
    """The Monte Carlo flipped sets from ``draws`` random subsets (``subsets(n)``: an ``n x k`` 0/1 array), ``batch``
    at a time (for many tasks from random bytes, 8 tasks per byte, so time and memory stay linear in ``k``;
    issue 29): each non-empty subset's column sums, the empty ones counted apart."""
    sums: list[np.ndarray] = []
    sizes: list[np.ndarray] = []
    empty = 0
    remaining = draws
    while remaining > 0:
        size = min(batch, remaining)
        bits = subsets(size)
        counts = bits.sum(axis=1, dtype=np.int64)  # counted on the 0/1 bytes, not on a float copy (issue 29)
        keep = counts > 0
        nonempty = int(np.count_nonzero(keep))
        empty += size - nonempty
        chosen = bits if nonempty == size else bits[keep]  # no copy of the batch when no subset is empty
        sums.append(chosen.astype(float) @ columns)
        sizes.append(counts[keep])
        remaining -= size
    return FlippedSets(np.concatenate(sums), np.concatenate(sizes), 1 + empty, draws + 1, draws)


def p_at(null: SignFlipNull, delta: float) -> float:
    """The two-sided p of "the mean task difference is ``delta``" (ties within the tolerance count)."""
    greater = null.base + int(np.searchsorted(null.means, delta + null.tolerance, side="right"))
    less = null.base + int(null.means.size - np.searchsorted(null.means, delta - null.tolerance, side="left"))
    return min(1.0, 2.0 * min(greater, less) / null.denominator)


def inverted_interval(null: SignFlipNull, alpha: float) -> tuple[float | None, float | None]:
    """``{δ : p(δ) >= alpha}`` as ``(low, high)``; ``(None, None)`` when no δ can be rejected.

    ``p_greater(δ) >= alpha/2`` holds from the c-th smallest flipped-set mean on, where c is the
    smallest count with ``base + c >= alpha * D / 2``; ``p_less`` mirrors it from above.
    """
    needed = alpha * null.denominator / 2.0
    count = max(0, math.ceil(needed - null.base - 1e-9))
    if count == 0 or count > null.means.size:
        return None, None
    return _snapped(float(null.means[count - 1]), null), _snapped(float(null.means[null.means.size - count]), null)


def _snapped(end: float, null: SignFlipNull) -> float:
    """An interval end within the test's tie tolerance of 0 is 0 (issue 41 item 5): :func:`p_at` counts such a
    flipped-set mean as a tie at δ = 0, so the interval must hold 0 too — one tolerance for test and interval."""
    return 0.0 if abs(end) <= null.tolerance else end


def smallest_attainable_p(differences: Sequence[float], *, monte_carlo_floor: int | None = None) -> float:
    """The smallest two-sided p the sign-flip test can give at δ = 0: ``2 / 2^n`` with n the non-zero
    differences (a zero difference flips to itself), at most 1; with a Monte Carlo test at least
    ``2 / (draws + 1)``."""
    nonzero = sum(1 for d in differences if d != 0)
    floor = 2.0 / 2**nonzero if nonzero <= 1023 else 0.0
    if monte_carlo_floor is not None:
        floor = max(floor, 2.0 / (monte_carlo_floor + 1))
    return min(1.0, floor)
