"""Coverage of the report's 95 % intervals on simulated studies with task effects (issue 17, Must show).

Each simulated study has ``k`` tasks (6 to 20) and ``r`` repetitions per arm (1 to 5), cycled over
the whole grid. Task ``i`` has a baseline level ``mu_i ~ N(0, LEVEL_SD^2)`` and a true paired
difference ``d_i ~ N(DELTA, TASK_SD^2)``; repetitions are ``N(mu_i, REP_SD^2)`` (repository-only) and
``N(mu_i + d_i, REP_SD^2)`` (doc-bridge-mcp). The estimand is the population difference ``DELTA``.
Per study, on the same data: the task-level percentile cluster bootstrap interval
(``report.inference.cluster_bootstrap_interval``) and the old pair-level percentile bootstrap
(``report.stats.bootstrap_interval`` over the ``k x r`` pairs, repetition j paired with repetition j).
Coverage is the share of studies whose interval holds ``DELTA``, with its binomial SE.

Run ``.venv/bin/python -m bench.bench_coverage [--studies N] [--resamples B]``; it prints a table
and asserts nothing (``property_tests/test_coverage_properties.py`` asserts the 93-97 % band).
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from agentstudy.report.inference import cluster_bootstrap_interval
from agentstudy.report.stats import bootstrap_interval

DELTA = 1.0
TASK_SD = 1.0
LEVEL_SD = 3.0
REP_SD = 1.5
TASKS = tuple(range(6, 21))
REPETITIONS = tuple(range(1, 6))
SEED = 20261017


@dataclass
class Coverage:
    """Counts of studies and of intervals covering ``DELTA`` (task-level and pair-level)."""

    studies: int = 0
    task_level: int = 0
    pair_level: int = 0

    def share(self, hits: int) -> tuple[float, float]:
        """``(share, binomial SE)`` of ``hits`` over the studies (0-1)."""
        p = hits / self.studies if self.studies else math.nan
        return p, math.sqrt(p * (1 - p) / self.studies) if self.studies else math.nan


@dataclass
class CoverageResult:
    """Overall coverage and the same per number of tasks band and per repetitions."""

    total: Coverage = field(default_factory=Coverage)
    by_tasks: dict[str, Coverage] = field(default_factory=dict)
    by_repetitions: dict[int, Coverage] = field(default_factory=dict)


def _band(k: int) -> str:
    return "6-9" if k < 10 else "10-14" if k < 15 else "15-20"


def _designs(studies: int) -> Iterator[tuple[int, int]]:
    grid = itertools.cycle(itertools.product(TASKS, REPETITIONS))
    return itertools.islice(grid, studies)


def simulate_coverage(studies: int, *, seed: int = SEED, resamples: int = 999) -> CoverageResult:
    """Simulate ``studies`` studies over the k x r grid and count covering intervals (seeded)."""
    rng = np.random.default_rng(seed)
    result = CoverageResult()
    for index, (k, r) in enumerate(_designs(studies)):
        level = rng.normal(0.0, LEVEL_SD, size=k)
        effect = rng.normal(DELTA, TASK_SD, size=k)
        base = level[:, None] + rng.normal(0.0, REP_SD, size=(k, r))
        treat = (level + effect)[:, None] + rng.normal(0.0, REP_SD, size=(k, r))
        values = {f"t{i}": (base[i].tolist(), treat[i].tolist()) for i in range(k)}
        low, high = cluster_bootstrap_interval(values, seed=seed + index, resamples=resamples)
        pair_low, pair_high = bootstrap_interval((treat - base).ravel().tolist(), seed=seed + index,
                                                 resamples=resamples)
        task_hit, pair_hit = int(low <= DELTA <= high), int(pair_low <= DELTA <= pair_high)
        for cell in (result.total, result.by_tasks.setdefault(_band(k), Coverage()),
                     result.by_repetitions.setdefault(r, Coverage())):
            cell.studies += 1
            cell.task_level += task_hit
            cell.pair_level += pair_hit
    return result


def table(result: CoverageResult) -> list[str]:
    """A Markdown table: coverage (%) of both intervals overall, per tasks band and per repetitions."""
    lines = ["| studies | design | task-level cluster bootstrap | old pair-level bootstrap |",
             "| ---: | --- | ---: | ---: |"]
    rows: list[tuple[str, Coverage]] = [("all: k 6-20, r 1-5", result.total)]
    rows += [(f"k {band}", cell) for band, cell in result.by_tasks.items()]
    rows += [(f"r = {r}", cell) for r, cell in sorted(result.by_repetitions.items())]
    for label, cell in rows:
        (task, task_se), (pair, pair_se) = cell.share(cell.task_level), cell.share(cell.pair_level)
        lines.append(f"| {cell.studies} | {label} | {task:.1%} ± {task_se:.1%} | {pair:.1%} ± {pair_se:.1%} |")
    return lines


def main() -> None:
    """Print the coverage table (nominal 95 %)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--studies", type=int, default=3000)
    parser.add_argument("--resamples", type=int, default=1999)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    result = simulate_coverage(args.studies, seed=args.seed, resamples=args.resamples)
    print(f"Coverage of nominal 95 % intervals of DELTA = {DELTA} (task SD {TASK_SD}, repetition SD {REP_SD}, "
          f"level SD {LEVEL_SD}; {args.resamples} resamples, seed {args.seed})")
    print("\n".join(table(result)))


if __name__ == "__main__":
    main()
