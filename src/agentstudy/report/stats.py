"""Pair-level statistics of one metric: mean, median and a pair bootstrap interval (no longer shown).

Since issue 17 the report shows the task-level statistics of :mod:`agentstudy.report.inference`;
these pair-level ones treat task x repetition pairs as independent and are kept only as the
reference the coverage comparison measures against (and for the constants they define).

The input is the per-pair differences ``doc-bridge-mcp - repository-only`` (one value per
task x repetition). The interval is a percentile bootstrap of the mean difference: pairs are
resampled with replacement ``BOOTSTRAP_RESAMPLES`` times from a generator seeded with
``BOOTSTRAP_SEED`` (a fresh generator per metric, so a metric's interval never depends on
which other metrics were computed). The Wilcoxon signed-rank test that used to sit here was
removed (issue 17): it ran over pairs that are not independent and, with ties, fell back to the
normal approximation (0.083 for three identical differences whose exact p is 0.25); the report's
p-value is the exact task-level sign-flip test. The interval is
undefined for fewer than two pairs and is then reported as not computable, never invented.
Statistics are estimates in binary floating point; they decide nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

BOOTSTRAP_SEED = 20261011
BOOTSTRAP_RESAMPLES = 10_000
CONFIDENCE_LEVEL = 0.95


@dataclass(frozen=True)
class PairedSummary:
    """Statistics of ``n`` paired differences (in the metric's unit).

    ``mean`` and ``median`` are ``None`` only when ``n`` is 0. ``ci_low``/``ci_high`` bound the
    95 % percentile-bootstrap interval of the mean (resampling pairs), ``None`` with a reason in
    ``ci_note`` when not computable.
    """

    n: int
    mean: float | None
    median: float | None
    ci_low: float | None
    ci_high: float | None
    ci_note: str | None


def _too_few(n: int) -> str:
    return "no pairs" if n == 0 else f"not computable with n = {n}"


def bootstrap_interval(
    differences: Sequence[float], *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the mean of ``differences`` (resampling pairs).

    Raises:
        ValueError: fewer than two differences, or a non-finite one.
    """
    data = np.asarray(differences, dtype=float)
    if data.size < 2 or not np.all(np.isfinite(data)):
        raise ValueError("the bootstrap needs at least two finite differences")
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    result = scipy_stats.bootstrap(
        (data,), np.mean, n_resamples=resamples, confidence_level=CONFIDENCE_LEVEL, method="percentile",
        vectorized=True, rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_summary(
    differences: Sequence[float], *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> PairedSummary:
    """Mean, median and pair-bootstrap interval of paired differences (the pre-issue-17 reference).

    Raises:
        ValueError: a non-finite difference.
    """
    values = [float(v) for v in differences]
    if not all(np.isfinite(values)):
        raise ValueError("paired differences must be finite")
    n = len(values)
    if n == 0:
        return PairedSummary(0, None, None, None, None, _too_few(0))
    mean = statistics.fmean(values)
    median = float(statistics.median(values))
    if n < 2:
        return PairedSummary(n, mean, median, None, None, _too_few(n))
    low, high = bootstrap_interval(values, seed=seed, resamples=resamples)
    return PairedSummary(n, mean, median, low, high, None)
