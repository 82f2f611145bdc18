"""How many tasks a study needs, with the pilot's own uncertainty carried (issue 30, item 6).

A plan made from a pilot's point estimates is overconfident: the variance of the task differences
from a handful of tasks can be far from the truth. :func:`tasks_needed` gives the needed number of
tasks three times, for the smallest effect worth detecting (``effect``, metric unit): from the point
estimates of the variance components (``estimate``), and from their lower and upper one-sided
``confidence`` bounds (``low``, ``high``; chi-square bounds on the variance of the task differences,
``k - 1`` degrees of freedom, and on each arm's pooled repetition variance, its own degrees of
freedom). ``high`` is ``None`` when even :data:`report.power.MAX_TASKS` tasks do not reach the target
at the upper bound: the pilot is then too small to plan from, and the note says so. The search is
:func:`report.power.needed_tasks` (simulated sign-flip tests); its Monte Carlo error is stated
separately and is not the planning uncertainty. A ratio effect (tokens, time, money) is planned on the log
scale of the report's ratio (:func:`log_scale_values`, effect ``log ratio``). The alpha to plan at is the
primary endpoint's, or for a secondary metric Holm's first-step level ``alpha / m`` (:func:`planning_alpha`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from scipy import stats as scipy_stats

from agentstudy.report.inference import TaskValues, task_effects
from agentstudy.report.power import MAX_TASKS, SIMULATIONS, Components, estimate_components, needed_tasks

CONFIDENCE = 0.9
"""One-sided level of each bound: the range is a 90 % lower to a 90 % upper bound (80 % two-sided)."""


@dataclass(frozen=True)
class TasksNeeded:
    """Tasks needed at ``repetitions`` per arm: ``estimate`` (point components), ``low`` and ``high`` (the
    components' lower / upper confidence bounds); ``None`` when more than :data:`MAX_TASKS` are needed,
    ``note`` saying so. ``monte_carlo_se`` is the largest simulation standard error of the power (0-1)."""

    estimate: int | None
    low: int | None
    high: int | None
    note: str | None
    monte_carlo_se: float


def planning_alpha(alpha: float, role: str, secondaries: int) -> float:
    """The level to plan at: ``alpha`` for the primary (or an exploratory metric), ``alpha / secondaries`` for a
    secondary (Holm's strictest step, so the plan holds whatever the other secondaries show)."""
    return alpha / max(1, secondaries) if role == "secondary" else alpha


def _degrees(values: TaskValues) -> tuple[int, int]:
    included = {e.task_id for e in task_effects(values)}
    base = sum(max(0, len(b) - 1) for t, (b, _) in values.items() if t in included)
    treat = sum(max(0, len(a) - 1) for t, (_, a) in values.items() if t in included)
    return base, treat


def _bound(variance: float, df: int, upper: bool) -> float:
    if df == 0:  # a one-repetition pilot has no repetition variance to bound (issue 41 item 6)
        return variance
    quantile = float(scipy_stats.chi2.ppf(1 - CONFIDENCE if upper else CONFIDENCE, df))
    return variance * df / quantile


def bounded_components(values: TaskValues) -> tuple[Components, Components, Components]:
    """``(point, lower, upper)`` components: the lower/upper ones take each variance's chi-square bound.

    Raises:
        report.power.PilotTooSmall: fewer than 2 tasks with values in both arms.
    """
    point = estimate_components(values)
    base_df, treat_df = _degrees(values)
    effects = task_effects(values)
    noise = [(e.baseline_n, e.treatment_n) for e in effects]

    def side(upper: bool) -> Components:
        observed = _bound(point.observed_variance, point.tasks - 1, upper)
        base = _bound(point.baseline_variance, base_df, upper)
        treat = _bound(point.treatment_variance, treat_df, upper)
        repetition_noise = statistics.fmean(base / nb + treat / nt for nb, nt in noise)
        # the upper plan keeps the point repetition noise out of the task variance so it never shrinks it
        removed = point.observed_variance - point.task_variance if upper else repetition_noise
        return replace(point, task_variance=max(0.0, observed - removed), baseline_variance=base,
                       treatment_variance=treat, observed_variance=observed)

    return point, side(False), side(True)


def log_scale_values(values: TaskValues) -> TaskValues:
    """``values`` (task id -> (baseline, treatment) repetitions, positive metric unit) on the log scale of the
    report's ratio (:mod:`report.inference_ratio`): each arm's mean ``m`` becomes ``log m`` exactly and each
    repetition ``y`` becomes ``log m + (y - m) / m`` (the delta method: the repetition SD becomes the arm's
    coefficient of variation), so each task's difference of arm means is its log ratio of arm means, the
    quantity the ratio's sign-flip test uses. Tasks with an arm mean of 0 or below are left out, as the
    ratio leaves them out.
    """
    logged: dict[str, tuple[list[float], list[float]]] = {}
    for task, (baseline, treatment) in values.items():
        arms = [list(map(float, baseline)), list(map(float, treatment))]
        if not all(arms):
            continue
        means = [statistics.fmean(arm) for arm in arms]
        if min(means) <= 0:
            continue
        base, treat = ([math.log(m) + (y - m) / m for y in arm] for arm, m in zip(arms, means, strict=True))
        logged[task] = (base, treat)
    return logged


def tasks_needed(values: TaskValues, effect: float, repetitions: int, alpha: float, power: float) -> TasksNeeded:
    """The needed number of tasks for ``effect`` (metric unit) with its range (see the module docstring).

    Raises:
        report.power.PilotTooSmall: the pilot cannot estimate the components.
        ValueError: ``effect`` zero or non-finite, ``repetitions`` < 1.
    """
    point, lower, upper = bounded_components(values)
    found = [needed_tasks(c, effect, repetitions, alpha, power) for c in (point, lower, upper)]
    se = max((math.sqrt(d.estimate.power * (1 - d.estimate.power) / SIMULATIONS) for d in found
              if d.estimate is not None), default=0.0)
    estimate, low, high = (d.tasks for d in found)
    note = None
    if high is None:
        note = (f"the pilot is too small to plan from: at its upper variance bound more than {MAX_TASKS} tasks "
                "would be needed; run a larger pilot")
    return TasksNeeded(estimate, low, high, note, se)
