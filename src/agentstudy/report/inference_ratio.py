"""Ratios for heavy-tailed metrics (issues 30 and 41): the ratio of arm means over tasks.

Per task each arm's mean over its included repetitions (``t_i``, ``b_i``); the estimate is
``R = sum(t) / sum(b)``, the treatment arm's mean over tasks divided by the baseline's. No task is
left out: a task whose arm mean is 0 (say, no tokens in one arm) counts with its 0, where a
geometric mean of per-task ratios would have to drop it (issue 41 item 4). The test of "the
ratio is ρ" is the sign-flip test of the task values ``z_i = t_i - ρ b_i`` (their mean is 0 exactly
when the ratio of arm means is ρ; Fieller's construction with the sign-flip test in place of the
t distribution); the interval is that test inverted over ρ > 0: the ρ it does not reject at alpha.
With non-negative values the count of flipped sets as extreme is monotone in ρ on each side, so
the accepted set is an interval: its ends are found by bisection on log ρ (to 2^-50 relative) and
1 lies in it exactly when p(1) >= alpha. Shown for tokens, wall time and USD, in words by
:func:`ratio_words` ("32 % fewer input tokens [18 %, 44 %]").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agentstudy.report.inference import TaskValues, task_effects
from agentstudy.report.inversion import FlippedSets, flipped_set_sums

RATIO_METHOD = ("ratio of arm means over tasks (treatment mean / baseline mean, every task counted); interval: "
                "the ratios ρ the sign-flip test of t − ρ·b over tasks does not reject (test inversion)")
_SEARCH_STEPS = 20
_BISECTIONS = 50


@dataclass(frozen=True)
class RatioSummary:
    """The ratio of arm means treatment/baseline (unitless) over ``tasks`` tasks, its interval (``None`` ends when
    unbounded or not computable, ``note`` saying why), the sign-flip ``p_value`` of "ratio 1" (``None`` below 2
    tasks) and ``left_out`` (always 0 since issue 41: no task is dropped; kept for the JSON's shape)."""

    tasks: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    note: str | None
    left_out: int = 0
    method: str = RATIO_METHOD


def _p_function(treatment: np.ndarray, baseline: np.ndarray, seed: int) -> Callable[[float], float]:
    """p(ρ) of the sign-flip test of ``treatment - ρ baseline`` (one shared set of flipped sets, one tolerance)."""
    flipped: FlippedSets = flipped_set_sums(np.stack([treatment, baseline], axis=1), seed=seed)
    sums_t, sums_b = flipped.sums[:, 0], flipped.sums[:, 1]
    scale = max(1.0, float(np.max(np.abs(treatment))), float(np.max(np.abs(baseline))))
    tolerance = 1e-12 * scale * treatment.size

    def p_of(rho: float) -> float:
        shifted = sums_t - rho * sums_b
        greater = flipped.base + int(np.count_nonzero(shifted <= tolerance * max(1.0, rho)))
        less = flipped.base + int(np.count_nonzero(shifted >= -tolerance * max(1.0, rho)))
        return min(1.0, 2.0 * min(greater, less) / flipped.denominator)

    return p_of


def _end(p_of: Callable[[float], float], estimate: float, alpha: float, direction: int) -> float | None:
    """The accepted end of the interval on one side of ``estimate`` (``direction`` -1 low, +1 high); ``None`` when
    no ratio that side is rejected."""
    inside = math.log(estimate)
    outside = None
    for step in range(_SEARCH_STEPS):
        candidate = inside + direction * 2.0 ** (step - 10)
        if p_of(math.exp(candidate)) < alpha:
            outside = candidate
            break
    if outside is None:
        return None
    for _ in range(_BISECTIONS):
        middle = (inside + outside) / 2
        if p_of(math.exp(middle)) >= alpha:
            inside = middle
        else:
            outside = middle
    return math.exp(inside)


def ratio_summary(values: TaskValues, *, seed: int, alpha: float) -> RatioSummary:
    """The ratio of arm means of one metric's ``values`` (task id -> (baseline, treatment) repetitions; module
    docstring).

    Raises:
        ValueError: a non-finite value.
    """
    effects = task_effects(values)
    treatment = np.array([e.treatment_mean for e in effects], dtype=float)
    baseline = np.array([e.baseline_mean for e in effects], dtype=float)
    if not effects:
        return RatioSummary(0, None, None, None, None, "no task has values in both arms")
    if math.fsum(baseline) <= 0 or math.fsum(treatment) <= 0 or np.any(baseline < 0) or np.any(treatment < 0):
        return RatioSummary(len(effects), None, None, None, None,
                            "no ratio: an arm's mean over tasks is 0 (or a value is negative)")
    estimate = math.fsum(treatment) / math.fsum(baseline)
    if len(effects) < 2:
        return RatioSummary(1, estimate, None, None, None, "not computable with 1 task (needs at least 2)")
    p_of = _p_function(treatment, baseline, seed)
    low, high = _end(p_of, estimate, alpha, -1), _end(p_of, estimate, alpha, +1)
    p_one = p_of(1.0)
    if p_one >= alpha:  # the interval holds every ratio the test does not reject, 1 among them
        low, high = (None if low is None else min(low, 1.0)), (None if high is None else max(high, 1.0))
    note = None
    if low is None or high is None:
        note = (f"unbounded {'below' if low is None else 'above'}: with {len(effects)} tasks the sign-flip test "
                f"rejects no ratio {'below' if low is None else 'above'} the estimate at alpha {alpha:g}")
    return RatioSummary(len(effects), estimate, low, high, p_one, note)


def ratio_words(summary: RatioSummary, label: str, *, fewer: str = "fewer", more: str = "more") -> str:
    """The ratio in words: ``"32 % fewer input tokens [18 %, 44 %]"`` when the interval lies on one side
    of 1, ``"5 % fewer input tokens [20 % fewer, 12 % more]"`` when it crosses it, or why not computable.
    ``fewer``/``more`` are the words for a ratio below/above 1 ("less"/"more" for time and money)."""
    if summary.estimate is None:
        return f"ratio not computable: {summary.note}"

    def change(ratio: float) -> tuple[int, str]:
        size = round(abs(1.0 - ratio) * 100)
        return size, "" if size == 0 else fewer if ratio < 1 else more

    size, word = change(summary.estimate)
    head = f"{size} % {word} {label}" if size else f"no change in {label}"
    if summary.ci_low is None or summary.ci_high is None:
        return f"{head} (×{summary.estimate:.3g}; interval unbounded)"
    (low_size, low_word), (high_size, high_word) = change(summary.ci_high), change(summary.ci_low)
    if summary.ci_high < 1:  # both ends fewer: the smaller reduction first
        bounds = f"[{low_size} %, {high_size} %]"
    elif summary.ci_low > 1:  # both ends more
        bounds = f"[{high_size} %, {low_size} %]"
    else:
        bounds = f"[{f'{high_size} % {high_word}'.strip()}, {f'{low_size} % {low_word}'.strip()}]"
    return f"{head} {bounds} (×{summary.estimate:.3g})"
