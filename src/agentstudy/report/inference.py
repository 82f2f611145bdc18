"""Task-level paired inference of one metric (issues 17 and 30): the task is the unit of analysis.

Input: per task, the included values of each arm's repetitions (metric unit: tokens, calls, ms,
USD as float, or a 0-1 score). Per task each arm's mean over its repetitions and their
difference ``treatment - baseline``; the estimate is the mean of the task differences. The
p-value is the two-sided sign-flip permutation test over the task differences, exact over all
``2^k`` sign vectors for ``k <= 16`` tasks, above that a seeded Monte Carlo whose standard error is
returned beside it, and from 10 tasks the larger of that p and the skewness-corrected bootstrap-t's
(:mod:`agentstudy.report.mean_test`; issue 41 item 3); the interval is that same test inverted
(:mod:`agentstudy.report.inversion`):
the shifts it does not reject at ``alpha``, so it excludes 0 exactly when ``p < alpha``, and is
unbounded when the design cannot reject anything. Repetitions of one task are never treated as
independent pairs. The percentile cluster bootstrap that the report used to show is kept only as
the reference ``bench/bench_coverage.py`` measures against (:func:`cluster_bootstrap_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from agentstudy.report.inversion import (
    MAX_EXACT_TASKS,
    MONTE_CARLO_FLIPS,
    SignFlipNull,
    p_at,
    sign_flip_null,
    smallest_attainable_p,
)
from agentstudy.report.mean_test import BOOTSTRAP_T_RESAMPLES, MIN_TASKS, mean_test
from agentstudy.report.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE_LEVEL

DEFAULT_ALPHA = 0.05

TaskValues = Mapping[str, tuple[Sequence[float], Sequence[float]]]
"""Task id -> (baseline repetition values, treatment repetition values), in the metric's unit."""


@dataclass(frozen=True)
class TaskEffect:
    """One task of one metric: each arm's mean over its included repetitions (metric unit), their
    difference ``treatment_mean - baseline_mean`` and how many repetitions each arm contributed."""

    task_id: str
    baseline_mean: float
    treatment_mean: float
    difference: float
    baseline_n: int
    treatment_n: int


@dataclass(frozen=True)
class TaskLevelSummary:
    """The task-level answer for one metric (issue 17, item 1), in the metric's unit.

    ``tasks`` is k (tasks with values in both arms); ``repetitions`` is r when every included task
    has r repetitions in each arm, else ``None``; ``design`` says it in words ("6 tasks × 3
    repetitions", "6 tasks × 1–3 repetitions"). ``estimate`` is the mean task difference;
    ``ci_low``/``ci_high`` the ``1 - alpha`` interval of the inverted sign-flip test (an end is
    ``None`` when unbounded, ``ci_note`` saying why in one sentence); ``p_value`` the two-sided p of
    :func:`agentstudy.report.mean_test.mean_test`; ``p_monte_carlo_se`` its Monte Carlo standard error (when
    the part that gave it is a Monte Carlo); ``p_min`` the
    smallest two-sided p the data can reach at 0 (``2 / 2^n``, n the non-zero task differences).
    Each is ``None`` with a reason in the matching ``*_note`` when not computable. ``method`` is one
    sentence naming the procedure; ``alpha`` the level of the interval.
    """

    tasks: int
    repetitions: int | None
    design: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_note: str | None
    p_value: float | None
    p_note: str | None
    p_monte_carlo_se: float | None
    method: str
    task_effects: tuple[TaskEffect, ...]
    p_min: float | None = None
    estimate_note: str | None = None
    alpha: float = DEFAULT_ALPHA


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def design_label(task_effects: Sequence[TaskEffect]) -> tuple[int | None, str]:
    """``(r, "k tasks × r repetitions")`` of included tasks; ``r`` is ``None`` (and the label shows the
    range "1–3") when tasks or arms differ in repetitions."""
    k = len(task_effects)
    counts = sorted({n for e in task_effects for n in (e.baseline_n, e.treatment_n)})
    if not counts:
        return None, f"{_plural(k, 'task')} × 0 repetitions"
    if len(counts) == 1:
        return counts[0], f"{_plural(k, 'task')} × {_plural(counts[0], 'repetition')}"
    return None, f"{_plural(k, 'task')} × {counts[0]}–{counts[-1]} repetitions"


def task_effects(values: TaskValues) -> tuple[TaskEffect, ...]:
    """The per-task means and differences of the tasks with at least one value in both arms (in
    ``values`` order; tasks missing an arm are left out).

    Raises:
        ValueError: a non-finite value.
    """
    effects = []
    for task_id, (baseline, treatment) in values.items():
        base, treat = np.asarray(baseline, dtype=float), np.asarray(treatment, dtype=float)
        if not (np.all(np.isfinite(base)) and np.all(np.isfinite(treat))):
            raise ValueError(f"task {task_id}: values must be finite")
        if base.size == 0 or treat.size == 0:
            continue
        b_mean, t_mean = math.fsum(base) / base.size, math.fsum(treat) / treat.size
        effects.append(TaskEffect(task_id, b_mean, t_mean, t_mean - b_mean, int(base.size), int(treat.size)))
    return tuple(effects)


def sign_flip_p(
    differences: Sequence[float], *, seed: int, max_exact: int = MAX_EXACT_TASKS, monte_carlo: int = MONTE_CARLO_FLIPS
) -> tuple[float, float | None]:
    """The two-sided sign-flip permutation p-value of the mean of ``differences`` (one per task) and its
    Monte Carlo standard error (:mod:`agentstudy.report.inversion`, the same null the interval inverts).

    Exact (all ``2^k`` sign vectors, standard error ``None``) when ``k <= max_exact`` or ``2^k <=
    monte_carlo``; otherwise ``monte_carlo`` random sign vectors from a generator seeded with
    ``seed`` (scipy's ``(count + 1) / (n + 1)`` estimate). Two-sided is twice the smaller one-sided
    p, at most 1, so its standard error is twice the one-sided one: ``sqrt(p (2 - p) / n)``.

    Raises:
        ValueError: no differences, or a non-finite one.
    """
    return _p_and_se(sign_flip_null(differences, seed=seed, max_exact=max_exact, draws=monte_carlo))


def _p_and_se(null: SignFlipNull) -> tuple[float, float | None]:
    p_value = p_at(null, 0.0)
    if null.draws is None:
        return p_value, None
    return p_value, math.sqrt(min(p_value, 1.0) * (2.0 - min(p_value, 1.0)) / null.draws)


def _padded(effects_values: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
    width = max(max(b.size, t.size) for b, t in effects_values)
    base = np.zeros((len(effects_values), width))
    treat = np.zeros((len(effects_values), width))
    base_n = np.array([b.size for b, _ in effects_values])
    treat_n = np.array([t.size for _, t in effects_values])
    for row, (b, t) in enumerate(effects_values):
        base[row, : b.size] = b
        treat[row, : t.size] = t
    return base, treat, base_n, treat_n


def _resampled_means(
    matrix: np.ndarray, counts: np.ndarray, chosen: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Per resample and chosen task, the mean of that task's repetitions resampled with replacement."""
    width = matrix.shape[1]
    n = counts[chosen]  # (B, k)
    picks = np.floor(rng.random((*chosen.shape, width)) * n[..., None]).astype(int)  # (B, k, width)
    drawn = matrix[chosen[..., None], picks]
    mask = np.arange(width)[None, None, :] < n[..., None]
    return np.asarray(np.where(mask, drawn, 0.0).sum(axis=2) / n)


def cluster_bootstrap_interval(
    values: TaskValues, *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """The 95 % percentile cluster-bootstrap interval of the mean task difference.

    Each of ``resamples`` resamples draws k tasks with replacement, then, per chosen task and arm,
    that arm's repetitions with replacement (its own count), and takes the mean over tasks of the
    resampled arm-mean differences. One generator seeded with ``seed``; tasks are drawn before
    repetitions, so identical repetitions give exactly the interval of one repetition.

    Raises:
        ValueError: fewer than two tasks with values in both arms, or a non-finite value.
    """
    effects = task_effects(values)
    if len(effects) < 2:
        raise ValueError("the cluster bootstrap needs at least two tasks with values in both arms")
    included = {e.task_id for e in effects}
    arrays = [(np.asarray(b, dtype=float), np.asarray(t, dtype=float))
              for task_id, (b, t) in values.items() if task_id in included]
    base, treat, base_n, treat_n = _padded(arrays)
    rng = np.random.default_rng(seed)
    k = len(effects)
    chosen = rng.integers(0, k, size=(resamples, k))
    diffs = _resampled_means(treat, treat_n, chosen, rng) - _resampled_means(base, base_n, chosen, rng)
    means = diffs.mean(axis=1)
    alpha = (1.0 - CONFIDENCE_LEVEL) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


METHOD = ("estimate: mean over tasks of (treatment mean − baseline mean over repetitions); p: two-sided test "
          "of the mean, the sign-flip permutation test over the task differences (Fisher 1935; {flips}){bootstrap}; "
          "{level} % interval: the shifts that test does not reject at alpha {alpha:g} (test inversion)")


def _method(k: int, seed: int, alpha: float) -> str:
    flips = (f"exact, all 2^{k} sign vectors" if k <= MAX_EXACT_TASKS
             else f"seeded Monte Carlo, {MONTE_CARLO_FLIPS} sign vectors, seed {seed}")
    bootstrap = ("" if k < MIN_TASKS else
                 f", rejecting only when the bootstrap-t of the skewness-corrected studentized mean also rejects "
                 f"(Hall 1992; {BOOTSTRAP_T_RESAMPLES} resamples, seed {seed})")
    return METHOD.format(flips=flips, bootstrap=bootstrap, level=f"{100 * (1 - alpha):g}", alpha=alpha)


def unbounded_note(k: int, alpha: float) -> str:
    """The one sentence shown for an unbounded interval of ``k`` tasks at ``alpha``."""
    return (f"unbounded: with {k} tasks the sign-flip test cannot reach p < {alpha:g} for any shift "
            f"(its smallest p is {min(1.0, 2.0 / 2**k):.3g})")


def point_note(low: float | None, high: float | None, k: int) -> str | None:
    """The sentence for an interval whose ends coincide (issue 41 item 5), ``None`` otherwise."""
    if low is None or high is None or low != high:
        return None
    return (f"a single point: all {k} task differences are equal, so the sign-flip test rejects every other shift; "
            "the data show no spread to estimate an interval from")


def task_level_summary(
    values: TaskValues, *, seed: int = BOOTSTRAP_SEED, alpha: float = DEFAULT_ALPHA,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> TaskLevelSummary:
    """The task-level summary of one metric (see :class:`TaskLevelSummary`; issues 17 and 30).

    ``values`` maps task id -> (baseline repetition values, treatment repetition values); tasks
    without a value in both arms are left out. With no task nothing is computable; with one task
    the estimate is its difference and neither interval nor p is computable. ``resamples`` is
    accepted for callers of the former bootstrap interval and not used.

    Raises:
        ValueError: a non-finite value.
    """
    del resamples
    effects = task_effects(values)
    k = len(effects)
    repetitions, design = design_label(effects)
    method = _method(k, seed, alpha)
    if k == 0:
        note = "no task has values in both arms"
        return TaskLevelSummary(0, None, design, None, None, None, note, None, note, None, method, (),
                                estimate_note=note, alpha=alpha)
    differences = [e.difference for e in effects]
    estimate = math.fsum(differences) / k
    if k < 2:
        note = "not computable with 1 task (needs at least 2)"
        return TaskLevelSummary(k, repetitions, design, estimate, None, None, note, None, note, None, method,
                                effects, smallest_attainable_p(differences), alpha=alpha)
    test = mean_test(differences, seed=seed, alpha=alpha)
    p_value, low, high = test.p_value, test.low, test.high
    if low is not None and high is not None and p_value >= alpha:  # one decision: never an interval without 0
        low, high = min(low, 0.0), max(high, 0.0)  # while p says "not rejected" (float ties; issue 41 item 5)
    ci_note = unbounded_note(k, alpha) if low is None else point_note(low, high, k)
    draws = [n.draws for n in (test.flip, test.bootstrap) if n is not None and n.draws is not None]
    floor = smallest_attainable_p(differences, monte_carlo_floor=min(draws) if draws else None)
    return TaskLevelSummary(k, repetitions, design, estimate, low, high, ci_note, p_value, None, test.p_monte_carlo_se,
                            method, effects, floor, alpha=alpha)
