"""How often a plan made from a pilot leaves the next study under-powered: today's point-estimate planner
beside the range's upper end (issue 30, Must show).

Truth: task differences ``N(EFFECT, TASK_SD^2)``, repetitions ``N(., REP_SD^2)`` in each arm, so one
task's observed difference with r repetitions has SD ``sqrt(TASK_SD^2 + 2 REP_SD^2 / r)``. For each
pilot design (2 × 2, 4 × 2, 6 × 3) :data:`PILOTS` pilots are simulated (one random stream per design)
and planned for the true effect at alpha 0.05 and power 0.8 with the pilot's repetitions:
``report.power.needed_tasks`` on the point components (the planner as it was) and
``report.power_range.tasks_needed``'s ``high`` (the upper end of the range; ``None``: the pilot is
declared too small to plan from). Each plan's true power is simulated on the true SD (1,200 studies,
its own seed). Printed: the share of plans under 70 % true power, the share refused, and the median and
90th percentile of the recommended tasks (the price), beside the number truly needed.

Run ``.venv/bin/python -m bench.bench_power_plans [--pilots N]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from agentstudy.report.power import Components, needed_tasks, simulate_power
from agentstudy.report.power_range import tasks_needed

EFFECT = 1.0
TASK_SD = 1.0
REP_SD = 1.5
ALPHA = 0.05
POWER = 0.8
PILOTS = 40
DESIGNS = ((2, 2), (4, 2), (6, 3))
SEED = 20261204


def _pilot(k: int, r: int, rng: np.random.Generator) -> dict[str, tuple[list[float], list[float]]]:
    values = {}
    for t in range(k):
        difference = rng.normal(EFFECT, TASK_SD)
        level = rng.normal(0.0, 3.0)
        values[f"t{t}"] = (list(level + rng.normal(0.0, REP_SD, r)),
                           list(level + difference + rng.normal(0.0, REP_SD, r)))
    return values


def _true_power(tasks: int, r: int, seed: int) -> float:
    sd = math.sqrt(TASK_SD**2 + 2 * REP_SD**2 / r)
    return simulate_power(EFFECT, sd, tasks, r, ALPHA, seed=seed).power


def main() -> None:
    """Print one row per pilot design."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pilots", type=int, default=PILOTS)
    args = parser.parse_args()
    started = time.perf_counter()
    streams = np.random.SeedSequence(SEED).spawn(len(DESIGNS))
    print("| pilot | needed (truth) | old: under 70 % | old: tasks median / p90 | new: under 70 % | new: refused "
          "| new: tasks median / p90 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (k, r), stream in zip(DESIGNS, streams, strict=True):
        rng = np.random.default_rng(stream)
        truth = needed_tasks(Components(k, r, TASK_SD**2, REP_SD**2, REP_SD**2, 0.0), EFFECT, r, ALPHA, POWER).tasks
        old_low = new_low = refused = 0
        old_tasks: list[int] = []
        new_tasks: list[int] = []
        for index in range(args.pilots):
            plan = tasks_needed(_pilot(k, r, rng), EFFECT, r, ALPHA, POWER)
            if plan.estimate is not None:
                old_tasks.append(plan.estimate)
                old_low += int(_true_power(plan.estimate, r, 1000 + index) < 0.7)
            if plan.high is None:
                refused += 1
            else:
                new_tasks.append(plan.high)
                new_low += int(_true_power(plan.high, r, 2000 + index) < 0.7)

        def spread(tasks: list[int]) -> str:
            return "—" if not tasks else f"{statistics.median(tasks):g} / {np.percentile(tasks, 90):.0f}"

        print(f"| {k} × {r} | {truth} | {old_low / args.pilots:.0%} | {spread(old_tasks)} | "
              f"{new_low / args.pilots:.0%} | {refused / args.pilots:.0%} | {spread(new_tasks)} |")
    print(f"\n{args.pilots} pilots per design, effect {EFFECT}, task SD {TASK_SD}, repetition SD {REP_SD}, "
          f"alpha {ALPHA}, power {POWER}, seed {SEED}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
