"""Coverage of the task-level 95 % interval on 1,050 simulated studies with task effects (issue 17, Must show).

The simulation is bench/bench_coverage.py's (k 6-20 tasks x r 1-5 repetitions, cycled; 999
resamples per study to keep it quick); the old pair-level bootstrap runs on the same data and
is printed beside it (``pytest -s``).
"""

from __future__ import annotations

from bench.bench_coverage import DELTA, REPETITIONS, TASKS, simulate_coverage, table


def test_task_level_intervals_cover_the_true_difference_93_to_97_percent() -> None:
    result = simulate_coverage(1050, resamples=999)
    print("\n".join(table(result)))
    total = result.total
    assert total.studies == 1050 and DELTA != 0
    assert set(result.by_repetitions) == set(REPETITIONS) and min(TASKS) == 6 and max(TASKS) == 20
    task_share, _ = total.share(total.task_level)
    pair_share, _ = total.share(total.pair_level)
    assert 0.93 <= task_share <= 0.97, f"task-level coverage {task_share:.1%}"
    # Resampling the k x r pairs as independent ignores the shared task effect: it covers less.
    assert pair_share < task_share
