"""Honest intervals (issue 41 item 5): one tolerance for the test and its interval, so "the interval excludes 0"
is "p < alpha" in every one of 20,000 simulated correctness studies; a point interval says so; per-arm rates
respect the clustering of attempts in tasks."""

from __future__ import annotations

import numpy as np
import pytest

from agentstudy.report.inference import task_level_summary
from agentstudy.report.inference_rates import clopper_pearson, effective_size


def _summary(study: tuple[tuple[int, int], ...]) -> tuple[float | None, float | None, float | None]:
    """(p, low, high) of a study given as (baseline, treatment) successes of 3 attempts per task, in task order."""
    values = {f"t{i}": ([0.0] * (3 - b) + [1.0] * b, [0.0] * (3 - t) + [1.0] * t) for i, (b, t) in enumerate(study)}
    summary = task_level_summary(values, seed=1)
    return summary.p_value, summary.ci_low, summary.ci_high


def test_twenty_thousand_correctness_studies_agree_on_interval_and_p() -> None:
    """Each study lists its tasks in the order of their difference (any order is a study). The test and its
    interval are of the task differences, so studies with the same differences (the same floats) get the same p
    and interval: each distinct sequence of differences (a few thousand of the 20,000) is computed once, every
    10th repeat is recomputed from its own values and must give the same, and every study is checked."""
    generator = np.random.default_rng(20261204)
    answers: dict[tuple[float, ...], tuple[float | None, float | None, float | None]] = {}
    disagreements = checked = repeats = 0
    for _ in range(20_000):
        k = int(generator.integers(6, 13))
        difficulty = generator.uniform(0.05, 0.95, size=k)
        lift = generator.choice([0.0, 0.2, 0.4])
        baseline = (generator.random((k, 3)) < difficulty[:, None]).sum(axis=1)
        treatment = (generator.random((k, 3)) < np.clip(difficulty + lift, 0, 1)[:, None]).sum(axis=1)
        study = tuple(sorted(zip(baseline.tolist(), treatment.tolist(), strict=True), key=lambda c: (c[1] - c[0], c)))
        key = tuple(t / 3 - b / 3 for b, t in study)  # each task's difference of means, as the summary takes it
        if key not in answers:
            answers[key] = _summary(study)
        else:
            repeats += 1
            if repeats % 10 == 0:
                assert _summary(study) == answers[key], study
        p_value, low, high = answers[key]
        assert p_value is not None
        if low is None or high is None:
            assert p_value >= 0.05
            continue
        checked += 1
        disagreements += (low > 0 or high < 0) != (p_value < 0.05)
    assert checked > 15_000 and disagreements == 0


def test_float_noise_at_an_end_does_not_exclude_zero() -> None:
    # 0.1 + 0.2 - 0.3 is 5.6e-17, not 0: the flipped-set mean at the interval's end is noise around 0
    values = {f"t{i}": ([0.3], [0.1 + 0.2]) for i in range(3)} | {f"u{i}": ([0.0], [1.0]) for i in range(4)}
    summary = task_level_summary(values, seed=1)
    assert summary.p_value is not None and summary.ci_low is not None and summary.ci_high is not None
    assert (summary.ci_low > 0) == (summary.p_value < 0.05)


def test_identical_task_differences_give_a_point_with_a_sentence() -> None:
    summary = task_level_summary({f"t{i}": ([0.0], [1.0]) for i in range(7)}, seed=1)
    assert (summary.ci_low, summary.ci_high) == (1.0, 1.0)
    assert summary.ci_note is not None and "single point" in summary.ci_note


def test_the_rate_interval_widens_when_tasks_differ_and_not_when_they_do_not() -> None:
    clustered = [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    # rate 1/2; each task is 1.5 off its share, so the variance is 4/3 * 4 * 1.5^2 / 12^2 = 1/12: n_eff = 0.25 * 12
    assert effective_size(clustered) == pytest.approx(3.0, rel=1e-12)
    independent = [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    assert effective_size(independent) == 12
    low, high = clopper_pearson(6.0, 12.0, 0.05)
    wide_low, wide_high = clopper_pearson(0.5 * effective_size(clustered), effective_size(clustered), 0.05)
    assert wide_low < low and wide_high > high


@pytest.mark.parametrize("seed", range(5))
def test_the_studentized_statistic_gives_the_sign_flip_p_of_the_mean(seed: int) -> None:
    import itertools

    from agentstudy.report.inference import sign_flip_p

    generator = np.random.default_rng(seed)
    differences = generator.lognormal(0.0, 1.0, size=8) - 1.2  # skewed, unequal magnitudes
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=differences.size))) * differences
    studentized = flips.mean(axis=1) / (flips.std(axis=1, ddof=1) / np.sqrt(differences.size))
    observed = studentized[0]  # the all-plus vector is the data
    brute = min(1.0, 2 * min(np.mean(studentized >= observed - 1e-12), np.mean(studentized <= observed + 1e-12)))
    assert sign_flip_p(differences.tolist(), seed=1)[0] == pytest.approx(brute, abs=1e-12)
