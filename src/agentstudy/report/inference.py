"""Task-level paired inference of one metric (issue 17, item 1): the task is the unit of analysis.

Input: per task, the included values of each arm's repetitions (metric unit: tokens, calls, ms,
USD as float, or a 0-1 score). Per task each arm's mean over its repetitions and their
difference ``treatment - baseline``; the estimate is the mean of the task differences. The
95 % interval is a percentile cluster bootstrap: tasks are resampled with replacement, then
repetitions within each resampled task, per arm. The p-value is the two-sided sign-flip
permutation test over the task differences (scipy ``permutation_test`` on one sample with
``permutation_type='samples'`` flips signs): exact over all ``2^k`` sign vectors for ``k <= 16``
tasks, above that a seeded Monte Carlo whose standard error is returned beside it. Repetitions
of one task are never treated as independent pairs. Everything here is exploratory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from agentstudy.report.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE_LEVEL

MAX_EXACT_TASKS = 16
MONTE_CARLO_FLIPS = 100_000

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
    ``ci_low``/``ci_high`` the 95 % cluster-bootstrap interval; ``p_value`` the two-sided sign-flip
    p; ``p_monte_carlo_se`` its Monte Carlo standard error (only for k > 16); ``p_min`` the smallest
    two-sided p the design can reach (``2 / 2^k`` exactly). Each is ``None`` with a reason in the
    matching ``*_note`` when not computable. ``method`` is one sentence naming both procedures.
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
    Monte Carlo standard error.

    Exact (all ``2^k`` sign vectors, standard error ``None``) when ``k <= max_exact`` or ``2^k <=
    monte_carlo``; otherwise ``monte_carlo`` random sign vectors from a generator seeded with
    ``seed`` (scipy's ``(count + 1) / (n + 1)`` estimate), standard error ``sqrt(p (1 - p) / n)``.
    Two-sided is twice the smaller one-sided p, at most 1.

    Raises:
        ValueError: no differences, or a non-finite one.
    """
    data = np.asarray(differences, dtype=float)
    if data.size == 0 or not np.all(np.isfinite(data)):
        raise ValueError("the sign-flip test needs at least one finite difference")
    k = int(data.size)
    exact = k <= max_exact or 2**k <= monte_carlo
    result = scipy_stats.permutation_test(
        (data,), np.mean, permutation_type="samples", vectorized=True, alternative="two-sided",
        n_resamples=np.inf if exact else monte_carlo, batch=8192, rng=np.random.default_rng(seed),
    )
    p_value = float(result.pvalue)
    if exact:
        return p_value, None
    return p_value, math.sqrt(p_value * (1.0 - p_value) / monte_carlo)


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


METHOD = ("exploratory; estimate: mean over tasks of (treatment mean − baseline mean over repetitions); "
          "95 % interval: percentile cluster bootstrap ({resamples} resamples of tasks, then repetitions "
          "within task per arm, seed {seed}); p: two-sided sign-flip permutation test over the task "
          "differences ({flips})")


def _method(k: int, seed: int, resamples: int) -> str:
    flips = (f"exact, all 2^{k} sign vectors" if k <= MAX_EXACT_TASKS
             else f"seeded Monte Carlo, {MONTE_CARLO_FLIPS} sign vectors, seed {seed}")
    return METHOD.format(resamples=resamples, seed=seed, flips=flips)


def task_level_summary(
    values: TaskValues, *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> TaskLevelSummary:
    """The task-level summary of one metric (see :class:`TaskLevelSummary`; issue 17, item 1).

    ``values`` maps task id -> (baseline repetition values, treatment repetition values); tasks
    without a value in both arms are left out. With no task nothing is computable; with one task
    the estimate is its difference and neither interval nor p is computable.

    Raises:
        ValueError: a non-finite value.
    """
    effects = task_effects(values)
    k = len(effects)
    repetitions, design = design_label(effects)
    method = _method(k, seed, resamples)
    if k == 0:
        note = "no task has values in both arms"
        return TaskLevelSummary(0, None, design, None, None, None, note, None, note, None, method, (),
                                estimate_note=note)
    differences = [e.difference for e in effects]
    estimate = math.fsum(differences) / k
    p_min = 2.0 / 2**k if k <= 1023 else 0.0
    if k < 2:
        note = "not computable with 1 task (needs at least 2)"
        return TaskLevelSummary(k, repetitions, design, estimate, None, None, note, None, note, None, method,
                                effects, min(1.0, p_min))
    low, high = cluster_bootstrap_interval(values, seed=seed, resamples=resamples)
    p_value, p_se = sign_flip_p(differences, seed=seed)
    return TaskLevelSummary(k, repetitions, design, estimate, low, high, None, p_value, None, p_se, method,
                            effects, min(1.0, p_min))
