"""``agentstudy power --metric M --effect E``: the tasks needed with the pilot's uncertainty (issue 30, item 6).

:func:`ranged_plan` runs :func:`agentstudy.report.power_range.tasks_needed` on the ledger's task
values; :func:`ranged_json` is the command's ``--json`` head (``metric``, ``effect``, ``alpha``,
``repetitions``, ``tasksNeeded`` = ``{"estimate", "low", "high"}`` with ``high`` ``null`` when the
pilot cannot bound it, ``effectScale`` (``difference`` in the metric's unit or ``ratio`` of treatment to
baseline, then planned as ``logEffect`` on the log scale of the report's ratio), ``observedEffect`` as a
reference (the observed ratio for a ratio), ``monteCarloSe`` labelled as such);
:func:`ranged_paragraph` says the same in words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentstudy.commands.common import fail

if TYPE_CHECKING:
    from agentstudy.report.analysis import Analysis
    from agentstudy.report.document import Paragraph
    from agentstudy.report.power_range import TasksNeeded


@dataclass(frozen=True)
class RangedPlan:
    """One metric's plan for ``effect`` (metric unit, or with ``scale`` ``"ratio"`` a ratio treatment/baseline)
    at ``alpha``, ``power`` and ``repetitions``, the observed estimate on the same scale (a reference only,
    ``None`` when not computable) and the :class:`TasksNeeded`."""

    metric: str
    effect: float
    alpha: float
    power: float
    repetitions: int
    observed: float | None
    needed: TasksNeeded
    scale: str = "difference"


def parse_difference(text: str, accepted: str = "a finite non-zero number") -> float:
    """``--effect`` as a difference in the metric's unit: a finite, non-zero number; else one line naming what
    is ``accepted``, exit 2."""
    try:
        value = float(text)
    except ValueError:
        fail(f"--effect must be {accepted}, got {text!r}")
    if not math.isfinite(value) or value == 0:
        fail(f"--effect must be {accepted}, got {text!r}")
    return value


def ranged_plan(analysis: Analysis, metric: str, effect: float | None, repetitions: int | None, alpha: float,
                power: float, *, ratio: float | None = None) -> RangedPlan:
    """The ranged plan of ``metric`` for a difference ``effect`` (metric unit) or, when ``ratio`` is given, for
    that ratio treatment/baseline on the log scale: :func:`report.power_primary.ranged_needed`, the computation
    the report's power section makes (issue 41 item 6); a pilot of fewer than 2 tasks is a one-line error
    (exit 2)."""
    from agentstudy.report.power import PilotTooSmall
    from agentstudy.report.power_primary import ranged_needed

    try:
        plan = ranged_needed(analysis, metric, effect, repetitions, alpha, power, ratio=ratio)
    except PilotTooSmall as problem:
        fail(str(problem))
    return RangedPlan(metric, plan.effect, alpha, power, plan.repetitions, plan.observed, plan.needed, plan.scale)


def ranged_json(plan: RangedPlan) -> dict[str, Any]:
    """The ``--json`` head of a ranged plan (see the module docstring)."""
    needed = plan.needed
    scale = {"effectScale": plan.scale,
             **({"logEffect": math.log(plan.effect)} if plan.scale == "ratio" else {})}
    return {"metric": plan.metric, "effect": plan.effect, **scale, "alpha": plan.alpha, "power": plan.power,
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

    if plan.scale == "ratio":
        observed = "not computable" if plan.observed is None else f"{plan.observed:.4g}x"
        what = (f"a ratio of {plan.effect:g}x (treatment / baseline, planned as a log ratio of "
                f"{math.log(plan.effect):+.4g} like the report's ratio)")
    else:
        observed = "not computable" if plan.observed is None else f"{plan.observed:+.4g}"
        what = f"a difference of {plan.effect:g}"
    text = (f"To detect {what} in {plan.metric} with {plan.repetitions} repetition(s) per "
            f"task and arm at alpha {plan.alpha:g} and power {plan.power:.0%}: {tasks(needed.estimate)} tasks from "
            f"the pilot's point estimates, range {tasks(needed.low)}–{tasks(needed.high)} from 90 % lower and upper "
            f"bounds on each variance component. Plan for the upper end. The observed estimate ({observed}) is a "
            f"reference only. Monte Carlo error of the simulated power: ± {needed.monte_carlo_se:.1%} (simulation "
            "only).")
    return Paragraph(text + (f" {needed.note[0].upper()}{needed.note[1:]}." if needed.note else ""))
