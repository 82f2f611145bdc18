"""Variance components of one metric (issue 17, item 2): between-task and within-task variance, ICC.

The pooled attempts (every included repetition of both arms) are fitted with a random-intercept
model, ``value ~ 1 + arm`` with a random intercept per task (statsmodels ``MixedLM``, REML). When
the model cannot be fitted, does not converge or warns (a boundary fit, a singular matrix), a
method-of-moments estimator is used instead: one-way ANOVA by task of the values with each arm's
mean removed, the between-task component floored at 0. Which one was used is always stated.
The variance of the task differences (what the task-level test works on) is given beside them.
Units are the metric's unit squared. Exploratory, like every statistic of the report.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from agentstudy.report.inference import TaskValues, task_effects

MIXED_LM = "random-intercept model (statsmodels MixedLM, REML, arm as fixed effect)"
MOMENTS = "method of moments (one-way ANOVA by task of arm-centred values)"
TOO_SMALL = "not estimable: a pilot needs at least 2 tasks × 2 repetitions (in at least one arm)"


@dataclass(frozen=True)
class VarianceComponents:
    """One metric's variance components (metric unit squared; issue 17, item 2).

    ``between_task`` is the variance of the task intercepts, ``within_task`` the repetition
    (residual) variance, ``icc`` = between / (between + within) (``None`` when both are 0);
    ``difference_variance`` the sample variance of the per-task differences (``None`` for fewer
    than 2 tasks). ``method`` names the estimator actually used; ``note`` says why the model was
    not used or why nothing is estimable (then the components are ``None``). ``tasks`` and
    ``observations`` count the included tasks and pooled values.
    """

    tasks: int
    observations: int
    between_task: float | None
    within_task: float | None
    icc: float | None
    difference_variance: float | None
    method: str
    note: str | None = None


def _icc(between: float, within: float) -> float | None:
    total = between + within
    return between / total if total > 0 else None


def _pooled(values: TaskValues) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    included = {e.task_id for e in task_effects(values)}
    y: list[float] = []
    arm: list[float] = []
    group: list[int] = []
    for index, (task_id, (baseline, treatment)) in enumerate(values.items()):
        if task_id not in included:
            continue
        for flag, series in ((0.0, baseline), (1.0, treatment)):
            for value in series:
                y.append(float(value))
                arm.append(flag)
                group.append(index)
    return np.asarray(y), np.asarray(arm), np.asarray(group)


def moments_components(y: np.ndarray, arm: np.ndarray, group: np.ndarray) -> tuple[float, float]:
    """``(between, within)`` by one-way ANOVA by ``group`` of ``y`` minus its arm's mean; between floored at 0
    (on a balanced design with a positive between component this equals the REML fit).

    Raises:
        ValueError: fewer than 2 groups or no more observations than groups.
    """
    labels, inverse, sizes = np.unique(group, return_inverse=True, return_counts=True)
    k, n = len(labels), int(y.size)
    arms = len(np.unique(arm))
    if k < 2 or n <= k + arms - 1:
        raise ValueError("the ANOVA estimator needs at least 2 tasks and more values than tasks")
    centred = y.copy()
    for flag in np.unique(arm):
        centred[arm == flag] -= centred[arm == flag].mean()
    group_means = np.bincount(inverse, weights=centred) / sizes
    grand = centred.mean()
    ss_between = float(np.sum(sizes * (group_means - grand) ** 2))
    ss_within = float(np.sum((centred - group_means[inverse]) ** 2))
    # removing the arm means costs (arms - 1) within-task degrees of freedom (as in REML)
    ms_between, ms_within = ss_between / (k - 1), ss_within / (n - k - (arms - 1))
    n0 = (n - float(np.sum(sizes**2)) / n) / (k - 1)
    resolution = 1e-12 * float(np.mean(y**2))  # rounding noise of the float values, not variance
    between = max(0.0, (ms_between - ms_within) / n0)
    return (between if between > resolution else 0.0), (ms_within if ms_within > resolution else 0.0)


def mixed_components(y: np.ndarray, arm: np.ndarray, group: np.ndarray) -> tuple[float, float]:
    """``(between, within)`` from statsmodels ``MixedLM`` (random intercept per group, arm fixed, REML).

    Raises:
        ValueError: the fit failed, did not converge, warned, or gave a non-finite component (the
            message says which).
    """
    from statsmodels.regression.mixed_linear_model import MixedLM

    spread = float(np.std(y))
    if spread == 0:
        raise ValueError("every value is the same")
    exog = np.column_stack([np.ones_like(y), arm])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:  # fitted on standardised values (USD variances are ~1e-7), rescaled below
            result = MixedLM((y - y.mean()) / spread, exog, groups=group).fit(reml=True)
        except (Warning, ValueError, ArithmeticError, np.linalg.LinAlgError) as problem:
            name = type(problem).__name__
            raise ValueError(f"MixedLM {name}: {str(problem).splitlines()[0] if str(problem) else name}") from None
    if not result.converged:
        raise ValueError("MixedLM did not converge")
    between = float(np.asarray(result.cov_re).reshape(-1)[0]) * spread**2
    within = float(result.scale) * spread**2
    if not (np.isfinite(between) and np.isfinite(within)) or between < 0 or within < 0:
        raise ValueError("MixedLM gave a non-finite or negative component")
    if within <= 1e-9 * spread**2:
        raise ValueError("MixedLM reached the boundary (within-task variance 0)")
    return between, within


def variance_components(values: TaskValues) -> VarianceComponents:
    """The variance components of one metric's ``values`` (task id -> (baseline, treatment) repetition
    values; tasks without both arms left out). MixedLM first, method of moments as the stated fallback;
    components ``None`` with :data:`TOO_SMALL` when fewer than 2 tasks or no repetitions to compare.

    Raises:
        ValueError: a non-finite value.
    """
    effects = task_effects(values)
    differences = [e.difference for e in effects]
    diff_var = float(np.var(differences, ddof=1)) if len(differences) >= 2 else None
    y, arm, group = _pooled(values)
    k, n = len(effects), int(y.size)
    repeated = any(e.baseline_n >= 2 or e.treatment_n >= 2 for e in effects)
    if k < 2 or not repeated:
        return VarianceComponents(k, n, None, None, None, diff_var, "none", TOO_SMALL)
    try:
        between, within = mixed_components(y, arm, group)
        return VarianceComponents(k, n, between, within, _icc(between, within), diff_var, MIXED_LM)
    except ValueError as problem:
        note = f"the model was not used: {problem}"
    between, within = moments_components(y, arm, group)
    return VarianceComponents(k, n, between, within, _icc(between, within), diff_var, MOMENTS, note)
