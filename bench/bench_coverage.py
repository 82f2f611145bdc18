"""Coverage and type-I error of the report's interval per design cell, beside the former bootstrap (issue 30, item 7).

Cells: ``k`` tasks in :data:`TASKS` (2, 3, 4, 6, 10, 20) × ``r`` repetitions in :data:`REPETITIONS`
(1, 3) × effect shape in :data:`SHAPES`:

- ``normal``: task level ``mu_i ~ N(0, 3^2)``, true task difference ``d_i ~ N(1, 1)``, repetitions
  ``N(mu_i, 1.5^2)`` (control) and ``N(mu_i + d_i, 1.5^2)`` (treatment); the estimand is 1.
- ``lognormal``: token-like counts. Task level ``log m_i ~ N(8, 0.8^2)``, task ratio
  ``log rho_i ~ N(-0.2, 0.2^2)``, repetitions ``exp(N(log m_i, 0.5^2))`` and
  ``exp(N(log m_i + log rho_i, 0.5^2))``; the estimand is the population mean task difference
  ``exp(8 + 0.32 + 0.125) (exp(-0.18) - 1)``.
- ``skewed``: as ``normal`` but ``d_i = 1 + (chi2_1 - 1) / sqrt(2)`` (skewness 2.8; mean 1).

Per study, on the same data: the report's interval (its test of the mean inverted at alpha 0.05,
:mod:`agentstudy.report.mean_test`: the exact sign-flip test, Monte Carlo with :data:`FLIPS` sign vectors above 16
tasks, and from 10 tasks on the skewness-corrected bootstrap-t with :data:`BOOT_T` resamples — fewer than the
report's 9,999, to keep the run short) and the former percentile cluster bootstrap
(``report.inference.cluster_bootstrap_interval``, :data:`RESAMPLES` resamples). Coverage is the share of studies
whose interval holds the estimand (an unbounded interval always does; the share of unbounded intervals is printed).
Type-I error: the same cell with no treatment effect at all (treatment repetitions drawn exactly like control ones),
the share of studies where the test rejects at 0.05 and where the bootstrap interval excludes 0. For the lognormal
shape also the ratio interval's coverage of the true geometric mean ratio ``exp(-0.2)``
(:mod:`agentstudy.report.inference_ratio`'s method). Every cell has its own random stream
(``SeedSequence(SEED).spawn``).

Issue 41: the test's null is "equal arm means". :func:`equal_mean_type_one` measures, per cell of tasks ×
repetitions, the rejection rate when the arm means are equal but the treatment arm is more variable: ``symmetric``,
each treatment attempt ``N(mu_i, 3^2)`` against the control's ``N(mu_i, 1.5^2)`` (task differences symmetric: the
sign-flip part is exact); ``skewed``, each treatment attempt ``mu_i + 3 (Exp(1) - 1)`` (mean ``mu_i``, SD 3,
skewness 2). Beside it the sign-flip test alone (the report's test before the bootstrap part) and the Monte Carlo SE
(``--equal-mean`` prints that table only). :func:`power_table` prints what the bootstrap part costs in power
(``--power``).

Run ``.venv/bin/python -m bench.bench_coverage [--studies N] [--equal-mean]``; it prints a Markdown table and
asserts nothing (``property_tests/test_coverage_properties.py`` asserts the bands on fewer studies).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from agentstudy.report.inference import cluster_bootstrap_interval
from agentstudy.report.inversion import inverted_interval, sign_flip_null
from agentstudy.report.mean_test import mean_test

TASKS = (2, 3, 4, 6, 10, 20)
REPETITIONS = (1, 3)
SHAPES = ("normal", "lognormal", "skewed")
ALPHA = 0.05
SEED = 20261203
FLIPS = 4000
"""Monte Carlo sign vectors per study above 16 tasks (the report uses 100,000)."""
BOOT_T = 1999
"""Bootstrap-t resamples per study of 10 tasks or more (the report uses 9,999)."""
RESAMPLES = 299
"""Cluster-bootstrap resamples per study for the former interval (the report used 10,000)."""
LOGNORMAL_TRUTH = math.exp(8 + 0.32 + 0.125) * (math.exp(-0.18) - 1)


@dataclass
class Cell:
    """One design cell's counts over ``studies`` simulated studies (and as many null studies)."""

    tasks: int
    repetitions: int
    shape: str
    studies: int = 0
    new_covers: int = 0
    new_unbounded: int = 0
    old_covers: int = 0
    new_rejects_null: int = 0
    old_excludes_null: int = 0
    ratio_covers: int = 0

    def share(self, hits: int) -> float:
        """``hits / studies`` (0-1)."""
        return hits / self.studies if self.studies else math.nan


def _study(k: int, r: int, shape: str, rng: np.random.Generator, *,
           effect: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """``(control, treatment)`` as (k, r) arrays and the estimand (0 without effect)."""
    if shape == "lognormal":
        level = rng.normal(8.0, 0.8, size=k)
        log_ratio = rng.normal(-0.2, 0.2, size=k) if effect else np.zeros(k)
        base = np.exp(level[:, None] + rng.normal(0.0, 0.5, size=(k, r)))
        treat = np.exp((level + log_ratio)[:, None] + rng.normal(0.0, 0.5, size=(k, r)))
        return base, treat, LOGNORMAL_TRUTH if effect else 0.0
    level = rng.normal(0.0, 3.0, size=k)
    if not effect:
        difference = np.zeros(k)
    elif shape == "skewed":
        difference = 1.0 + (rng.chisquare(1, size=k) - 1.0) / math.sqrt(2.0)
    else:
        difference = rng.normal(1.0, 1.0, size=k)
    base = level[:, None] + rng.normal(0.0, 1.5, size=(k, r))
    treat = (level + difference)[:, None] + rng.normal(0.0, 1.5, size=(k, r))
    return base, treat, 1.0 if effect else 0.0


def _intervals(base: np.ndarray, treat: np.ndarray, seed: int) -> tuple[tuple[float | None, float | None], float,
                                                                          tuple[float, float]]:
    differences = (treat.mean(axis=1) - base.mean(axis=1)).tolist()
    test = mean_test(differences, seed=seed, alpha=ALPHA, resamples=BOOT_T, flips=FLIPS)
    values = {f"t{i}": (base[i].tolist(), treat[i].tolist()) for i in range(base.shape[0])}
    old = cluster_bootstrap_interval(values, seed=seed, resamples=RESAMPLES)
    return (test.low, test.high), test.p_value, old


def _ratio_covers(base: np.ndarray, treat: np.ndarray, seed: int) -> int:
    """Whether the report's ratio interval (the inverted test on per-task log ratios of arm means) holds the
    true geometric mean ratio ``exp(-0.2)``."""
    logs = np.log(treat.mean(axis=1) / base.mean(axis=1)).tolist()
    low, high = inverted_interval(sign_flip_null(logs, seed=seed, draws=FLIPS), ALPHA)
    return int(low is None or high is None or low <= -0.2 <= high)


def simulate_cell(k: int, r: int, shape: str, studies: int, seed: np.random.SeedSequence) -> Cell:
    """Simulate ``studies`` studies with the effect and ``studies`` without in one cell, on the cell's stream."""
    rng = np.random.default_rng(seed)
    cell = Cell(k, r, shape)
    for index in range(studies):
        base, treat, truth = _study(k, r, shape, rng, effect=True)
        (low, high), _, (old_low, old_high) = _intervals(base, treat, index)
        cell.studies += 1
        cell.new_unbounded += int(low is None)
        cell.new_covers += int(low is None or high is None or low <= truth <= high)
        cell.old_covers += int(old_low <= truth <= old_high)
        if shape == "lognormal":
            cell.ratio_covers += _ratio_covers(base, treat, index)
        base, treat, _ = _study(k, r, shape, rng, effect=False)
        _, p_value, (old_low, old_high) = _intervals(base, treat, index)
        cell.new_rejects_null += int(p_value < ALPHA)
        cell.old_excludes_null += int(not old_low <= 0.0 <= old_high)
    return cell


def simulate(studies: int, *, seed: int = SEED, tasks: tuple[int, ...] = TASKS,
             repetitions: tuple[int, ...] = REPETITIONS, shapes: tuple[str, ...] = SHAPES) -> list[Cell]:
    """Every cell of ``tasks`` × ``repetitions`` × ``shapes``, each on its own spawned random stream."""
    grid = list(itertools.product(tasks, repetitions, shapes))
    streams = np.random.SeedSequence(seed).spawn(len(grid))
    return [simulate_cell(k, r, shape, studies, stream) for (k, r, shape), stream in zip(grid, streams, strict=True)]


EQUAL_MEAN_SHAPES = ("symmetric", "skewed")


def equal_mean_type_one(k: int, r: int, studies: int, seed: np.random.SeedSequence,
                        shape: str = "skewed") -> tuple[float, float]:
    """The shares of ``studies`` equal-mean, unequal-spread studies of ``shape`` (module docstring) of ``k`` tasks ×
    ``r`` repetitions in which the report's test, and the sign-flip test alone, reject at alpha."""
    rng = np.random.default_rng(seed)
    rejects = flips_reject = 0
    for index in range(studies):
        level = rng.normal(0.0, 3.0, size=k)
        base = level[:, None] + rng.normal(0.0, 1.5, size=(k, r))
        spread = (3.0 * (rng.exponential(1.0, size=(k, r)) - 1.0) if shape == "skewed"
                  else rng.normal(0.0, 3.0, size=(k, r)))
        differences = ((level[:, None] + spread).mean(axis=1) - base.mean(axis=1)).tolist()
        test = mean_test(differences, seed=index, alpha=ALPHA, resamples=BOOT_T, flips=FLIPS)
        rejects += int(test.p_value < ALPHA)
        flips_reject += int(test.p_flip < ALPHA)
    return rejects / studies, flips_reject / studies


def equal_mean_table(studies: int, seed: int = SEED) -> list[str]:
    """The type-I table of :func:`equal_mean_type_one` per cell and shape, with ``alpha + 2 MC SE`` beside it."""
    grid = list(itertools.product(TASKS, REPETITIONS, EQUAL_MEAN_SHAPES))
    streams = np.random.SeedSequence([seed, 41]).spawn(len(grid))
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
    lines = [f"| tasks | reps | arms' spread | studies | type-I, report's test | within alpha + 2 MC SE ({limit:.2%}) "
             "| type-I, sign-flip test alone |", "| ---: | ---: | --- | ---: | ---: | --- | ---: |"]
    for (k, r, shape), stream in zip(grid, streams, strict=True):
        share, flips = equal_mean_type_one(k, r, studies, stream, shape)
        lines.append(f"| {k} | {r} | unequal, {shape} | {studies} | {share:.2%} | {'yes' if share <= limit else 'NO'} "
                     f"| {flips:.2%} |")
    return lines


def power_table(studies: int, seed: int = SEED, effects: tuple[float, ...] = (0.5, 1.0)) -> list[str]:
    """What the bootstrap part costs: per cell of 10 and 20 tasks × :data:`REPETITIONS` and per mean effect in
    ``effects`` (the ``normal`` shape: task differences ``N(effect, 1)``, repetitions with SD 1.5), the share of
    ``studies`` in which the report's test and the sign-flip test alone reject at alpha."""
    grid = list(itertools.product((10, 20), REPETITIONS, effects))
    streams = np.random.SeedSequence([seed, 41, 7]).spawn(len(grid))
    lines = ["| tasks | reps | effect | studies | power, report's test | power, sign-flip test alone |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for (k, r, effect), stream in zip(grid, streams, strict=True):
        rng = np.random.default_rng(stream)
        both = flips = 0
        for index in range(studies):
            level = rng.normal(0.0, 3.0, size=k)
            base = level[:, None] + rng.normal(0.0, 1.5, size=(k, r))
            treat = (level + rng.normal(effect, 1.0, size=k))[:, None] + rng.normal(0.0, 1.5, size=(k, r))
            test = mean_test((treat.mean(axis=1) - base.mean(axis=1)).tolist(), seed=index, alpha=ALPHA,
                             resamples=BOOT_T, flips=FLIPS)
            both += int(test.p_value < ALPHA)
            flips += int(test.p_flip < ALPHA)
        lines.append(f"| {k} | {r} | {effect:g} | {studies} | {both / studies:.1%} | {flips / studies:.1%} |")
    return lines


def table(cells: list[Cell]) -> list[str]:
    """A Markdown table, one row per cell: coverage of both intervals (nominal 95 %), unbounded share,
    type-I error of the test and the bootstrap's false exclusions of 0."""
    lines = ["| tasks | reps | shape | studies | coverage, inverted test | unbounded | coverage, old bootstrap "
             "| type-I, test | 0 excluded under no effect, old bootstrap | coverage, ratio interval |",
             "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in cells:
        lines.append(f"| {c.tasks} | {c.repetitions} | {c.shape} | {c.studies} | {c.share(c.new_covers):.1%} | "
                     f"{c.share(c.new_unbounded):.0%} | {c.share(c.old_covers):.1%} | "
                     f"{c.share(c.new_rejects_null):.1%} | {c.share(c.old_excludes_null):.1%} | "
                     f"{f'{c.share(c.ratio_covers):.1%}' if c.shape == 'lognormal' else '—'} |")
    return lines


def main() -> None:
    """Print the per-cell table and the settings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--studies", type=int, default=300, help="studies per cell (and as many without effect)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--equal-mean", action="store_true", help="only the equal-mean, unequal-spread type-I table")
    parser.add_argument("--power", action="store_true", help="only the power table, report's test vs sign flips")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.power:
        lines = power_table(args.studies, args.seed)
        print(f"Power at alpha {ALPHA} (normal task effects, SD 1; repetition SD 1.5); {args.studies} studies per "
              f"cell; seed {args.seed}; {time.perf_counter() - started:.0f} s")
        print("\n".join(lines))
        return
    if args.equal_mean:
        lines = equal_mean_table(args.studies, args.seed)
        print(f"Type-I error at alpha {ALPHA} with equal arm means and a more variable treatment arm; "
              f"{args.studies} studies per cell; seed {args.seed}; {time.perf_counter() - started:.0f} s")
        print("\n".join(lines))
        return
    cells = simulate(args.studies, seed=args.seed)
    print(f"Per-cell coverage of nominal {1 - ALPHA:.0%} intervals; {args.studies} studies per cell with the "
          f"effect and as many without; {FLIPS} Monte Carlo sign vectors above 16 tasks; {RESAMPLES} bootstrap "
          f"resamples; seed {args.seed}; {time.perf_counter() - started:.0f} s")
    print("\n".join(table(cells)))


if __name__ == "__main__":
    main()
