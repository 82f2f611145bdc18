"""Power of the sequential tests beside the fixed design, by simulation (issue 41 item 7).

Each simulated study has ``n`` tasks (``MAX_TASKS``: 10, 20, 40); a task's difference (treatment minus control of
the primary) is a draw with SD 1 and mean ``effect`` (0.3, 0.5, 0.8 SD; "better" is higher) from one of two
shapes: ``normal`` and ``skewed`` (a standardized gamma with shape 0.5, long right tail). Under the null (effect
0) four shapes: ``normal``, ``skewed-symmetric`` (the skewed draw with a random sign), ``heavy`` (Student t with 3
degrees of freedom) — all three satisfy the sign-flip null — and ``unequal-spread`` (equal arm means, the
treatment arm twice as variable and skewed, its long tail on the better side) with its mirror
``unequal-spread-mirrored`` (the long tail on the worse side: a treatment that is usually a little better and
sometimes much worse): both outside the sign-flip null, shown for what they do.

Tests, each at alpha ``ALPHA``: the legacy two-sided sign-weighted e-process (``signWeighted``), the
magnitude-aware mixture two-sided (``protocol.sequential_magnitude``, for comparison) and the runners' one-sided
``magnitudeMixture`` (``protocol.sequential.e_values``, what new studies run), each stopping at the first look with
``E >= 1/alpha`` (no futility stop, so the rates are the efficacy boundary's own); the runners' full rule
(``protocol.sequential.decisions`` with futility 0.1 and the out-of-reach stop) for the expected tasks at stop;
and the fixed design: the two-sided sign-flip test on all ``n`` tasks (``report.power.sign_flip_rejects``).
Reported: power (or type-I), the mean tasks at the stop, and the bound ``alpha + 2 MC SE``.

Run ``.venv/bin/python -m bench.bench_sequential_power [--studies N] [--output bench/results-sequential-power.json]``;
it prints a Markdown table and writes the JSON; it asserts nothing (tests/test_sequential_magnitude.py proves the
martingale property exactly on small cases).
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

from agentstudy.protocol.sequential import DECISIONS, SequentialDesign, decisions, e_process, e_values, first_stop
from agentstudy.protocol.sequential_magnitude import magnitude_e_process
from agentstudy.report.power import sign_flip_rejects

ALPHA = 0.05
MAX_TASKS = (10, 20, 40)
EFFECTS = (0.3, 0.5, 0.8)
STUDIES = 10_000
SEED = 20261204
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
FUTILITY = 0.1
TESTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "signWeighted": lambda d: e_process(d, "higher"),
    "magnitude": lambda d: magnitude_e_process(d, "higher"),
    "magnitudeOneSided": lambda d: e_values(d, "higher", "magnitudeMixture")[0],
}


def _full_rule(d: np.ndarray) -> dict[str, float]:
    """The runners' whole rule (one-sided mixture, futility 0.1, out of reach): rejections and mean tasks at stop."""
    design = SequentialDesign(max_tasks=d.shape[1], alpha=ALPHA, futility=FUTILITY, construction="magnitudeMixture")
    tasks, codes = first_stop(decisions(e_values(d, "higher", design.construction)[0], design))
    return {"rejects": float((codes == DECISIONS.index("efficacy")).mean()), "meanTasks": float(tasks.mean())}


def _sequential(d: np.ndarray) -> dict[str, dict[str, float]]:
    """Per test: the share of studies that cross ``1/alpha`` and the mean tasks at the first crossing (else n)."""
    out: dict[str, dict[str, float]] = {}
    for name, test in TESTS.items():
        crossed = test(d) >= 1 / ALPHA
        first = np.where(crossed.any(axis=1), crossed.argmax(axis=1) + 1, d.shape[1])
        out[name] = {"rejects": float(crossed.any(axis=1).mean()), "meanTasks": float(first.mean())}
    out["rule"] = _full_rule(d)
    return out


def run(studies: int, seed: int) -> dict[str, Any]:
    """Every cell: alternatives (shape x tasks x effect) and nulls (shape x tasks)."""
    rng = np.random.default_rng(seed)
    alternatives, nulls = [], []
    for n in MAX_TASKS:
        for shape, draw in ALTERNATIVE_SHAPES.items():
            for effect in EFFECTS:
                d = draw(rng, (studies, n)) + effect
                alternatives.append({"shape": shape, "tasks": n, "effect": effect, **_sequential(d),
                                     "fixed": float(sign_flip_rejects(d, ALPHA, seed=seed).mean())})
        for shape, draw in NULL_SHAPES.items():
            d = draw(rng, (studies, n))
            nulls.append({"shape": shape, "tasks": n, **_sequential(d),
                          "fixed": float(sign_flip_rejects(d, ALPHA, seed=seed).mean())})
    return {"alternatives": alternatives, "nulls": nulls}


def main() -> None:
    """Run every cell, print the tables, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--studies", type=int, default=STUDIES)
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results-sequential-power.json"))
    args = parser.parse_args()
    started = time.monotonic()
    cells = run(args.studies, SEED)
    elapsed = time.monotonic() - started
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / args.studies)
    print(f"alpha {ALPHA}; {args.studies} studies per cell; bound alpha + 2 MC SE = {bound:.4f}; {elapsed:.1f} s\n")
    print("| shape | tasks | effect (SD) | legacy two-sided | mixture two-sided | one-sided mixture (new) | "
          "with futility | fixed | mean tasks at stop (new rule) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for a in cells["alternatives"]:
        print(f"| {a['shape']} | {a['tasks']} | {a['effect']} | {a['signWeighted']['rejects']:.3f} | "
              f"{a['magnitude']['rejects']:.3f} | {a['magnitudeOneSided']['rejects']:.3f} | "
              f"{a['rule']['rejects']:.3f} | {a['fixed']:.3f} | {a['rule']['meanTasks']:.1f} |")
    print("\n| null shape | tasks | legacy two-sided | mixture two-sided | one-sided mixture (new) | with futility | "
          "fixed |")
    print("|---|---|---|---|---|---|---|")
    for z in cells["nulls"]:
        print(f"| {z['shape']} | {z['tasks']} | {z['signWeighted']['rejects']:.4f} | {z['magnitude']['rejects']:.4f} "
              f"| {z['magnitudeOneSided']['rejects']:.4f} | {z['rule']['rejects']:.4f} | {z['fixed']:.4f} |")
    args.output.write_text(json.dumps({"alpha": ALPHA, "studies": args.studies, "seed": SEED, "bound": bound,
                                       "seconds": elapsed, **cells}, indent=2) + "\n")


if __name__ == "__main__":
    main()
