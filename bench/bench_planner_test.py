"""The power planner's test against the report's: the same simulated studies decided by the report's test of the
mean with the planner's Monte Carlo counts and with the report's (issue 41).

The planner (``report.power.study_rejects``) decides each simulated study with
``report.mean_test.mean_test_rejects`` at ``PLANNER_FLIPS`` sign vectors (above 16 tasks) and ``PLANNER_RESAMPLES``
bootstrap-t resamples; the report runs ``MONTE_CARLO_FLIPS`` and ``BOOTSTRAP_T_RESAMPLES``. Per cell
:data:`STUDIES` studies of ``k`` task differences ``N(effect, 1)`` (generator seeded with ``k``), both decisions at
alpha 0.05 with the planner's seed; printed: both rejection rates, their paired difference with its SE, and the
CPU seconds of the planner's decisions. Run ``.venv/bin/python -m bench.bench_planner_test [--studies N]``
(about 5 minutes at 4,000 studies, most of it the report's 100,000 sign vectors).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from agentstudy.report.inversion import MONTE_CARLO_FLIPS
from agentstudy.report.mean_test import BOOTSTRAP_T_RESAMPLES, PLANNER_FLIPS, PLANNER_RESAMPLES, mean_test_rejects
from agentstudy.report.power import SEED

STUDIES = 4000
CELLS = ((10, 0.75), (20, 0.5), (40, 0.35), (80, 0.25))
"""(tasks, effect in SDs of a task difference): about half the studies reject in each."""
ALPHA = 0.05


def main() -> None:
    """Print one row per cell."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--studies", type=int, default=STUDIES)
    args = parser.parse_args()
    print("| tasks | effect | studies | planner's counts | report's counts | difference (paired SE) | planner CPU s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k, effect in CELLS:
        data = np.random.default_rng(k).normal(effect, 1.0, size=(args.studies, k))
        started = time.process_time()
        planner = mean_test_rejects(data, ALPHA, seed=SEED, resamples=PLANNER_RESAMPLES, flips=PLANNER_FLIPS)
        cpu = time.process_time() - started
        report = mean_test_rejects(data, ALPHA, seed=SEED, resamples=BOOTSTRAP_T_RESAMPLES, flips=MONTE_CARLO_FLIPS)
        difference = planner.astype(float) - report.astype(float)
        se = float(difference.std(ddof=1)) / math.sqrt(args.studies)
        print(f"| {k} | {effect} | {args.studies} | {planner.mean():.2%} | {report.mean():.2%} | "
              f"{100 * difference.mean():+.2f} points ({100 * se:.2f}) | {cpu:.2f} |", flush=True)
    print(f"\nplanner: {PLANNER_FLIPS} sign vectors, {PLANNER_RESAMPLES} resamples; report: {MONTE_CARLO_FLIPS} sign "
          f"vectors, {BOOTSTRAP_T_RESAMPLES} resamples; alpha {ALPHA}, seed {SEED}")


if __name__ == "__main__":
    main()
