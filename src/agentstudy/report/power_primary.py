"""The report's one power plan (issue 41 item 6): the ranged planner's tasks needed for the declared primary at
the smallest effect worth detecting (``analysis.minimumEffect``), the same computation as
``agentstudy power --metric M --effect E --json`` (:func:`ranged_needed` is what both call).

Without a declared minimum effect the report asks for one and shows no number (a plan at the pilot's own
observed effect is a point-estimate plan, under-powered in a large share of cases). A rehearsal (scripted
agents) or a pilot whose task differences and repetitions do not vary is refused as a basis for planning, in
words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agentstudy.report.analysis import Analysis, task_values
from agentstudy.report.power import PilotTooSmall
from agentstudy.report.power_range import TasksNeeded, bounded_components, log_scale_values, tasks_needed

PLAN_POWER = 0.8


@dataclass(frozen=True)
class RangedNeeded:
    """One metric's ranged plan: ``effect`` (metric unit, or a ratio treatment/baseline with ``scale`` ``ratio``),
    the ``repetitions`` planned for, the observed estimate on the same scale (``None`` when not computable) and
    the :class:`~agentstudy.report.power_range.TasksNeeded`."""

    metric: str
    effect: float
    repetitions: int
    observed: float | None
    needed: TasksNeeded
    scale: str = "difference"


def ranged_needed(analysis: Analysis, metric: str, effect: float | None, repetitions: int | None, alpha: float,
                  power: float, *, ratio: float | None = None) -> RangedNeeded:
    """The ranged plan of ``metric`` for a difference ``effect`` (metric unit) or, with ``ratio``, for that ratio on
    the log scale; ``repetitions`` defaults to the ledger's own (1 when tasks differ).

    Raises:
        PilotTooSmall: fewer than 2 tasks with values in both arms.
        ValueError: neither an effect nor a ratio.
        StopIteration: ``metric`` is not in ``analysis``.
    """
    result = next(r for r in analysis.results if r.metric.key == metric)
    values = task_values(analysis.study, result.metric, analysis.repriced)
    planned = repetitions if repetitions is not None else (result.task_level.repetitions or 1)
    if ratio is not None:
        observed = result.ratio.estimate if result.ratio is not None else None
        needed = tasks_needed(log_scale_values(values), math.log(ratio), planned, alpha, power)
        return RangedNeeded(metric, ratio, planned, observed, needed, "ratio")
    if effect is None:
        raise ValueError("give a difference or a ratio")
    return RangedNeeded(metric, abs(effect), planned, result.task_level.estimate,
                        tasks_needed(values, effect, planned, alpha, power))


def refusal(analysis: Analysis, metric: str) -> str | None:
    """Why the ledger is no basis for planning ``metric`` (a rehearsal, or a pilot without variance), else ``None``."""
    if analysis.study.rehearsal:
        return ("no plan: this ledger is a rehearsal (scripted agents), whose spread says nothing about real agents; "
                "plan from a real pilot")
    result = next((r for r in analysis.results if r.metric.key == metric), None)
    if result is None:
        return f"no plan: the primary metric {metric} is not in this report"
    try:
        point = bounded_components(task_values(analysis.study, result.metric, analysis.repriced))[0]
    except PilotTooSmall as problem:
        return f"no plan: {problem}"
    if point.observed_variance == 0 and point.baseline_variance == 0 and point.treatment_variance == 0:
        return ("no plan: the task differences and the repetitions of this pilot do not vary at all (variance 0), "
                "so any number of tasks would look enough; plan from a pilot whose attempts vary")
    return None


def primary_power(analysis: Analysis) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON ``power`` (``{"metric", "effect", "tasksNeeded": {"estimate", "low", "high"}}``) of the declared
    primary at ``analysis.minimumEffect``, or ``(None, powerNote)`` saying why there is no number."""
    metric = analysis.plan.primary.metric
    effects = analysis.plan.minimum_effect or {}
    if metric not in effects:
        return None, (f"no plan: declare the smallest effect worth detecting for the primary metric {metric} "
                      f"(analysis.minimumEffect, e.g. {{\"{metric}\": value}} in its unit); the report plans "
                      "at no observed effect")
    problem = refusal(analysis, metric)
    if problem is not None:
        return None, problem
    plan = ranged_needed(analysis, metric, effects[metric], None, analysis.alpha, PLAN_POWER)
    needed = plan.needed
    return {"metric": metric, "effect": plan.effect, "alpha": analysis.alpha, "power": PLAN_POWER,
            "repetitions": plan.repetitions,
            "tasksNeeded": {"estimate": needed.estimate, "low": needed.low, "high": needed.high}}, needed.note


def primary_power_sentence(analysis: Analysis) -> str:
    """The report's power section's first sentence: the plan in words, or why there is none."""
    plan, note = primary_power(analysis)
    if plan is None:
        return f"Power for the next study: {note}."

    def tasks(value: int | None) -> str:
        return "more than 400" if value is None else str(value)

    needed = plan["tasksNeeded"]
    return (f"Power for the next study: to detect {plan['effect']:g} in {plan['metric']} (analysis.minimumEffect) "
            f"with {plan['repetitions']} repetition(s) at alpha {plan['alpha']:g} and power {PLAN_POWER:.0%}: "
            f"{tasks(needed['estimate'])} tasks from the point estimates, range {tasks(needed['low'])}–"
            f"{tasks(needed['high'])} from 90 % bounds on each variance component; plan for the upper end"
            + (f" ({note})." if note else "."))
