"""Variance components of one metric (issues 17 and 30, item 5), named for what they are.

The model of one attempt's value of task t in arm a, repetition j:
``y = mu_a + u_t + v_ta + e_taj`` with ``u_t`` the task effect common to both arms (variance
``between_task``), ``v_ta`` the task × arm interaction (each cell's own deviation, variance
``task_by_arm``; a task's difference varies by ``2 task_by_arm`` across tasks) and ``e`` the
repetition noise within a task, whose variance is estimated per arm (``within_task``).

Method of moments on the included values: ``within_task[a]`` is the pooled variance of the
repetitions around their cell mean (degrees of freedom ``n - 1`` per cell), so identical
repetitions give exactly 0; with ``D_t`` and ``S_t`` the difference and sum of task t's two arm
means and ``w_t = within[0]/n_t0 + within[1]/n_t1``,
``task_by_arm = max(0, (var(D) - mean(w)) / 2)`` and ``between_task = max(0, (var(S) - var(D)) / 4)``
(the repetition terms cancel in ``var(S) - var(D)``). With one repetition per cell the interaction
and the repetition noise cannot be told apart: ``within_task`` is ``None`` for that arm and
``task_by_arm`` is ``None``. The ICC is ``between / (between + task_by_arm + mean within)``: the
share of one attempt's variance that belongs to its task in both arms. Units: the metric's unit
squared. Exploratory, like every statistic of the report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentstudy.report.inference import TaskValues, task_effects

MOMENTS = ("method of moments: repetitions around their task-arm mean (within), "
           "variance of task differences and sums (task × arm, between)")
TOO_SMALL = "not estimable: needs at least 2 tasks with values in both arms"
ONE_REPETITION = "with 1 repetition per task and arm, the task × arm interaction and repetition noise are confounded"


@dataclass(frozen=True)
class VarianceComponents:
    """One metric's variance components (metric unit squared; issue 30 item 5).

    ``between_task`` (task effect common to both arms), ``task_by_arm`` (the interaction),
    ``within_task`` per arm id (repetition variance; ``None`` for an arm without 2 repetitions of
    one task), ``icc`` (``None`` when a component is missing or all are 0), ``difference_variance``
    the sample variance of the task differences (``None`` below 2 tasks). ``note`` says what could
    not be estimated; ``tasks`` and ``observations`` count the included tasks and values.
    """

    tasks: int
    observations: int
    between_task: float | None
    task_by_arm: float | None
    within_task: dict[str, float | None]
    icc: float | None
    difference_variance: float | None
    method: str
    note: str | None = None


def _pooled_within(cells: list[np.ndarray], resolution: float) -> float | None:
    sums = sum(float(np.sum((c - c.mean()) ** 2)) for c in cells if c.size >= 2)
    dof = sum(c.size - 1 for c in cells if c.size >= 2)
    if dof == 0:
        return None
    value = sums / dof
    return value if value > resolution else 0.0


def variance_components(values: TaskValues, arms: tuple[str, str] = ("baseline", "treatment")) -> VarianceComponents:
    """The variance components of one metric's ``values`` (task id -> (baseline, treatment) repetition
    values; tasks without both arms left out); ``arms`` names the two arms for ``within_task``.

    Raises:
        ValueError: a non-finite value.
    """
    effects = task_effects(values)
    included = {e.task_id for e in effects}
    cells = [(np.asarray(b, dtype=float), np.asarray(t, dtype=float))
             for task_id, (b, t) in values.items() if task_id in included]
    observations = sum(b.size + t.size for b, t in cells)
    k = len(effects)
    if k < 2:
        return VarianceComponents(k, observations, None, None, dict.fromkeys(arms), None, None, MOMENTS, TOO_SMALL)
    scale = float(np.mean(np.concatenate([np.concatenate(pair) for pair in cells]) ** 2))
    resolution = 1e-12 * scale  # rounding noise of the float values, not variance
    within = {arms[0]: _pooled_within([b for b, _ in cells], resolution),
              arms[1]: _pooled_within([t for _, t in cells], resolution)}
    differences = np.array([e.difference for e in effects])
    sums = np.array([e.treatment_mean + e.baseline_mean for e in effects])
    var_d, var_s = float(np.var(differences, ddof=1)), float(np.var(sums, ddof=1))
    between = max(0.0, (var_s - var_d) / 4.0)
    between = between if between > resolution else 0.0
    note = None
    interaction: float | None = None
    if within[arms[0]] is None or within[arms[1]] is None:
        note = ONE_REPETITION
    else:
        w0, w1 = within[arms[0]] or 0.0, within[arms[1]] or 0.0
        noise = float(np.mean([w0 / e.baseline_n + w1 / e.treatment_n for e in effects]))
        interaction = max(0.0, (var_d - noise) / 2.0)
        interaction = interaction if interaction > resolution else 0.0
    icc = None
    if interaction is not None and note is None:
        mean_within = float(np.mean([v for v in within.values() if v is not None]))
        total = between + interaction + mean_within
        icc = between / total if total > 0 else None
    return VarianceComponents(k, observations, between, interaction, within, icc, var_d, MOMENTS, note)
