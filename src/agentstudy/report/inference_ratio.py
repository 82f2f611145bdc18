"""Ratios for heavy-tailed metrics (issue 30, item 3): the geometric mean of per-task arm-mean ratios.

Per task the ratio ``treatment mean / baseline mean`` over its included repetitions; the estimate
is their geometric mean ``exp(mean(log ratio))`` and the interval is the sign-flip test of the log
ratios inverted (:mod:`agentstudy.report.inversion`), mapped back with ``exp``, so it excludes 1
exactly when that test's p < alpha. A task whose arm mean is 0 in either arm has no ratio and is
left out (counted in ``left_out``). Shown for tokens, wall time and USD, in words by
:func:`ratio_words` ("32 % fewer input tokens [18 %, 44 %]").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentstudy.report.inference import TaskValues, task_effects, unbounded_note
from agentstudy.report.inversion import inverted_interval, p_at, sign_flip_null


@dataclass(frozen=True)
class RatioSummary:
    """Geometric mean ratio treatment/baseline (unitless) over ``tasks`` tasks with a ratio, its interval
    (``None`` ends when unbounded or not computable, ``note`` saying why), the log-scale sign-flip
    ``p_value`` (``None`` below 2 tasks) and ``left_out`` (tasks with an arm mean of 0)."""

    tasks: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    note: str | None
    left_out: int = 0


def ratio_summary(values: TaskValues, *, seed: int, alpha: float) -> RatioSummary:
    """The geometric-mean ratio of one metric's ``values`` (task id -> (baseline, treatment) repetitions).

    Raises:
        ValueError: a non-finite value.
    """
    effects = task_effects(values)
    logs = [math.log(e.treatment_mean / e.baseline_mean) for e in effects
            if e.baseline_mean > 0 and e.treatment_mean > 0]
    left_out = len(effects) - len(logs)
    if not logs:
        return RatioSummary(0, None, None, None, None, "no task has a positive mean in both arms", left_out)
    estimate = math.exp(math.fsum(logs) / len(logs))
    if len(logs) < 2:
        return RatioSummary(1, estimate, None, None, None, "not computable with 1 task (needs at least 2)", left_out)
    null = sign_flip_null(logs, seed=seed)
    low, high = inverted_interval(null, alpha)
    if low is None or high is None:
        return RatioSummary(len(logs), estimate, None, None, p_at(null, 0.0), unbounded_note(len(logs), alpha),
                            left_out)
    return RatioSummary(len(logs), estimate, math.exp(low), math.exp(high), p_at(null, 0.0), None, left_out)


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
