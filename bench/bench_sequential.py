"""The sequential design's error rates and savings by simulation (issue 35, item 6 and Must show).

Each simulated study has ``MAX_TASKS`` tasks and ``r`` repetitions (1 or 3) per arm. Task ``i`` has its own
level ``mu_i`` (log-normal around 10,000, like input tokens) and each repetition of an arm is an independent
draw around it from one of three families: ``normal`` (SD 20 % of the level), ``lognormal`` (log-SD 0.5) and
``skewed`` (a shifted gamma with shape 0.5: a long right tail). Under the null both arms draw from the same
distribution, so every task difference (treatment mean minus control mean) is symmetric about zero; under
the alternatives the treatment's draws are scaled by ``1 - effect`` for each of ``EFFECTS`` (a moderate 10 %
and a large 25 % reduction). Each study
runs the runners' own e-process for new studies (the one-sided ``magnitudeBet`` construction of
``protocol.sequential.e_values`` with the bet size ``protocol.sequential.new_design`` plans from ``MAX_TASKS``, in
the declared direction: lower is better) and decisions
(``protocol.sequential``), vectorised over studies.

Reported per cell (family x repetitions): under the null the type-I error — the share of studies that ever
declare efficacy — cumulatively at every stopping time (after 1, 2, … tasks), its largest value and the
bound ``alpha + 2 Monte-Carlo SE``; under the alternative the sequential power, the mean tasks run, the
average share of the budget saved, and beside them the fixed design of the same maximum size (the two-sided
sign-flip test on all tasks, ``report.power.sign_flip_rejects``). ``STUDIES`` (10,000) per cell.

Run ``.venv/bin/python -m bench.bench_sequential [--studies N] [--output bench/results-sequential.json]``;
it prints a Markdown table and writes the JSON; it asserts nothing (tests/test_sequential_core.py proves the
bound exactly on small cases).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agentstudy.protocol.sequential import DECISIONS, decisions, e_values, first_stop, new_design
from agentstudy.report.power import sign_flip_rejects

MAX_TASKS = 40
ALPHA = 0.05
FUTILITY = 0.1
EFFECTS = (0.10, 0.25)
STUDIES = 10_000
SEED = 20261203
Draw = Callable[[np.random.Generator, np.ndarray, int], np.ndarray]


def _normal(rng: np.random.Generator, level: np.ndarray, reps: int) -> np.ndarray:
    return level[..., None] * (1 + 0.2 * rng.standard_normal((*level.shape, reps)))


def _lognormal(rng: np.random.Generator, level: np.ndarray, reps: int) -> np.ndarray:
    return level[..., None] * np.exp(0.5 * rng.standard_normal((*level.shape, reps)) - 0.125)


def _skewed(rng: np.random.Generator, level: np.ndarray, reps: int) -> np.ndarray:
    return level[..., None] * (0.5 + rng.gamma(0.5, 1.0, size=(*level.shape, reps)))


FAMILIES: dict[str, Draw] = {"normal": _normal, "lognormal": _lognormal, "skewed": _skewed}


def task_differences(rng: np.random.Generator, draw: Draw, studies: int, reps: int, effect: float) -> np.ndarray:
    """``(studies, MAX_TASKS)`` task differences: treatment mean minus control mean over ``reps`` repetitions."""
    level = 10_000 * np.exp(0.3 * rng.standard_normal((studies, MAX_TASKS)))
    control = draw(rng, level, reps).mean(axis=-1)
    treatment = ((1 - effect) * draw(rng, level, reps)).mean(axis=-1)
    differences: np.ndarray = treatment - control
    return differences


def run_cell(family: str, reps: int, studies: int, seed: int) -> dict[str, Any]:
    """One cell: the null's type-I error at every stopping time, and the alternative's power and savings."""
    design = new_design(MAX_TASKS, ALPHA, FUTILITY)
    rng = np.random.default_rng([seed, list(FAMILIES).index(family), reps])
    efficacy = DECISIONS.index("efficacy")
    cell: dict[str, Any] = {"family": family, "repetitions": reps, "studies": studies}
    cell["alternatives"] = []
    for name, effect in (("null", 0.0), *(("alternative", e) for e in EFFECTS)):
        d = task_differences(rng, FAMILIES[family], studies, reps, effect)
        e, better = e_values(d, "lower", design.construction, design.bet_size)
        tasks, codes = first_stop(decisions(e, design))
        at_stop = (np.arange(studies), tasks - 1)
        rejected = codes == efficacy
        if name == "null":
            by_time = [float((rejected & (tasks <= t)).mean()) for t in range(1, MAX_TASKS + 1)]
            se = math.sqrt(ALPHA * (1 - ALPHA) / studies)
            cell["null"] = {"typeIByStoppingTime": by_time, "typeI": by_time[-1], "bound": ALPHA + 2 * se,
                            "monteCarloSe": se, "withinBound": max(by_time) <= ALPHA + 2 * se,
                            "meanTasks": float(tasks.mean()),
                            "fixedDesignTypeI": float(sign_flip_rejects(d, ALPHA, seed=seed).mean())}
        else:
            cell["alternatives"].append({
                "effect": f"treatment x {1 - effect:g}", "power": float(rejected.mean()),
                "powerRightDirection": float((rejected & better[at_stop]).mean()),
                "meanTasks": float(tasks.mean()), "budgetSaved": float(1 - tasks.mean() / MAX_TASKS),
                "fixedDesignPower": float(sign_flip_rejects(d, ALPHA, seed=seed).mean()),
                "stopShares": {n: float((codes == i).mean()) for i, n in enumerate(DECISIONS) if i}})
    return cell


def main() -> None:
    """Run every cell, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--studies", type=int, default=STUDIES)
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results-sequential.json"))
    args = parser.parse_args()
    started = time.monotonic()
    cells = [run_cell(family, reps, args.studies, SEED) for family in FAMILIES for reps in (1, 3)]
    elapsed = time.monotonic() - started
    print(f"Sequential design: maxTasks {MAX_TASKS}, alpha {ALPHA}, futility {FUTILITY}; {args.studies} studies "
          f"per cell and hypothesis; {elapsed:.1f} s")
    print("| family | reps | type I (max over stopping times) | bound α+2SE | fixed type I | effect | power "
          "| fixed power | mean tasks | budget saved |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for c in cells:
        n = c["null"]
        for a in c["alternatives"]:
            print(f"| {c['family']} | {c['repetitions']} | {max(n['typeIByStoppingTime']):.4f} | {n['bound']:.4f} | "
                  f"{n['fixedDesignTypeI']:.4f} | {a['effect']} | {a['power']:.3f} | {a['fixedDesignPower']:.3f} | "
                  f"{a['meanTasks']:.1f} | {a['budgetSaved']:.0%} |")
    args.output.write_text(json.dumps({"maxTasks": MAX_TASKS, "alpha": ALPHA, "futility": FUTILITY,
                                       "effects": list(EFFECTS), "seed": SEED, "seconds": elapsed, "cells": cells},
                                      indent=2) + "\n")


if __name__ == "__main__":
    main()
