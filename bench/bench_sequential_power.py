"""Power of the sequential tests beside the fixed design, by simulation (issue 41 item 7).

Each simulated study has ``n`` tasks (``MAX_TASKS``: 10, 20, 40); a task's difference (treatment minus control of
the primary) is a draw with SD 1 and mean ``effect`` (0.3, 0.5, 0.8 SD; "better" is higher) from one of two
shapes: ``normal`` and ``skewed`` (a standardized gamma with shape 0.5, long right tail). Under the null (effect
0) five shapes: ``normal``, ``skewed-symmetric`` (the skewed draw with a random sign), ``heavy`` (Student t with 3
degrees of freedom) — all three satisfy the sign-flip null — and ``unequal-spread`` (equal arm means, the
treatment arm twice as variable and skewed, its long tail on the better side) with its mirror
``unequal-spread-mirrored`` (the long tail on the worse side: a treatment that is usually a little better and
sometimes much worse): both outside the sign-flip null, shown for what they do.

Tests, each at alpha ``ALPHA`` under the runners' whole rule (``protocol.sequential.decisions``: efficacy at
``E >= 1/alpha``, futility at ``E <= FUTILITY``, and the out-of-reach stop): ``magnitudeBet`` (what new studies
run: one bet size from :func:`agentstudy.protocol.sequential.new_design`, planned from ``n``), the one-sided
``magnitudeMixture`` (the bet grid new studies ran before it) and the legacy two-sided ``signWeighted``; beside
them ``magnitudeBet`` without the futility floor (the efficacy boundary and the out-of-reach stop only) and the
fixed design: the two-sided sign-flip test on all ``n`` tasks (``report.power.sign_flip_rejects``). Reported:
power (or type-I) and the mean tasks at the stop; the bound ``alpha + 2 MC SE``.

A second table (``--target-studies``, its own seed) measures the target cell, 20 tasks at 0.5 SD (normal), with
every candidate on the same draws: ``magnitudeBet`` at its planned bet under futility floors 0.1, 0.05 and none,
the same factor with the root-mean-square scale of ``magnitudeMixture`` at its best single bet (0.75), the grid,
and the fixed design; each with its MC SE, and each one's type-I under the mirrored unequal-spread null. A third
(``--fit-studies``) is the fit behind ``protocol.sequential_bet.planned_bet_size``: per ``n`` and alpha the best
single bet (whole rule) at the effect the fixed design of ``n`` tasks has 80 % power for, beside the formula's.

Run ``.venv/bin/python -m bench.bench_sequential_power [--studies N] [--target-studies M] [--fit-studies K]
[--output bench/results-sequential-power.json]``; it prints Markdown tables and writes the JSON; it asserts nothing
(tests/test_sequential_bet.py proves the martingale property exactly on small cases).
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
from scipy.stats import norm

from agentstudy.protocol.sequential import DECISIONS, SequentialDesign, decisions, e_values, first_stop, new_design
from agentstudy.protocol.sequential_bet import planned_bet_size
from agentstudy.protocol.sequential_magnitude import standardized
from agentstudy.report.power import sign_flip_rejects

ALPHA = 0.05
MAX_TASKS = (10, 20, 40)
EFFECTS = (0.3, 0.5, 0.8)
STUDIES = 20_000
TARGET_STUDIES = 200_000
FIT_STUDIES = 40_000
SEED = 20261204
FUTILITY = 0.1
EFFICACY = DECISIONS.index("efficacy")
Shape = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]


def _skew(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    return (rng.gamma(0.5, 1.0, size) - 0.5) / math.sqrt(0.5)


ALTERNATIVE_SHAPES: dict[str, Shape] = {"normal": lambda rng, size: rng.standard_normal(size), "skewed": _skew}
NULL_SHAPES: dict[str, Shape] = {
    "normal": lambda rng, size: rng.standard_normal(size),
    "skewed-symmetric": lambda rng, size: _skew(rng, size) * rng.choice((-1.0, 1.0), size),
    "heavy": lambda rng, size: rng.standard_t(3, size) / math.sqrt(3.0),
    "unequal-spread": lambda rng, size: (2 * _skew(rng, size) - rng.standard_normal(size)) / math.sqrt(5.0),
    "unequal-spread-mirrored": lambda rng, size: (rng.standard_normal(size) - 2 * _skew(rng, size)) / math.sqrt(5.0),
}


def _stop(e: np.ndarray, design: SequentialDesign) -> dict[str, float]:
    """The whole rule on e-value paths: the efficacy share and the mean tasks at the stop."""
    tasks, codes = first_stop(decisions(e, design))
    return {"rejects": float((codes == EFFICACY).mean()), "meanTasks": float(tasks.mean())}


def _rules(d: np.ndarray) -> dict[str, dict[str, float]]:
    """Per test of the module docstring: the whole rule's rejections and mean tasks at the stop."""
    n = d.shape[1]
    bet = new_design(n, ALPHA, FUTILITY)
    e_bet = e_values(d, "higher", bet.construction, bet.bet_size)[0]
    grid = SequentialDesign(max_tasks=n, alpha=ALPHA, futility=FUTILITY, construction="magnitudeMixture")
    legacy = SequentialDesign(max_tasks=n, alpha=ALPHA, futility=FUTILITY)
    return {"magnitudeBet": _stop(e_bet, bet),
            "magnitudeBetNoFloor": _stop(e_bet, new_design(n, ALPHA, None)),
            "magnitudeMixture": _stop(e_values(d, "higher", "magnitudeMixture")[0], grid),
            "signWeighted": _stop(e_values(d, "higher", "signWeighted")[0], legacy)}


def run(studies: int, seed: int) -> dict[str, Any]:
    """Every cell: alternatives (shape x tasks x effect) and nulls (shape x tasks)."""
    rng = np.random.default_rng(seed)
    alternatives, nulls = [], []
    for n in MAX_TASKS:
        for shape, draw in ALTERNATIVE_SHAPES.items():
            for effect in EFFECTS:
                d = draw(rng, (studies, n)) + effect
                alternatives.append({"shape": shape, "tasks": n, "effect": effect,
                                     "betSize": planned_bet_size(n, ALPHA), **_rules(d),
                                     "fixed": float(sign_flip_rejects(d, ALPHA, seed=seed).mean())})
        for shape, draw in NULL_SHAPES.items():
            d = draw(rng, (studies, n))
            nulls.append({"shape": shape, "tasks": n, **_rules(d),
                          "fixed": float(sign_flip_rejects(d, ALPHA, seed=seed).mean())})
    return {"alternatives": alternatives, "nulls": nulls}


TARGET_TASKS = 20
TARGET_EFFECT = 0.5
RMS_BET = 0.75
"""The best single bet with the root-mean-square scale at the target cell (measured when it was the candidate)."""


def target(studies: int, seed: int) -> list[dict[str, Any]]:
    """The target cell's candidates on the same draws (module docstring): power with MC SE, mean tasks at the stop,
    and type-I under ``unequal-spread-mirrored``."""
    rng = np.random.default_rng(seed)
    alternative = rng.standard_normal((studies, TARGET_TASKS)) + TARGET_EFFECT
    mirrored = NULL_SHAPES["unequal-spread-mirrored"](rng, (studies, TARGET_TASKS))
    bet = planned_bet_size(TARGET_TASKS, ALPHA)

    def rms_bet(d: np.ndarray) -> np.ndarray:
        return np.cumprod(1.0 + np.tanh(RMS_BET * standardized(d)), axis=-1)

    candidates: list[tuple[str, Callable[[np.ndarray], np.ndarray], str, float | None]] = [
        (f"magnitudeBet c={bet:g}", lambda d: e_values(d, "higher", "magnitudeBet", bet)[0], "magnitudeBet", 0.1),
        (f"magnitudeBet c={bet:g}", lambda d: e_values(d, "higher", "magnitudeBet", bet)[0], "magnitudeBet", 0.05),
        (f"magnitudeBet c={bet:g}", lambda d: e_values(d, "higher", "magnitudeBet", bet)[0], "magnitudeBet", None),
        (f"root-mean-square scale c={RMS_BET:g}", rms_bet, "magnitudeMixture", 0.1),
        (f"root-mean-square scale c={RMS_BET:g}", rms_bet, "magnitudeMixture", 0.05),
        ("magnitudeMixture grid 0.5, 0.7", lambda d: e_values(d, "higher", "magnitudeMixture")[0], "magnitudeMixture",
         0.1),
    ]
    rows = []
    for name, test, construction, futility in candidates:
        design = SequentialDesign(max_tasks=TARGET_TASKS, alpha=ALPHA, futility=futility, construction=construction,  # type: ignore[arg-type]
                                  bet_size=bet if construction == "magnitudeBet" else None)
        power = _stop(test(alternative), design)
        rows.append({"test": name, "futility": futility, "power": power["rejects"], "meanTasks": power["meanTasks"],
                     "powerSE": math.sqrt(power["rejects"] * (1 - power["rejects"]) / studies),
                     "mirroredTypeI": _stop(test(mirrored), design)["rejects"]})
    fixed = float(sign_flip_rejects(alternative[:20_000], ALPHA, seed=seed).mean())
    rows.append({"test": "fixed design (sign-flip, 20,000 of the draws)", "futility": None, "power": fixed,
                 "meanTasks": float(TARGET_TASKS), "powerSE": math.sqrt(fixed * (1 - fixed) / 20_000),
                 "mirroredTypeI": float(sign_flip_rejects(mirrored[:20_000], ALPHA, seed=seed).mean())})
    return rows


FIT_TASKS = (10, 15, 20, 30, 40, 60, 80)
FIT_ALPHAS = (0.05, 0.01)
FIT_BETS = tuple(round(0.2 + 0.05 * i, 2) for i in range(28))


def fit(studies: int, seed: int) -> list[dict[str, Any]]:
    """Per ``n`` and alpha: the best single bet of :data:`FIT_BETS` (whole rule, futility 0.1) at the effect the
    fixed design of ``n`` tasks has 80 % power for (one-sided, normal), its power, and the planned bet's power."""
    rng = np.random.default_rng(seed)
    rows = []
    for alpha in FIT_ALPHAS:
        for n in FIT_TASKS:
            effect = float((norm.ppf(1 - alpha) + norm.ppf(0.8)) / math.sqrt(n))
            d = rng.standard_normal((studies, n)) + effect
            planned = planned_bet_size(n, alpha)
            powers: dict[float, float] = {}
            for c in (*FIT_BETS, planned):
                try:
                    design = SequentialDesign(max_tasks=n, alpha=alpha, futility=FUTILITY, construction="magnitudeBet",
                                              bet_size=c)
                except ValueError:  # this bet cannot reach 1/alpha within n tasks
                    continue
                powers[c] = _stop(e_values(d, "higher", "magnitudeBet", c)[0], design)["rejects"]
            best = max((c for c in powers if c in FIT_BETS), key=lambda c: powers[c])
            rows.append({"alpha": alpha, "tasks": n, "effect": effect, "bestBet": best, "bestPower": powers[best],
                         "plannedBet": planned, "plannedPower": powers[planned],
                         "powerSE": math.sqrt(powers[best] * (1 - powers[best]) / studies)})
    return rows


def _print(cells: dict[str, Any], studies: int, target_studies: int, fit_studies: int, elapsed: float) -> float:
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
    print(f"alpha {ALPHA}; {studies} studies per cell; bound alpha + 2 MC SE = {bound:.4f}; {elapsed:.1f} s\n")
    print("| shape | tasks | effect (SD) | magnitudeBet (new; bet) | without the floor | grid (magnitudeMixture) | "
          "legacy two-sided | fixed | mean tasks at stop: new, grid |")
    print("|---|---|---|---|---|---|---|---|---|")
    for a in cells["alternatives"]:
        print(f"| {a['shape']} | {a['tasks']} | {a['effect']} | {a['magnitudeBet']['rejects']:.3f} "
              f"({a['betSize']:g}) | {a['magnitudeBetNoFloor']['rejects']:.3f} | "
              f"{a['magnitudeMixture']['rejects']:.3f} | "
              f"{a['signWeighted']['rejects']:.3f} | {a['fixed']:.3f} | {a['magnitudeBet']['meanTasks']:.1f}, "
              f"{a['magnitudeMixture']['meanTasks']:.1f} |")
    print("\n| null shape | tasks | magnitudeBet (new) | without the floor | grid | legacy two-sided | fixed | "
          "mean tasks at stop (new) |")
    print("|---|---|---|---|---|---|---|---|")
    for z in cells["nulls"]:
        print(f"| {z['shape']} | {z['tasks']} | {z['magnitudeBet']['rejects']:.4f} | "
              f"{z['magnitudeBetNoFloor']['rejects']:.4f} | {z['magnitudeMixture']['rejects']:.4f} | "
              f"{z['signWeighted']['rejects']:.4f} | {z['fixed']:.4f} | {z['magnitudeBet']['meanTasks']:.1f} |")
    print(f"\n| test ({TARGET_TASKS} tasks, {TARGET_EFFECT} SD; {target_studies} studies) | futility floor | power | "
          "MC SE | mean tasks at stop | mirrored unequal-spread type-I |")
    print("|---|---|---|---|---|---|")
    for b in cells["target"]:
        print(f"| {b['test']} | {b['futility'] if b['futility'] is not None else 'none'} | {b['power']:.4f} | "
              f"{b['powerSE']:.4f} | {b['meanTasks']:.1f} | {b['mirroredTypeI']:.4f} |")
    print(f"\n| alpha | tasks | effect (SD) | best bet | its power | planned bet | its power | MC SE "
          f"({fit_studies} studies) |")
    print("|---|---|---|---|---|---|---|---|")
    for f in cells["fit"]:
        print(f"| {f['alpha']} | {f['tasks']} | {f['effect']:.3f} | {f['bestBet']:g} | {f['bestPower']:.4f} | "
              f"{f['plannedBet']:g} | {f['plannedPower']:.4f} | {f['powerSE']:.4f} |")
    return bound


def main() -> None:
    """Run every cell, print the tables, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--studies", type=int, default=STUDIES)
    parser.add_argument("--target-studies", type=int, default=TARGET_STUDIES)
    parser.add_argument("--fit-studies", type=int, default=FIT_STUDIES)
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results-sequential-power.json"))
    args = parser.parse_args()
    started = time.monotonic()
    cells: dict[str, Any] = {**run(args.studies, SEED), "target": target(args.target_studies, SEED + 1),
                             "fit": fit(args.fit_studies, SEED + 2)}
    elapsed = time.monotonic() - started
    bound = _print(cells, args.studies, args.target_studies, args.fit_studies, elapsed)
    args.output.write_text(json.dumps({"alpha": ALPHA, "studies": args.studies, "targetStudies": args.target_studies,
                                       "fitStudies": args.fit_studies, "seed": SEED, "bound": bound,
                                       "seconds": elapsed, **cells}, indent=2) + "\n")


if __name__ == "__main__":
    main()
