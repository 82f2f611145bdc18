"""Power that carries the pilot's uncertainty (issue 30, item 6): the tasks needed with a range from bounds on
each variance component, the planning alpha, and ``agentstudy power --metric M --effect E --json``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.report.power import simulate_power
from agentstudy.report.power_range import bounded_components, planning_alpha, tasks_needed
from test_report_builders import cli_obs, ledger, write

BASE, TREAT = "repository-only", "doc-bridge-mcp"


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
