"""``agentstudy power --metric M --effect E``: the tasks needed with the pilot's uncertainty (issue 30, item 6).

:func:`ranged_plan` runs :func:`agentstudy.report.power_range.tasks_needed` on the ledger's task
values; :func:`ranged_json` is the command's ``--json`` head (``metric``, ``effect``, ``alpha``,
``repetitions``, ``tasksNeeded`` = ``{"estimate", "low", "high"}`` with ``high`` ``null`` when the
pilot cannot bound it, ``observedEffect`` as a reference, ``monteCarloSe`` labelled as such);
:func:`ranged_paragraph` says the same in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentstudy.commands.common import fail

if TYPE_CHECKING:
    from agentstudy.report.analysis import Analysis
    from agentstudy.report.document import Paragraph
    from agentstudy.report.power_range import TasksNeeded


@dataclass(frozen=True)
class RangedPlan:
    """One metric's plan for ``effect`` (metric unit) at ``alpha``, ``power`` and ``repetitions``, the observed
    estimate (a reference only, ``None`` when not computable) and the :class:`TasksNeeded`."""

    metric: str
    effect: float
    alpha: float
    power: float
    repetitions: int
    observed: float | None
    needed: TasksNeeded


def ranged_plan(analysis: Analysis, metric: str, effect: float, repetitions: int | None, alpha: float,
                power: float) -> RangedPlan:
    """The ranged plan of ``metric``; a pilot too small for the components is a one-line error (exit 2)."""
    from agentstudy.report.analysis import task_values
    from agentstudy.report.power import PilotTooSmall
    from agentstudy.report.power_range import tasks_needed

    result = next(r for r in analysis.results if r.metric.key == metric)
    values = task_values(analysis.study, result.metric, analysis.repriced)
    planned = repetitions if repetitions is not None else (result.task_level.repetitions or 1)
    try:
        needed = tasks_needed(values, effect, planned, alpha, power)
    except PilotTooSmall as problem:
        fail(str(problem))
    return RangedPlan(metric, abs(effect), alpha, power, planned, result.task_level.estimate, needed)


def ranged_json(plan: RangedPlan) -> dict[str, Any]:
    """The ``--json`` head of a ranged plan (see the module docstring)."""
    needed = plan.needed
    return {"metric": plan.metric, "effect": plan.effect, "alpha": plan.alpha, "power": plan.power,
            "repetitions": plan.repetitions,
            "tasksNeeded": {"estimate": needed.estimate, "low": needed.low, "high": needed.high,
                            "basis": "point estimates; 90 % lower and upper chi-square bounds on each variance "
                                     "component", **({"reason": needed.note} if needed.note else {})},
            "observedEffect": plan.observed, "monteCarloSe": needed.monte_carlo_se,
            "monteCarloSeMeaning": "simulation error of the simulated power only, not the planning uncertainty"}


def ranged_paragraph(plan: RangedPlan) -> Paragraph:
    """The ranged plan in words."""
    from agentstudy.report.document import Paragraph

    needed = plan.needed

    def tasks(value: int | None) -> str:
        return "more than 400" if value is None else str(value)

    observed = "not computable" if plan.observed is None else f"{plan.observed:+.4g}"
    text = (f"To detect a difference of {plan.effect:g} in {plan.metric} with {plan.repetitions} repetition(s) per "
            f"task and arm at alpha {plan.alpha:g} and power {plan.power:.0%}: {tasks(needed.estimate)} tasks from "
            f"the pilot's point estimates, range {tasks(needed.low)}–{tasks(needed.high)} from 90 % lower and upper "
            f"bounds on each variance component. Plan for the upper end. The observed estimate ({observed}) is a "
            f"reference only. Monte Carlo error of the simulated power: ± {needed.monte_carlo_se:.1%} (simulation "
            "only).")
    return Paragraph(text + (f" {needed.note[0].upper()}{needed.note[1:]}." if needed.note else ""))
