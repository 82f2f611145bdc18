"""The task-level test of the mean (report.mean_test, issue 41 item 3): the sign-flip part against brute-force
enumeration of the studentized statistic, the bootstrap-t part against a direct computation of Hall's statistic on
the same resamples, the invariances, and one decision for interval and p."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from agentstudy.report.inference import task_level_summary
from agentstudy.report.inversion import p_at, sign_flip_null
from agentstudy.report.mean_test import MIN_TASKS, bootstrap_t_null, mean_test


def _t(vectors: np.ndarray) -> np.ndarray:
    """The studentized mean of each row, each over its own standard error."""
    k = vectors.shape[1]
    return np.asarray(vectors.mean(axis=1) / (vectors.std(axis=1, ddof=1) / math.sqrt(k)))


@pytest.mark.parametrize("seed", range(40))
def test_enumerated_studentized_flips_give_the_p_of_the_mean(seed: int) -> None:
    generator = np.random.default_rng(seed)
    k = int(generator.integers(3, 11))
    differences = generator.exponential(1.0, size=k) - generator.uniform(0.0, 1.5)
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=k)))
    flipped = signs * differences
    statistic = _t(flipped)
    observed = statistic[0]  # the all-plus sign vector is the data
    scale = 1e-9 * max(1.0, float(np.max(np.abs(statistic))))
    brute = min(1.0, 2 * min(np.mean(statistic >= observed - scale), np.mean(statistic <= observed + scale)))
    assert p_at(sign_flip_null(differences.tolist(), seed=1), 0.0) == pytest.approx(brute, abs=1e-12)
    # why: a flip keeps sum(d^2), so each flip's t is an increasing function of its own mean
    order = np.argsort(flipped.mean(axis=1), kind="stable")
    assert np.all(np.diff(statistic[order]) >= -1e-9)


def _hall(t: np.ndarray, g: np.ndarray, k: int) -> np.ndarray:
    root = math.sqrt(k)
    return np.asarray(t + g * t**2 / (3 * root) + g**2 * t**3 / (27 * k) + g / (6 * root))


def _direct_bootstrap_p(differences: np.ndarray, delta: float, seed: int, resamples: int) -> float:
    """The equal-tailed bootstrap-t p of Hall's statistic at ``delta``, computed on the statistic itself."""
    k = differences.size
    mean, sd = differences.mean(), differences.std(ddof=1)
    skew = float(np.mean((differences - mean) ** 3) / sd**3)
    drawn = differences[np.random.default_rng([seed, 41, 3]).integers(0, k, size=(resamples, k))]
    r_mean, r_sd = drawn.mean(axis=1), drawn.std(axis=1, ddof=1)
    r_skew = np.mean((drawn - r_mean[:, None]) ** 3, axis=1) / r_sd**3
    h_star = _hall((r_mean - mean) / (r_sd / math.sqrt(k)), r_skew, k)
    h = float(_hall(np.array((mean - delta) / (sd / math.sqrt(k))), np.array(skew), k))
    greater = (1 + np.sum(h_star >= h)) / (resamples + 1)
    less = (1 + np.sum(h_star <= h)) / (resamples + 1)
    return float(min(1.0, 2 * min(greater, less)))


@pytest.mark.parametrize("seed", range(12))
def test_bootstrap_thresholds_give_the_p_of_halls_statistic(seed: int) -> None:
    generator = np.random.default_rng(100 + seed)
    k = int(generator.integers(MIN_TASKS, 30))
    differences = generator.gamma(0.7, 2.0, size=k) - 1.4 + generator.normal(0.0, 0.3, size=k)
    null = bootstrap_t_null(differences.tolist(), seed=seed, resamples=1999)
    assert null is not None and null.denominator == 2000
    mean, se = differences.mean(), differences.std(ddof=1) / math.sqrt(k)
    for z in (-3.1, -1.7, -0.4, 0.3, 1.2, 2.6):
        delta = float(mean + z * se)
        assert p_at(null, delta) == pytest.approx(_direct_bootstrap_p(differences, delta, seed, 1999), abs=1e-12)


def _skewed(seed: int, k: int = 14) -> list[float]:
    generator = np.random.default_rng(seed)
    return (generator.exponential(1.0, size=k) * 3.0 - 3.0 + generator.normal(0.0, 1.0, size=k)).tolist()


@pytest.mark.parametrize("seed", range(6))
def test_shift_scale_and_reflection_move_the_interval_and_keep_p(seed: int) -> None:
    data = np.array(_skewed(seed))
    base = mean_test(data.tolist(), seed=3, alpha=0.05)
    assert base.low is not None and base.high is not None
    shifted = mean_test((data + 2.5).tolist(), seed=3, alpha=0.05)
    assert shifted.low is not None and shifted.high is not None
    assert (shifted.low, shifted.high) == pytest.approx((base.low + 2.5, base.high + 2.5), rel=1e-9, abs=1e-9)
    assert shifted.bootstrap is not None and base.bootstrap is not None
    assert p_at(shifted.bootstrap, 2.5) == base.p_bootstrap and p_at(shifted.flip, 2.5) == base.p_flip
    scaled = mean_test((data * 40.0).tolist(), seed=3, alpha=0.05)
    assert scaled.p_value == base.p_value
    assert (scaled.low, scaled.high) == pytest.approx((base.low * 40.0, base.high * 40.0), rel=1e-9)
    mirrored = mean_test((-data).tolist(), seed=3, alpha=0.05)
    assert mirrored.p_value == base.p_value
    assert (mirrored.low, mirrored.high) == pytest.approx((-base.high, -base.low), rel=1e-9)


def test_the_test_rejects_only_when_both_parts_do() -> None:
    for seed in range(30):
        test = mean_test(_skewed(seed, k=12), seed=seed, alpha=0.05)
        assert test.p_bootstrap is not None
        assert test.p_value == max(test.p_flip, test.p_bootstrap)
    # a right-skewed sample whose low mean comes with a low spread: the sign-flip part alone rejects, the
    # skewness-corrected part does not
    generator = np.random.default_rng(7)
    found = []
    for _ in range(400):
        data = (3.0 * (generator.exponential(1.0, size=10) - 1.0)).tolist()
        test = mean_test(data, seed=1, alpha=0.05)
        if test.p_flip < 0.05 <= test.p_value:
            found.append(test)
    assert found, "no sample where the skewness-corrected part keeps the test from rejecting"
    assert all(t.low is not None and t.high is not None and t.low <= 0.0 <= t.high for t in found)


def test_below_ten_tasks_or_without_spread_the_sign_flip_test_alone() -> None:
    few = mean_test(_skewed(1, k=MIN_TASKS - 1), seed=1, alpha=0.05)
    assert few.bootstrap is None and few.p_value == few.p_flip
    flat = mean_test([0.25] * 15, seed=1, alpha=0.05)
    assert flat.bootstrap is None and flat.p_value == flat.p_flip == 2 / 2**15
    assert (flat.low, flat.high) == (0.25, 0.25)


def test_seeded_and_deterministic() -> None:
    data = _skewed(4, k=20)
    first, again = mean_test(data, seed=9, alpha=0.05), mean_test(data, seed=9, alpha=0.05)
    assert (first.p_value, first.low, first.high) == (again.p_value, again.low, again.high)
    assert first.bootstrap is not None and again.bootstrap is not None
    assert np.array_equal(first.bootstrap.means, again.bootstrap.means)
    other = bootstrap_t_null(data, seed=10)
    assert first.bootstrap is not None and other is not None
    assert not np.array_equal(first.bootstrap.means, other.means)


def test_interval_excludes_zero_exactly_when_p_is_below_alpha() -> None:
    generator = np.random.default_rng(41)
    rejected = 0
    for index in range(300):
        k = int(generator.integers(MIN_TASKS, 25))
        shift = generator.choice([0.0, 0.5, 1.0])
        data = 3.0 * (generator.exponential(1.0, size=k) - 1.0) + shift
        if index % 3 == 0:  # 0/1-like differences with ties
            data = np.round(data) / 3.0
        test = mean_test(data.tolist(), seed=index, alpha=0.05, resamples=1999)
        assert test.low is not None and test.high is not None
        excludes = not test.low <= 0.0 <= test.high
        assert excludes == (test.p_value < 0.05)
        rejected += int(excludes)
    assert 0 < rejected < 300


def test_non_finite_differences_are_refused() -> None:
    with pytest.raises(ValueError):
        bootstrap_t_null([1.0] * 11 + [math.inf], seed=1)
    with pytest.raises(ValueError):
        mean_test([1.0, math.nan] * 6, seed=1, alpha=0.05)


def test_the_report_summary_is_this_test_and_says_so() -> None:
    data = _skewed(11, k=12)
    values = {f"t{i}": ([0.0, 0.0], [d, d]) for i, d in enumerate(data)}
    summary = task_level_summary(values, seed=5)
    test = mean_test(data, seed=5, alpha=0.05)
    assert summary.p_value == test.p_value and (summary.ci_low, summary.ci_high) == (test.low, test.high)
    assert "bootstrap-t" in summary.method and "9999 resamples, seed 5" in summary.method
    few = task_level_summary({k: v for k, v in list(values.items())[:8]}, seed=5)
    assert "bootstrap" not in few.method
    assert few.p_value == p_at(sign_flip_null(data[:8], seed=5), 0.0)


def test_zero_between_the_two_parts_intervals_is_not_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both parts' intervals hold the mean, so 0 cannot fall between them on real data; should a bootstrap
    interval ever miss the mean, the hull holds 0 and p is raised to alpha (interval and test one decision)."""
    import agentstudy.report.mean_test as module

    data = [-2.0 - 0.1 * i for i in range(12)]  # every difference negative: the sign-flip part rejects 0
    far = module.SignFlipNull(np.linspace(5.0, 6.0, 9999), 1, 10_000, False, 9999, 1e-9)  # rejects 0 from above
    monkeypatch.setattr(module, "bootstrap_t_null", lambda *args, **kwargs: far)
    test = mean_test(data, seed=1, alpha=0.05)
    assert test.p_flip < 0.05 and test.p_bootstrap is not None and test.p_bootstrap < 0.05
    assert test.low is not None and test.high is not None and test.low < 0.0 < test.high
    assert test.p_value == 0.05


@pytest.mark.parametrize("k", [3, 6, 9, 10, 12, 16, 17, 24])
def test_the_planners_vectorised_decisions_are_the_reports_test_row_by_row(k: int) -> None:
    # the power planner's many simulated studies at once, against mean_test on each study alone (a check is a
    # promise): skewed, tied, constant and one-sign rows, at several levels
    from agentstudy.report.mean_test import mean_test_rejects

    generator = np.random.default_rng(500 + k)
    rows = generator.exponential(1.0, size=(48, k)) - 0.7 + generator.normal(0.0, 0.2, size=(48, k))
    rows[0] = 1.0  # no spread: the sign-flip part alone
    rows[1] = np.round(rows[1])  # ties
    rows[2] = np.abs(rows[2])  # one sign
    rows[3] *= 1e6
    for alpha in (0.01, 0.05, 0.2):
        vector = mean_test_rejects(rows, alpha, seed=11, resamples=500, flips=1000)
        alone = [mean_test(row.tolist(), seed=11, alpha=alpha, resamples=500, flips=1000).p_value < alpha
                 for row in rows]
        assert vector.tolist() == alone
    rejected = int(mean_test_rejects(rows, 0.2, seed=11, resamples=500, flips=1000).sum())
    assert rejected == 0 if k < 4 else 0 < rejected < rows.shape[0]  # 3 tasks: the smallest p is 2/8
    with pytest.raises(ValueError):
        mean_test_rejects(np.array([[1.0, math.inf] * 5]), 0.05, seed=1)


def test_the_bootstrap_thresholds_from_task_counts_are_those_of_the_resampled_values() -> None:
    # the thresholds come from each resample's counts of each task (matrix products); the same resamples drawn as
    # values give the same thresholds, and a resample of one repeated value is studentized by the data's SD
    from agentstudy.report.mean_test import _count_batches, _hall, _hall_inverse, _thresholds

    generator = np.random.default_rng(8)
    data = np.round(generator.gamma(0.6, 3.0, size=12), 1)
    k = data.size
    mean, sd = data.mean(), data.std(ddof=1)
    skew = float(np.mean((data - mean) ** 3) / sd**3)
    counts = next(_count_batches(k, 4, 300))
    counts[0] = 0.0
    counts[0, 3] = k  # every draw the same task: no spread
    got = _thresholds(data[None, :], counts, np.array([mean]), np.array([sd]), np.array([skew]), 1e-12)[0]
    drawn = np.array([np.repeat(data, row.astype(int)) for row in counts])
    r_mean, r_sd = drawn.mean(axis=1), drawn.std(axis=1, ddof=1)
    flat = r_sd <= 1e-9 * np.abs(drawn - mean).max(axis=1)
    r_skew = np.where(flat, 0.0, np.mean((drawn - r_mean[:, None]) ** 3, axis=1) / np.where(flat, 1.0, r_sd) ** 3)
    t_star = (r_mean - mean) / (np.where(flat, sd, r_sd) / math.sqrt(k))
    expected = mean - sd / math.sqrt(k) * _hall_inverse(_hall(t_star, r_skew, k), np.array(skew), k)
    assert flat[0] and np.allclose(got, expected, rtol=0, atol=1e-9 * sd)
