"""Planning a sequential study by simulation (issue 35): ``agentstudy power --sequential`` and bench/.

Under the planner's variance model (:mod:`agentstudy.report.power`: a task's observed difference is
``N(effect, sd^2)``, ``sd`` = :meth:`Components.difference_sd` at the planned repetitions) each simulated
study draws ``maxTasks`` task differences and runs the very e-process and decisions the runners use
(``protocol.sequential``, vectorised over studies): where it stops and why. Reported: the power (share
stopping for efficacy), the expected number of tasks and spend to the stop, and beside them the fixed
design of the same maximum size (the report's test of the mean, :func:`report.power.simulate_power`, on all
``maxTasks`` tasks): its power and its full spend, so the saving and the power given up are side by side.
The test is scale-free, so only ``effect / sd`` matters. Seeded; exploratory.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from agentstudy.pricing.sums import sum_usd
from agentstudy.protocol.sequential import DECISIONS, Decision, SequentialDesign, decisions, e_values, first_stop
from agentstudy.report.inference import TaskValues, task_effects
from agentstudy.report.power import SEED, PilotTooSmall, estimate_components, simulate_power

SIMULATIONS = 4000
"""Simulated studies per estimate: the power's Monte Carlo SE is at most sqrt(0.25 / 4000) = 0.8 points."""


@dataclass(frozen=True)
class SequentialOperating:
    """What a sequential design does at ``effect`` (metric unit, task-difference SD ``sd``): ``power`` (share
    stopping for efficacy, its Monte Carlo SE ``power_se``), ``expected_tasks`` (mean tasks to the stop),
    ``stop_shares`` (decision -> share), ``fixed_power`` (the fixed design of ``maxTasks`` tasks), and with a
    per-task cost ``task_usd`` the expected and full spend (USD; ``None`` without a cost)."""

    effect: float
    sd: float
    design: SequentialDesign
    repetitions: int
    simulations: int
    power: float
    power_se: float
    expected_tasks: float
    stop_shares: dict[Decision, float]
    fixed_power: float
    expected_usd: Decimal | None
    full_usd: Decimal | None

    @property
    def saved_share(self) -> float:
        """The expected share of the fixed design's tasks (and so of its budget) not run: ``1 - E[tasks]/maxTasks``."""
        return 1 - self.expected_tasks / self.design.max_tasks


def stopping(standardised: np.ndarray, design: SequentialDesign) -> tuple[np.ndarray, np.ndarray]:
    """Per simulated study (rows of task differences in units of their SD, positive meaning better), the tasks at
    the stop and its decision code (``protocol.sequential.DECISIONS``), under ``design.construction`` and its bet
    size (issue 41 item 7: one-sided in the better direction for new studies)."""
    return first_stop(decisions(e_values(standardised, "higher", design.construction, design.bet_size)[0], design))


def simulate_sequential(effect: float, sd: float, design: SequentialDesign, repetitions: int, *,
                        task_usd: Decimal | None = None, simulations: int = SIMULATIONS,
                        seed: int = SEED) -> SequentialOperating:
    """Simulate ``simulations`` studies of ``design`` at true mean task difference ``effect`` (see the module).

    Raises:
        ValueError: non-finite input, ``sd`` < 0, or ``simulations`` < 1.
    """
    if not (math.isfinite(effect) and math.isfinite(sd)) or sd < 0 or simulations < 1:
        raise ValueError("need a finite effect, a finite SD >= 0 and at least one simulation")
    rng = np.random.default_rng([seed, design.max_tasks])
    better = abs(effect)  # the effect worth detecting, in the declared better direction (a one-sided test)
    if sd == 0:
        data = np.full((1, design.max_tasks), better)
        simulations = 1
    else:
        data = better / sd + rng.standard_normal((simulations, design.max_tasks))
    tasks, codes = stopping(data, design)
    power = float((codes == DECISIONS.index("efficacy")).mean())
    shares = {name: float((codes == index).mean()) for index, name in enumerate(DECISIONS) if index}
    expected = float(tasks.mean())
    fixed = simulate_power(effect, sd, design.max_tasks, repetitions, design.alpha, seed=seed).power
    expected_usd = None if task_usd is None else task_usd * Decimal(repr(expected))
    full_usd = None if task_usd is None else task_usd * design.max_tasks
    return SequentialOperating(effect, sd, design, repetitions, simulations, power,
                               math.sqrt(power * (1 - power) / simulations), expected, shares, fixed,
                               expected_usd, full_usd)




@dataclass(frozen=True)
class SequentialPlanFromLedger:
    """:func:`plan_from_ledger`'s answer: the operating characteristics and where the SD came from."""

    operating: SequentialOperating
    sd_source: str


def plan_from_ledger(values: TaskValues, charges: list[Decimal], design: SequentialDesign, effect: float,
                     repetitions: int | None) -> SequentialPlanFromLedger:
    """Simulate ``design`` at ``effect`` with the SD of a ledger's task differences of one metric (``values``:
    task -> arms' values). The SD is the variance components' at the planned ``repetitions`` (default the
    ledger's), or, when the ledger cannot separate them, the SD of its observed task differences (at its own
    repetitions only). One task costs the mean of ``charges`` (USD per attempt) x 2 arms x repetitions.

    Raises:
        ValueError: fewer than 2 tasks with values in both arms, or other repetitions than the ledger's when
            the components cannot be estimated (one line each).
    """
    effects = task_effects({task: arms for task, arms in values.items() if arms[0] and arms[1]})
    if len(effects) < 2:
        raise ValueError(f"{len(effects)} task(s) with values in both arms; at least 2 are needed")
    try:
        components = estimate_components(values)
        if components.repetitions <= 1:  # one repetition a cell: task and repetition variance are not separable
            raise PilotTooSmall("one repetition")
        planned = repetitions or components.repetitions
        sd, source = components.difference_sd(planned), "variance components"
    except PilotTooSmall:
        own = max(1, min(min(e.baseline_n, e.treatment_n) for e in effects))
        planned = repetitions or own
        if planned != own:
            raise ValueError(f"the ledger cannot separate task and repetition variance; plan at its own {own} "
                             "repetition(s)") from None
        sd, source = statistics.stdev(e.difference for e in effects), "observed task differences"
    task_usd = sum_usd(charges) / len(charges) * 2 * planned if charges else None
    return SequentialPlanFromLedger(simulate_sequential(effect, sd, design, planned, task_usd=task_usd), source)


__all__ = ["SIMULATIONS", "SequentialOperating", "SequentialPlanFromLedger", "plan_from_ledger", "simulate_sequential",
           "stopping"]
