"""The power section of every report and of ``agentstudy power`` (issue 17, item 3): plans per metric.

For each metric: the task values of the ledger (:func:`report.analysis.task_values`), the method-of-moments variance
components of :mod:`report.power`, the minimum detectable difference of the study's own design and
the tasks needed per number of repetitions to detect a difference: ``--effect`` when given, else (in
reports) a difference as large as the observed task-level estimate, for planning the next study,
never a verdict on this one. A pilot too small to estimate the components says what the next
pilot must hold. Everything is exploratory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.arm_names import arm_label
from agentstudy.report import fmt
from agentstudy.report.analysis import Analysis, Metric, task_values
from agentstudy.report.document import Block, Paragraph, Section, Table
from agentstudy.report.inference import TaskValues, task_effects
from agentstudy.report.model import BASELINE, TREATMENT, Study
from agentstudy.report.power import (
    SEED,
    SIMULATIONS,
    Components,
    Detectable,
    NeededDesign,
    PilotTooSmall,
    estimate_components,
    minimum_detectable,
    needed_designs,
    smallest_tasks,
)
from agentstudy.report.power_primary import primary_power_sentence
from agentstudy.report.power_range import planning_alpha

ALPHA = 0.05
POWER = 0.8


@dataclass(frozen=True)
class MetricPlan:
    """One metric's power plan: ``components`` (``None`` with ``too_small`` saying what the next pilot
    must hold), the study's ``detectable`` difference, and the ``needed`` designs for ``effect`` (metric
    unit; ``None`` with ``effect_note`` when there is no difference to plan for), planned at ``alpha``."""

    metric: Metric
    components: Components | None
    too_small: str | None
    detectable: Detectable | None
    effect: float | None
    effect_source: str
    effect_note: str | None
    needed: tuple[NeededDesign, ...]
    alpha: float = ALPHA


def plan_metric(metric: Metric, values: TaskValues, *, alpha: float = ALPHA, power: float = POWER,
                effect: float | None = None, observed_effect: bool = False, seed: int = SEED) -> MetricPlan:
    """The plan of one metric from its task ``values``: with ``effect`` (metric unit) the needed designs
    for it; without, and with ``observed_effect``, for the observed task-level estimate's size.

    Raises:
        ValueError: a non-finite value, or ``alpha``/``power`` outside (0, 1).
    """
    try:
        components = estimate_components(values)
    except PilotTooSmall as problem:
        return MetricPlan(metric, None, str(problem), None, effect, "", None, (), alpha)
    detectable = minimum_detectable(components, alpha, power, seed=seed)
    source, note = "--effect", None
    if effect is None and observed_effect:
        effects = task_effects(values)
        effect = sum(e.difference for e in effects) / len(effects)
        source = "the observed estimate's size"
    if effect is None or effect == 0:
        note = "the observed estimate is 0: give agentstudy power --effect X" if effect == 0 else None
        return MetricPlan(metric, components, None, detectable, None, source, note, (), alpha)
    return MetricPlan(metric, components, None, detectable, abs(effect), source, None,
                      needed_designs(components, effect, alpha, power, seed=seed), alpha)


def study_alpha(analysis: Analysis, metric_key: str | None) -> float:
    """The level to plan ``metric_key`` at: the study's alpha for its declared primary (or an exploratory metric,
    or ``None``: the primary's), Holm's strictest level ``alpha / m`` for one of ``m`` secondary metrics."""
    role = next((r.role for r in analysis.results if r.metric.key == metric_key), "primary")
    secondaries = sum(1 for r in analysis.results if r.role == "secondary")
    return planning_alpha(analysis.alpha, role, secondaries)


def power_plans(analysis: Analysis, *, metric_key: str | None = None, effect: float | None = None,
                alpha: float | None = None, power: float = POWER,
                observed_effect: bool = False) -> tuple[MetricPlan, ...]:
    """The plans of every metric of ``analysis`` (or only ``metric_key``), each at ``alpha`` when given, else
    at :func:`study_alpha` (the declared primary's alpha, Holm's strictest level for a secondary).

    Raises:
        KeyError: ``metric_key`` is not one of the analysis' metrics.
    """
    metrics = [m for m in analysis.metrics if metric_key is None or m.key == metric_key]
    if not metrics:
        raise KeyError(metric_key)
    return tuple(plan_metric(m, task_values(analysis.study, m, analysis.repriced),
                             alpha=study_alpha(analysis, m.key) if alpha is None else alpha, power=power,
                             effect=effect, observed_effect=observed_effect) for m in metrics)


def _sd(variance: float, kind: str) -> str:
    return fmt.plain(math.sqrt(variance), kind)


def _design(tasks: int, repetitions: int) -> str:
    return f"{tasks} task{'s' if tasks != 1 else ''} × {repetitions} repetition{'s' if repetitions != 1 else ''}"


def _mde_cell(plan: MetricPlan) -> str:
    detectable = plan.detectable
    if detectable is None:
        return plan.too_small or fmt.MISSING
    if detectable.difference is None:
        return detectable.note or fmt.MISSING
    text = fmt.plain(detectable.difference, plan.metric.kind)
    if detectable.estimate is not None:
        text += f" (power {detectable.estimate.power:.1%} ± {detectable.estimate.mc_se:.1%} Monte Carlo error)"
    return text if detectable.note is None else f"{text}: {detectable.note}"


def _needed_cell(design: NeededDesign) -> str:
    if design.tasks is None or design.estimate is None:
        return design.note or fmt.MISSING
    return f"{design.tasks} ({design.estimate.power:.0%})"


BASELINE_LABEL, TREATMENT_LABEL = arm_label(BASELINE), arm_label(TREATMENT)


def arm_pair(study: Study) -> tuple[str, str]:
    """The two arms' labels, control first (``Study.arm_name``), as the power tables name them."""
    return study.arm_name(BASELINE), study.arm_name(TREATMENT)


def power_blocks(plans: tuple[MetricPlan, ...], power: float = POWER,
                 arms: tuple[str, str] = (BASELINE_LABEL, TREATMENT_LABEL)) -> tuple[Block, ...]:
    """The section's blocks: components and MDE per metric (each at its own two-sided alpha), the needed
    designs, the method."""
    rows = []
    for plan in plans:
        c = plan.components
        kind = plan.metric.kind
        rows.append((plan.metric.label, plan.metric.unit, f"{plan.alpha:g}",
                     _design(c.tasks, c.repetitions) if c else fmt.MISSING,
                     _sd(c.task_variance, kind) if c else fmt.MISSING,
                     _sd(c.baseline_variance, kind) if c else fmt.MISSING,
                     _sd(c.treatment_variance, kind) if c else fmt.MISSING, _mde_cell(plan)))
    blocks: list[Block] = [Table(
        "power-design", f"Minimum detectable paired difference of this design (two-sided alpha per row, "
                        f"power {power:.0%}; exploratory)",
        ("metric", "unit", "alpha", "design", "task SD of Δ", f"repetition SD {arms[0]}", f"repetition SD {arms[1]}",
         "minimum detectable |Δ|"), tuple(rows), frozenset({2, 4, 5, 6}))]
    planned = [p for p in plans if p.needed]
    if planned:
        counts = [d.repetitions for d in planned[0].needed]
        blocks.append(Table(
            "power-needed", f"Tasks needed to detect a difference at power {power:.0%} (simulated power in "
                            "brackets)",
            ("metric", "alpha", "difference", "from", *(f"r = {r}" for r in counts)),
            tuple((p.metric.label, f"{p.alpha:g}", fmt.plain(p.effect, p.metric.kind), p.effect_source,
                   *(_needed_cell(d) for d in p.needed)) for p in planned),
            frozenset({1, 2, *range(4, 4 + len(counts))})))
    alphas = sorted({p.alpha for p in plans})
    floors = ", ".join(f"{smallest_tasks(a)} at alpha {a:g}" for a in alphas)
    blocks.append(Paragraph(
        "Power is simulated: task differences ~ N(Δ, task SD²), each arm's repetitions ~ N(its task mean, "
        "repetition SD²), the per-task difference of arm means tested with the same test of the mean as the "
        "paired analysis (the two-sided sign-flip test, exact up to 16 tasks, and from 10 tasks the "
        "skewness-corrected bootstrap-t; 4,000 sign vectors and 1,000 resamples in the simulation), "
        f"{SIMULATIONS} simulated studies per point, each point "
        f"(tasks × repetitions) from its own random stream of seed {SEED}; the ± beside a power is its Monte Carlo "
        "error (at most 1.5 points), the simulation's error only, not the uncertainty of the components. The "
        "declared primary is planned at the study's alpha, a secondary metric at Holm's strictest level alpha / m. "
        "Components are method-of-moments estimates from this ledger (the task SD floored at 0). With k tasks the "
        f"smallest two-sided p is 2/2^k, so at least {floors} tasks are needed. A difference planned from the "
        "observed estimate plans the next study; it says nothing about this one."))
    return tuple(blocks)


def power_section(analysis: Analysis, plans: tuple[MetricPlan, ...] | None = None) -> Section:
    """The report's power section (every format): first the one plan of the primary at ``analysis.minimumEffect``
    (:mod:`report.power_primary`, issue 41 item 6), then each metric's components and minimum detectable
    difference at power 80 %, each at :func:`study_alpha`; ``plans`` when the caller already holds
    :func:`power_plans` of ``analysis`` (the JSON view: simulated once, issue 29). No plan at the observed effect."""
    blocks = power_blocks(power_plans(analysis) if plans is None else plans, POWER, arm_pair(analysis.study))
    return Section("Power planning", (Paragraph(primary_power_sentence(analysis)), *blocks))


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def plan_json(plan: MetricPlan, power: float = POWER) -> dict[str, Any]:
    """One plan as the JSON report's ``power`` entry (camelCase; variances in the metric unit squared; ``alpha``
    the plan's own level, ``monteCarloSe`` the simulation error of ``simulatedPower`` only)."""
    c, d = plan.components, plan.detectable
    return {
        "metric": plan.metric.key, "alpha": plan.alpha, "power": power,
        "tasks": c.tasks if c else None, "repetitions": c.repetitions if c else None,
        "components": None if c is None else {
            "taskVariance": c.task_variance, "baselineRepetitionVariance": c.baseline_variance,
            "treatmentRepetitionVariance": c.treatment_variance, "observedDifferenceVariance": c.observed_variance,
            "method": "method of moments"},
        "reason": plan.too_small,
        "minimumDetectableDifference": None if d is None else _float(d.difference),
        "minimumDetectableNote": None if d is None else d.note,
        "simulatedPower": None if d is None or d.estimate is None else d.estimate.power,
        "monteCarloSe": None if d is None or d.estimate is None else d.estimate.mc_se,
        "effect": plan.effect, "effectSource": plan.effect_source or None, "effectNote": plan.effect_note,
        "needed": [{"repetitions": n.repetitions, "tasks": n.tasks,
                    "simulatedPower": None if n.estimate is None else n.estimate.power, "note": n.note}
                   for n in plan.needed],
        "simulations": SIMULATIONS, "seed": SEED,
    }
