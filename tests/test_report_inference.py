"""Task-level inference (issues 17 and 30): constructed ledgers with known answers, the exact sign-flip test
against brute force, the former cluster bootstrap against the pair bootstrap, and the variance components."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from agentstudy.report.analysis import Analysis, MetricResult, analyse
from agentstudy.report.inference import (
    cluster_bootstrap_interval,
    design_label,
    sign_flip_p,
    task_effects,
    task_level_summary,
)
from agentstudy.report.load import load_study
from agentstudy.report.stats import bootstrap_interval
from agentstudy.report.variance import ONE_REPETITION, TOO_SMALL, variance_components
from test_report_builders import cli_obs, ledger, write

BASE, TREAT = "repository-only", "doc-bridge-mcp"


def _analysis(tmp_path: Path, plan: dict[str, tuple[list[int], list[int]]], name: str = "ledger.json") -> Analysis:
    """A real sealed ledger with ``plan``: task -> (baseline input tokens per repetition, treatment ones);
    tool calls and wall time follow the tokens so every metric has the same shape."""
    observations = []
    for task, (baseline, treatment) in plan.items():
        for scenario, series in ((BASE, baseline), (TREAT, treatment)):
            for rep, tokens in enumerate(series, start=1):
                observations.append(cli_obs(task, scenario, rep, input_tokens=tokens, tool_calls=tokens // 100,
                                            wall_ms=tokens * 2))
    path = tmp_path / name
    write(path, ledger(observations, planned=len(observations)))
    return analyse(load_study(path, None), resamples=2000)


def _result(analysis: Analysis, key: str) -> MetricResult:
    return next(r for r in analysis.results if r.metric.key == key)


def _brute_force_p(differences: list[float]) -> float:
    observed = abs(sum(differences))
    flips = list(itertools.product((1.0, -1.0), repeat=len(differences)))
    extreme = sum(abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-9
                  for signs in flips)
    return extreme / len(flips)


def test_six_tasks_of_one_sign_give_p_two_in_sixty_four_whatever_the_repetitions(tmp_path: Path) -> None:
    plan = {
        "t1": ([5000], [4100, 4300, 4000]),
        "t2": ([6000, 6100], [5900]),
        "t3": ([5000, 5200, 5100, 4900], [1000, 1200]),
        "t4": ([3000, 3300], [2500, 2700]),
        "t5": ([7000], [6990]),
        "t6": ([4000, 4100, 3900], [3000, 3100, 3900]),
    }
    analysis = _analysis(tmp_path, plan)
    summary = _result(analysis, "inputTokens").task_level
    assert summary.p_value == 0.03125 and summary.p_monte_carlo_se is None
    assert summary.p_min == 0.03125
    assert (summary.tasks, summary.repetitions, summary.design) == (6, None, "6 tasks × 1–4 repetitions")
    assert [e.task_id for e in summary.task_effects] == list(plan)
    assert summary.task_effects[2].difference == pytest.approx(1100 - 5050)
    assert all(e.difference < 0 for e in summary.task_effects)
    assert summary.ci_low is not None and summary.ci_high is not None and summary.estimate is not None
    assert summary.ci_low <= summary.estimate <= summary.ci_high < 0
    # the inverted test at 6 tasks: the interval runs from the smallest to the largest task difference
    differences = [e.difference for e in summary.task_effects]
    assert (summary.ci_low, summary.ci_high) == (min(differences), max(differences))
    assert "exact, all 2^6 sign vectors" in summary.method and "test inversion" in summary.method


def test_three_copies_of_one_repetition_change_nothing(tmp_path: Path) -> None:
    single = {f"t{i}": ([5000 + 37 * i], [5000 + 91 * i - 300 * (i % 3)]) for i in range(6)}
    copied = {task: (base * 3, treat * 3) for task, (base, treat) in single.items()}
    one, three = _analysis(tmp_path, single, "one.json"), _analysis(tmp_path, copied, "three.json")
    for key in ("inputTokens", "toolCalls", "wallTimeMs", "chargedUsd"):
        a, b = _result(one, key).task_level, _result(three, key).task_level
        assert (a.estimate, a.ci_low, a.ci_high, a.p_value) == (b.estimate, b.ci_low, b.ci_high, b.p_value), key
        assert (a.design, b.design) == ("6 tasks × 1 repetition", "6 tasks × 3 repetitions")
    assert _result(one, "inputTokens").task_level.ci_low != _result(one, "inputTokens").task_level.ci_high


def test_three_identical_task_differences_give_p_one_quarter(tmp_path: Path) -> None:
    plan = {"a": ([1000, 1200], [1100, 1300]), "b": ([4000], [4100]), "c": ([2000, 2000, 2300], [2200])}
    summary = _result(_analysis(tmp_path, plan), "inputTokens").task_level
    assert [e.difference for e in summary.task_effects] == [100.0, 100.0, 100.0]
    assert summary.p_value == 0.25
    assert summary.estimate == 100.0


def test_a_task_missing_an_arm_is_left_out_and_the_design_says_so(tmp_path: Path) -> None:
    observations = [cli_obs("a", BASE, 1, input_tokens=1000), cli_obs("a", TREAT, 1, input_tokens=900),
                    cli_obs("b", BASE, 1, input_tokens=1000),
                    cli_obs("b", TREAT, 1, input_tokens=800, status="failed"),
                    cli_obs("c", BASE, 1, input_tokens=1000), cli_obs("c", TREAT, 1, input_tokens=700)]
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, status="blocked"))
    result = _result(analyse(load_study(path, None, allow_unverified=True), resamples=500), "inputTokens")
    summary = result.complete_case
    assert summary is not None
    assert [e.task_id for e in summary.task_effects] == ["a", "c"]
    assert summary.design == "2 tasks × 1 repetition"
    assert summary.p_value == 0.5  # both negative: 2 of 4 sign vectors are as extreme
    # intention to treat (issue 41): the failed attempt was charged, so what it recorded counts in its arm
    assert [e.task_id for e in result.task_level.task_effects] == ["a", "b", "c"]


@pytest.mark.parametrize("seed", range(6))
def test_the_exact_sign_flip_matches_brute_force(seed: int) -> None:
    generator = np.random.default_rng(seed)
    k = int(generator.integers(2, 10))
    differences = [float(v) for v in generator.integers(-5, 6, size=k)]
    p_value, se = sign_flip_p(differences, seed=seed)
    assert se is None
    assert p_value == pytest.approx(_brute_force_p(differences), abs=1e-12)


def test_above_sixteen_tasks_the_monte_carlo_p_is_seeded_and_carries_its_standard_error() -> None:
    differences = [float(v) for v in np.random.default_rng(3).normal(0.4, 1.0, 18)]
    p_value, se = sign_flip_p(differences, seed=7)
    assert se is not None and 0 < se < 0.01
    assert (p_value, se) == sign_flip_p(differences, seed=7)
    # exact over all 2^18 sign vectors, by numpy
    signs = 1 - 2 * ((np.arange(2**18)[:, None] >> np.arange(18)) & 1)
    sums = np.abs(signs @ np.asarray(differences))
    exact = float(np.mean(sums >= abs(sum(differences)) - 1e-9))
    assert abs(p_value - exact) < 4 * se
    summary = task_level_summary({f"t{i}": ([0.0], [d]) for i, d in enumerate(differences)}, seed=7, resamples=500)
    assert summary.p_monte_carlo_se == se and "Monte Carlo" in summary.method


def test_the_cluster_bootstrap_resamples_tasks_not_repetitions() -> None:
    """Two tasks of 40 repetitions each whose differences are +10 and -10: the pair bootstrap treats the
    80 pairs as independent and gives a narrow interval; the task-level one spans the two tasks."""
    generator = np.random.default_rng(5)
    values = {
        "up": (list(generator.normal(100, 1, 40)), list(generator.normal(110, 1, 40))),
        "down": (list(generator.normal(100, 1, 40)), list(generator.normal(90, 1, 40))),
    }
    low, high = cluster_bootstrap_interval(values, seed=1, resamples=2000)
    assert low < -8 and high > 8
    pairs = [t - b for base, treat in values.values() for b, t in zip(base, treat, strict=True)]
    pair_low, pair_high = bootstrap_interval(pairs, seed=1, resamples=2000)
    assert pair_high - pair_low < (high - low) / 3


def test_too_few_tasks_are_said_in_words_never_invented() -> None:
    none = task_level_summary({"a": ([1.0], [])}, seed=1, resamples=100)
    assert none.tasks == 0 and none.estimate is None and none.p_value is None
    assert none.ci_note == "no task has values in both arms"
    one = task_level_summary({"a": ([1.0, 3.0], [5.0])}, seed=1, resamples=100)
    assert (one.estimate, one.ci_low, one.p_value) == (3.0, None, None)
    assert one.p_note == "not computable with 1 task (needs at least 2)"
    with pytest.raises(ValueError, match="finite"):
        task_level_summary({"a": ([float("nan")], [1.0])}, seed=1, resamples=100)
    with pytest.raises(ValueError, match="two tasks"):
        cluster_bootstrap_interval({"a": ([1.0], [2.0])}, seed=1, resamples=100)


def test_design_labels() -> None:
    effects = task_effects({"a": ([1.0, 2.0], [1.0, 2.0]), "b": ([1.0, 2.0], [3.0, 4.0])})
    assert design_label(effects) == (2, "2 tasks × 2 repetitions")
    assert design_label(task_effects({"a": ([1.0], [2.0])})) == (1, "1 task × 1 repetition")


def test_variance_components_recover_a_known_design() -> None:
    """400 tasks × 3 repetitions with task sd 3, task × arm sd 2 and repetition sd 1 / 1.5 per arm: the
    method-of-moments components land near the truth and the ICC is built from them."""
    generator = np.random.default_rng(1)
    values = {}
    for t in range(400):
        task, cell = generator.normal(0, 3), generator.normal(0, 2, 2)
        values[f"t{t}"] = (list(10 + task + cell[0] + generator.normal(0, 1, 3)),
                           list(12 + task + cell[1] + generator.normal(0, 1.5, 3)))
    components = variance_components(values, (BASE, TREAT))
    assert components.note is None and (components.tasks, components.observations) == (400, 2400)
    assert components.between_task == pytest.approx(9, rel=0.2)
    assert components.task_by_arm == pytest.approx(4, rel=0.25)
    assert components.within_task[BASE] == pytest.approx(1, rel=0.1)
    assert components.within_task[TREAT] == pytest.approx(2.25, rel=0.1)
    assert components.between_task is not None and components.task_by_arm is not None
    mean_within = (components.within_task[BASE] + components.within_task[TREAT]) / 2  # type: ignore[operator]
    assert components.icc == pytest.approx(
        components.between_task / (components.between_task + components.task_by_arm + mean_within))


def test_identical_repetitions_give_zero_within_task_variance_and_the_interaction_its_own_share() -> None:
    """Repetitions copied three times: within-task variance is exactly 0 in both arms; what differs between the
    tasks' differences is the task × arm interaction, not repetition noise (the old model called it within)."""
    values = {"a": ([1.0] * 3, [3.0] * 3), "b": ([2.0] * 3, [2.0] * 3), "c": ([5.0] * 3, [9.0] * 3)}
    components = variance_components(values, (BASE, TREAT))
    assert components.within_task == {BASE: 0.0, TREAT: 0.0}
    # differences 2, 0, 4: var 4 -> task × arm 2; sums 4, 4, 14: var 33.33 -> between (33.33 - 4) / 4
    assert components.task_by_arm == pytest.approx(2.0)
    assert components.between_task == pytest.approx((100 / 3 - 4) / 4)
    assert components.icc == pytest.approx(components.between_task / (components.between_task + 2.0))


def test_one_repetition_confounds_interaction_and_noise_and_says_so() -> None:
    components = variance_components({"a": ([1.0], [2.0]), "b": ([3.0], [5.0]), "c": ([2.0], [2.5])}, (BASE, TREAT))
    assert components.within_task == {BASE: None, TREAT: None}
    assert components.task_by_arm is None and components.icc is None and components.note == ONE_REPETITION
    assert components.between_task is not None and components.between_task > 0
    assert components.difference_variance == pytest.approx(float(np.var([1.0, 2.0, 0.5], ddof=1)))


def test_a_single_task_has_no_components() -> None:
    components = variance_components({"a": ([1.0, 2.0], [2.0, 4.0])}, (BASE, TREAT))
    assert components.between_task is None and components.note == TOO_SMALL
