"""Power that carries the pilot's uncertainty (issue 30, item 6): the tasks needed with a range from bounds on
each variance component, the planning alpha, and ``agentstudy power --metric M --effect E --json``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.report.inference_ratio import ratio_summary
from agentstudy.report.power import SEED, minimum_detectable, point_stream, simulate_power
from agentstudy.report.power_range import bounded_components, log_scale_values, planning_alpha, tasks_needed
from plans_once import plans_simulated_once
from test_report_builders import cli_obs, ledger, write

BASE, TREAT = "repository-only", "doc-bridge-mcp"


@pytest.fixture(scope="module", autouse=True)
def plans_once() -> Iterator[None]:
    """The commands here ask ``power --json`` and its text for the same plan: each distinct plan of the commands is
    simulated once in this module (``plans_once``). The functions this file tests directly (``tasks_needed``,
    ``minimum_detectable``, ``simulate_power``) are imported here unpatched and always simulate."""
    with plans_simulated_once():
        yield


def _values(k: int, r: int, seed: int) -> dict[str, tuple[list[float], list[float]]]:
    generator = np.random.default_rng(seed)
    values = {}
    for t in range(k):
        difference = generator.normal(1.0, 1.0)
        values[f"t{t}"] = (list(generator.normal(0, 1.5, r)), list(generator.normal(difference, 1.5, r)))
    return values


def test_the_range_brackets_the_point_plan_and_its_upper_end_reaches_the_target_at_the_upper_bound() -> None:
    values = _values(6, 3, 3)
    point, lower, upper = bounded_components(values)
    assert lower.observed_variance < point.observed_variance < upper.observed_variance
    assert lower.baseline_variance < point.baseline_variance < upper.baseline_variance
    needed = tasks_needed(values, 1.0, 3, 0.05, 0.8)
    assert needed.low is not None and needed.estimate is not None and needed.high is not None
    assert needed.low <= needed.estimate <= needed.high and needed.note is None
    check = simulate_power(1.0, upper.difference_sd(3), needed.high, 3, 0.05, seed=99)
    assert check.power >= 0.8 - 0.04
    assert 0 < needed.monte_carlo_se < 0.02


def test_a_two_by_two_pilot_is_too_small_to_plan_from_and_says_so() -> None:
    needed = tasks_needed(_values(2, 2, 3), 1.0, 2, 0.05, 0.8)
    assert needed.high is None and needed.note is not None and "too small to plan from" in needed.note


def test_a_secondary_metric_plans_at_holms_strictest_level() -> None:
    assert planning_alpha(0.05, "primary", 5) == 0.05
    assert planning_alpha(0.05, "secondary", 5) == 0.01
    assert planning_alpha(0.05, "exploratory", 5) == 0.05


def _pilot_ledger(tmp_path: Path, analysis: dict[str, object]) -> Path:
    observations = []
    for t, (base, treat) in enumerate(_values(6, 3, 11).values()):
        for rep in range(3):
            observations.append(cli_obs(f"t{t}", BASE, rep + 1, input_tokens=int(5000 + 100 * base[rep])))
            observations.append(cli_obs(f"t{t}", TREAT, rep + 1, input_tokens=int(5000 + 100 * treat[rep])))
    path = tmp_path / "pilot.json"
    write(path, ledger(observations, analysis=analysis))
    return path


def test_each_design_point_has_its_own_stream_and_the_detectable_search_stays_monotone() -> None:
    # the stream of (k, r) is SeedSequence(seed).spawn's child k's child r, and differs between points
    child = np.random.SeedSequence(SEED).spawn(9)[8].spawn(3)[2]
    assert np.array_equal(point_stream(SEED, 8, 2).standard_normal(5), np.random.default_rng(child).standard_normal(5))
    assert not np.array_equal(point_stream(SEED, 8, 1).standard_normal(5), point_stream(SEED, 8, 2).standard_normal(5))
    one, two = simulate_power(0.9, 1.0, 8, 1, 0.05), simulate_power(0.9, 1.0, 8, 2, 0.05)
    assert one.power != two.power  # same effect and SD, independent draws per point
    # within a point the draws are common to every effect: power never falls as the effect grows
    powers = [simulate_power(e, 1.0, 8, 2, 0.05).power for e in np.linspace(0, 2, 21)]
    assert powers == sorted(powers) and powers[0] < 0.08 and powers[-1] > 0.8  # size 6/128 under no effect
    point, _, _ = bounded_components(_values(6, 3, 3))
    found = minimum_detectable(point, 0.05, 0.8, tasks=10, repetitions=2)
    assert found.difference is not None and found.estimate is not None and found.estimate.power >= 0.8
    below = simulate_power(found.difference - 0.011 * point.difference_sd(2), point.difference_sd(2), 10, 2, 0.05)
    assert below.power < 0.8


def test_the_log_scale_values_carry_the_reports_log_ratios_and_each_arms_coefficient_of_variation() -> None:
    values = {"a": ([1000.0, 1400.0], [600.0, 700.0]), "b": ([5000.0, 5000.0], [4000.0, 4400.0]),
              "c": ([0.0, 0.0], [10.0, 20.0])}
    logged = log_scale_values(values)
    assert set(logged) == {"a", "b"}  # no ratio where an arm mean is 0, as in the report
    for task, (base, treat) in logged.items():
        raw_base, raw_treat = values[task]
        assert np.mean(treat) - np.mean(base) == pytest.approx(math.log(np.mean(raw_treat) / np.mean(raw_base)))
        assert np.std(base, ddof=1) == pytest.approx(np.std(raw_base, ddof=1) / np.mean(raw_base))
    summary = ratio_summary(values, seed=1, alpha=0.05)  # the report's ratio keeps task c (issue 41)
    assert summary.estimate == pytest.approx((650 + 4200 + 15) / (1200 + 5000 + 0))


def test_power_plans_a_ratio_on_the_log_scale(tmp_path: Path) -> None:
    path = _pilot_ledger(tmp_path, {"primary": {"metric": "inputTokens", "betterWhen": "lower"}})
    result = CliRunner().invoke(main, ["power", str(path), "--metric", "inputTokens", "--effect", "0.97x", "--json"])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["metric"], document["effect"], document["effectScale"], document["alpha"]) == \
        ("inputTokens", 0.97, "ratio", 0.05)
    assert document["logEffect"] == pytest.approx(math.log(0.97))
    report = json.loads(CliRunner().invoke(main, ["report", str(path), "--format", "json"]).stdout)
    observed = next(m for m in report["metrics"] if m["metric"] == "inputTokens")["ratio"]["estimate"]
    assert document["observedEffect"] == pytest.approx(observed)
    ranged = document["tasksNeeded"]
    assert ranged["estimate"] is not None and ranged["low"] <= ranged["estimate"]
    stronger = json.loads(CliRunner().invoke(main, ["power", str(path), "--metric", "inputTokens", "--effect",
                                                    "0.9x", "--json"]).stdout)["tasksNeeded"]
    assert stronger["estimate"] <= ranged["estimate"]  # a larger ratio effect needs no more tasks
    text = CliRunner().invoke(main, ["power", str(path), "--metric", "inputTokens", "--effect", "0.97x"]).stdout
    assert "a ratio of 0.97x (treatment / baseline, planned as a log ratio of" in text
    for bad, reason in (("1x", "other than 1"), ("-0.5x", "other than 1"), ("abcx", "followed by x")):
        refused = CliRunner().invoke(main, ["power", str(path), "--metric", "inputTokens", "--effect", bad])
        assert refused.exit_code == 2 and reason in refused.stderr and refused.stdout == ""
    refused = CliRunner().invoke(main, ["power", str(path), "--metric", "toolCalls", "--effect", "0.8x"])
    assert refused.exit_code == 2 and "not toolCalls" in refused.stderr
    refused = CliRunner().invoke(main, ["power", str(path), "--metric", "inputTokens", "--effect", "0.8x",
                                        "--sequential"])
    assert refused.exit_code == 2 and "not a ratio" in refused.stderr


def test_the_reports_power_section_plans_the_primary_at_its_alpha_and_a_secondary_at_holms(tmp_path: Path) -> None:
    analysis = {"primary": {"metric": "inputTokens", "betterWhen": "lower"},
                "secondary": ["wallTimeMs", "outputTokens"], "alpha": 0.1}
    report = json.loads(CliRunner().invoke(main, ["report", str(_pilot_ledger(tmp_path, analysis)),
                                                  "--format", "json"]).stdout)
    alphas = {p["metric"]: p["alpha"] for p in report["powerPlans"]}
    assert alphas["inputTokens"] == 0.1 and alphas["wallTimeMs"] == alphas["outputTokens"] == 0.05
    assert alphas["toolCalls"] == 0.1  # exploratory: the study's alpha
    assert all(p["monteCarloSe"] is None or 0 <= p["monteCarloSe"] < 0.02 for p in report["powerPlans"])


def test_power_json_names_the_effect_alpha_and_tasks_needed(tmp_path: Path) -> None:
    observations = []
    for t, (base, treat) in enumerate(_values(6, 3, 11).values()):
        for rep in range(3):
            observations.append(cli_obs(f"t{t}", BASE, rep + 1, input_tokens=int(5000 + 100 * base[rep])))
            observations.append(cli_obs(f"t{t}", TREAT, rep + 1, input_tokens=int(5000 + 100 * treat[rep])))
    path = tmp_path / "ledger.json"
    analysis = {"primary": {"metric": "inputTokens", "betterWhen": "lower"}}
    write(path, ledger(observations, analysis=analysis))
    result = CliRunner().invoke(main, ["power", str(path), "--metric", "inputTokens", "--effect", "100", "--json"])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["metric"], document["effect"], document["alpha"], document["repetitions"]) == \
        ("inputTokens", 100.0, 0.05, 3)  # the declared primary plans at the study's alpha
    ranged = document["tasksNeeded"]
    assert set(ranged) >= {"estimate", "low", "high"}
    assert ranged["low"] <= ranged["estimate"] and (ranged["high"] is None or ranged["estimate"] <= ranged["high"])
    assert "simulation error" in document["monteCarloSeMeaning"]
    text = CliRunner().invoke(main, ["power", str(path), "--metric", "inputTokens", "--effect", "100"]).stdout
    assert "from the pilot's point estimates, range" in text and "is a reference only" in text
