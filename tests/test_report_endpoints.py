"""Statistics that survive review (issue 30): constructed ledgers with known exact answers, the interval
that agrees with the test, Holm over the report's own p-values, ratios as geometric means, intention to
treat with per-arm exact rates, and the declared primary endpoint read from the ledger."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from agentstudy.report.analysis import analyse
from agentstudy.report.build import build_report
from agentstudy.report.inference_rates import clopper_pearson
from agentstudy.report.inference_ratio import RatioSummary, ratio_words
from agentstudy.report.inversion import inverted_interval, p_at, sign_flip_null, smallest_attainable_p
from agentstudy.report.json_view import report_json
from agentstudy.report.load import load_study
from test_report_builders import cli_obs, companion, ledger, markdown_tables, write

BASE, TREAT = "repository-only", "doc-bridge-mcp"


def _ledger(tmp_path: Path, differences: list[int], *, repetitions: int = 1, name: str = "ledger.json",
            **extra: Any) -> Path:
    """A sealed ledger of one task per difference: baseline 1000 input tokens, treatment 1000 + difference;
    wall time and output tokens vary so every metric has its own p-value."""
    observations = []
    for index, difference in enumerate(differences):
        for rep in range(1, repetitions + 1):
            observations.append(cli_obs(f"t{index}", BASE, rep, input_tokens=1000, output_tokens=100 + index,
                                        wall_ms=2000 + 10 * index))
            observations.append(cli_obs(f"t{index}", TREAT, rep, input_tokens=1000 + difference,
                                        output_tokens=100 + 3 * index, wall_ms=2000 - 7 * index * index))
    path = tmp_path / name
    write(path, ledger(observations, **extra))
    return path


def _json(path: Path, adjudication: Path | None = None) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(build_report(path, adjudication, output_format="json"))
    return document


def _metric(document: dict[str, Any], key: str) -> dict[str, Any]:
    return next(m for m in document["metrics"] if m["metric"] == key)


def test_six_agreeing_task_differences_give_p_two_in_sixty_four_and_an_interval_without_zero(tmp_path: Path) -> None:
    entry = _metric(_json(_ledger(tmp_path, [100, 120, 80, 150, 90, 110])), "inputTokens")
    assert entry["pValue"] == 2 / 64 and entry["smallestAttainableP"] == 2 / 64
    assert entry["estimate"] == pytest.approx(650 / 6)
    assert (entry["ciLow"], entry["ciHigh"]) == (80.0, 150.0)  # the inverted test at 6 tasks: [min, max]
    assert entry["ciLow"] > 0


def test_three_zero_differences_give_p_one_quarter_an_interval_with_zero_and_floor_one_quarter(tmp_path: Path) -> None:
    entry = _metric(_json(_ledger(tmp_path, [50, 50, 50, 0, 0, 0])), "inputTokens")
    assert entry["pValue"] == 0.25 and entry["smallestAttainableP"] == 0.25
    assert entry["ciLow"] is not None and entry["ciHigh"] is not None
    assert entry["ciLow"] <= 0 <= entry["ciHigh"]


def test_too_few_tasks_give_an_unbounded_interval_with_one_sentence(tmp_path: Path) -> None:
    entry = _metric(_json(_ledger(tmp_path, [1064, 1854], repetitions=2)), "inputTokens")
    assert entry["pValue"] == 0.5 and entry["ciLow"] is None and entry["ciHigh"] is None
    assert entry["reason"].startswith("unbounded: with 2 tasks the sign-flip test cannot reach p < 0.05")


def _brute_p(differences: np.ndarray, delta: float) -> float:
    shifted = differences - delta
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=len(shifted))))
    means = flips @ shifted
    observed = shifted.sum()
    tol = 1e-9
    return min(1.0, 2 * min(np.mean(means >= observed - tol), np.mean(means <= observed + tol)))


@pytest.mark.parametrize("seed", range(8))
def test_the_interval_is_exactly_the_set_the_test_does_not_reject(seed: int) -> None:
    generator = np.random.default_rng(seed)
    k = int(generator.integers(6, 11))
    differences = np.round(generator.normal(1.0, 2.0, k), 2)
    null = sign_flip_null(differences.tolist(), seed=seed)
    low, high = inverted_interval(null, 0.05)
    assert low is not None and high is not None
    p_zero = p_at(null, 0.0)
    assert p_zero == pytest.approx(_brute_p(differences, 0.0))
    assert (low <= 0 <= high) == (p_zero >= 0.05)
    for end in (low, high):
        assert _brute_p(differences, end) >= 0.05
    assert _brute_p(differences, low - 1e-6) < 0.05 and _brute_p(differences, high + 1e-6) < 0.05
    for delta in np.linspace(low, high, 7)[1:-1]:
        assert _brute_p(differences, float(delta)) >= 0.05 - 1e-12


def test_smallest_attainable_p_counts_only_non_zero_differences() -> None:
    assert smallest_attainable_p([50, 50, 50, 0, 0, 0]) == 0.25
    assert smallest_attainable_p([1, 2, 3, 4, 5, 6]) == 2 / 64
    assert smallest_attainable_p([0, 0]) == 1.0


def _holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment written out (independent of statsmodels)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def test_secondary_p_values_are_holm_over_the_reports_own_set(tmp_path: Path) -> None:
    document = _json(_ledger(tmp_path, [100, 120, 80, 150, 90, -110, 60, 70]))
    assert document["primary"] == {"metric": "correctness", "betterWhen": "higher", "alpha": 0.05}
    assert document["analysis"]["declared"] is False
    secondary = [m for m in document["metrics"] if m["role"] == "secondary"]
    assert {m["metric"] for m in secondary} == {"inputTokens", "outputTokens", "toolCalls", "wallTimeMs", "chargedUsd"}
    family = [m for m in secondary if m["pValue"] is not None]
    expected = _holm([m["pValue"] for m in family])
    assert [m["pValueAdjusted"] for m in family] == pytest.approx(expected, abs=1e-15)
    assert any(m["pValueAdjusted"] > m["pValue"] for m in family)
    text = build_report(_ledger(tmp_path, [100, 120, 80, 150, 90, -110, 60, 70], name="b.json"), output_format="md")
    assert "Primary endpoint: correctness (higher is better; alpha 0.05; the default: the study file declares no " \
           "analysis section)" in text
    assert "The primary endpoint is not reported (the ledger is not adjudicated)" in text


def test_a_declared_primary_leads_and_is_not_adjusted(tmp_path: Path) -> None:
    analysis = {"primary": {"metric": "inputTokens", "betterWhen": "lower"}, "secondary": ["wallTimeMs"],
                "alpha": 0.1, "minimumTreatmentUse": 0.75}
    path = _ledger(tmp_path, [-100, -120, -80, -150, -90, -110], analysis=analysis)
    study = load_study(path, None)
    assert study.analysis is not None and study.analysis.minimum_treatment_use == 0.75
    document = _json(path)
    assert document["primary"] == {"metric": "inputTokens", "betterWhen": "lower", "alpha": 0.1}
    assert document["metrics"][0]["metric"] == "inputTokens" and document["metrics"][0]["role"] == "primary"
    assert document["metrics"][0]["pValueAdjusted"] == document["metrics"][0]["pValue"] == 2 / 64
    roles = {m["metric"]: m["role"] for m in document["metrics"]}
    assert roles["wallTimeMs"] == "secondary" and roles["toolCalls"] == "exploratory"
    wall = _metric(document, "wallTimeMs")
    assert wall["pValueAdjusted"] == wall["pValue"]  # a family of one
    assert _metric(document, "toolCalls")["pValueAdjusted"] is None
    text = build_report(path, output_format="text")
    assert "Primary endpoint: inputTokens (lower is better; alpha 0.1; declared in the study file)" in text
    assert "the treatment is better on the primary endpoint" in text
    assert "90 % interval" in text


def _ratio_p(treatment: list[float], baseline: list[float], rho: float) -> float:
    """Brute force: the sign-flip p of mean(t - rho b) = 0 over every sign vector."""
    z = np.asarray(treatment) - rho * np.asarray(baseline)
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=z.size)))
    sums, observed = flips @ z, z.sum()
    return float(min(1.0, 2 * min(np.mean(sums >= observed - 1e-6), np.mean(sums <= observed + 1e-6))))


def test_the_ratio_is_the_ratio_of_arm_means_over_tasks_with_an_inverted_interval(tmp_path: Path) -> None:
    observations = []
    plan = {"a": ([1000, 1400], [600, 700]), "b": ([5000], [4000, 4400]), "c": ([300, 300, 330], [150]),
            "d": ([2000], [1900]), "e": ([800, 900], [400, 500]), "f": ([12000], [9000])}
    for task, (baseline, treatment) in plan.items():
        for scenario, series in ((BASE, baseline), (TREAT, treatment)):
            observations += [cli_obs(task, scenario, rep, input_tokens=v) for rep, v in enumerate(series, 1)]
    path = tmp_path / "ledger.json"
    write(path, ledger(observations))
    ratio = _metric(_json(path), "inputTokens")["ratio"]
    b = [sum(v) / len(v) for v, _ in plan.values()]
    t = [sum(v) / len(v) for _, v in plan.values()]
    assert ratio["estimate"] == pytest.approx(sum(t) / sum(b), rel=1e-11)
    assert ratio["pValue"] == pytest.approx(_ratio_p(t, b, 1.0)) and ratio["leftOut"] == 0
    assert "ratio of arm means" in ratio["method"]
    for end in (ratio["ciLow"], ratio["ciHigh"]):  # the ends are accepted, just beyond them rejected
        assert _ratio_p(t, b, end) >= 0.05
    assert _ratio_p(t, b, ratio["ciLow"] * (1 - 1e-6)) < 0.05 and _ratio_p(t, b, ratio["ciHigh"] * (1 + 1e-6)) < 0.05
    text = build_report(path, output_format="text")
    assert f"{round((1 - sum(t) / sum(b)) * 100)} % fewer input tokens" in text


def test_a_task_whose_arm_mean_is_zero_stays_in_the_ratio(tmp_path: Path) -> None:
    observations = []
    plan = {"a": (120, 60), "b": (80, 0), "c": (100, 55), "d": (90, 40), "e": (110, 70), "f": (95, 30)}
    for task, (baseline, treatment) in plan.items():
        observations += [cli_obs(task, BASE, 1, tool_calls=baseline), cli_obs(task, TREAT, 1, tool_calls=treatment)]
    path = tmp_path / "ledger.json"
    write(path, ledger(observations))
    document = _json(path)
    # tool calls carry no ratio; input tokens do: task b's treatment arm spent 0 tokens
    observations = [dict(o) for o in observations]
    for o in observations:
        task = o["taskId"]
        o["inputTokens"] = plan[task][0] * 10 if o["scenario"] == BASE else plan[task][1] * 10
    path = tmp_path / "zero.json"
    write(path, ledger(observations))
    ratio = _metric(_json(path), "inputTokens")["ratio"]
    assert ratio["tasks"] == 6 and ratio["leftOut"] == 0
    assert ratio["estimate"] == pytest.approx(sum(t for _, t in plan.values()) / sum(b for b, _ in plan.values()))
    assert ratio["ciHigh"] < 1 and ratio["pValue"] == 2 / 64
    assert document["metrics"]


def test_a_failed_attempts_charge_counts_in_its_arm_beside_the_complete_case(tmp_path: Path) -> None:
    observations = []
    for index in range(6):
        observations.append(cli_obs(f"t{index}", BASE, 1, charged=0.05))
        observations.append(cli_obs(f"t{index}", TREAT, 1, charged=0.05))
    observations.append(cli_obs("t0", BASE, 2, charged=0.05))
    observations.append(cli_obs("t0", TREAT, 2, status="failed", charged=0.30))
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, status="blocked"))
    entry = _metric(json.loads(build_report(path, output_format="json", allow_unverified=True)), "chargedUsd")
    # intention to treat: task t0's treatment arm mean is (0.05 + 0.30) / 2, so the mean task difference is 0.125 / 6
    assert entry["estimate"] == pytest.approx(0.125 / 6, abs=1e-12)
    assert entry["completeCase"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    assert entry["completeCase"]["tasks"] == 6


def test_ratio_words_for_both_sides_and_a_crossing_interval() -> None:
    assert ratio_words(RatioSummary(6, 0.68, 0.56, 0.82, 0.03, None), "input tokens") == \
        "32 % fewer input tokens [18 %, 44 %] (×0.68)"
    assert ratio_words(RatioSummary(6, 1.3, 1.1, 1.5, 0.03, None), "wall time", fewer="less") == \
        "30 % more wall time [10 %, 50 %] (×1.3)"
    assert ratio_words(RatioSummary(6, 0.95, 0.8, 1.12, 0.4, None), "input tokens") == \
        "5 % fewer input tokens [20 % fewer, 12 % more] (×0.95)"


def test_clopper_pearson_matches_statsmodels() -> None:
    for correct, attempts in ((0, 5), (3, 10), (10, 10), (7, 18)):
        expected = proportion_confint(correct, attempts, alpha=0.05, method="beta")
        assert clopper_pearson(correct, attempts, 0.05) == pytest.approx(expected, abs=1e-12)


def test_correctness_with_failed_attempts_is_intention_to_treat_beside_complete_case(tmp_path: Path) -> None:
    observations = []
    outcomes_by_key: dict[tuple[str, str, int], str] = {}
    for task in ("t0", "t1", "t2", "t3", "t4", "t5"):
        for rep in (1, 2):
            observations.append(cli_obs(task, BASE, rep))
            outcomes_by_key[(task, BASE, rep)] = "incorrect" if task in ("t0", "t1", "t2") else "correct"
            failed = task in ("t0", "t1") and rep == 2
            observations.append(cli_obs(task, TREAT, rep, status="failed" if failed else "completed"))
            if not failed:
                outcomes_by_key[(task, TREAT, rep)] = "correct"
    path = tmp_path / "ledger.json"
    data = write(path, ledger(observations, status="blocked"))
    outcomes: dict[int, str | None] = {i: outcomes_by_key[(o["taskId"], o["scenario"], o["repetition"])]
                                       for i, o in enumerate(observations)
                                       if (o["taskId"], o["scenario"], o["repetition"]) in outcomes_by_key}
    adjudication = tmp_path / "ledger.json.adjudication.json"
    adjudication.write_text(json.dumps(companion(data, outcomes)))
    study = load_study(path, adjudication, allow_unverified=True)
    document = report_json(analyse(study))
    entry = _metric(document, "correctness")
    assert entry["role"] == "primary" and document["metrics"][0]["metric"] == "correctness"
    # intention to treat: the two failed treatment attempts count as not correct -> 10 / 12
    treat_rate = entry["rates"][TREAT]
    assert (treat_rate["correct"], treat_rate["attempts"]) == (10.0, 12)
    assert (treat_rate["ciLow"], treat_rate["ciHigh"]) == pytest.approx(
        proportion_confint(10, 12, alpha=0.05, method="beta"), abs=1e-12)
    assert (entry["rates"][BASE]["correct"], entry["rates"][BASE]["attempts"]) == (6.0, 12)
    # complete case: the failed attempts are dropped -> 10 / 10
    complete = entry["completeCase"]
    assert (complete["rates"][TREAT]["correct"], complete["rates"][TREAT]["attempts"]) == (10.0, 10)
    assert complete["rates"][TREAT]["ciHigh"] == 1.0
    # task differences ITT: t0, t1 -> 0.5, t2 -> 1, others 0; complete case: t0, t1, t2 -> 1
    assert entry["estimate"] == pytest.approx(2 / 6) and complete["estimate"] == pytest.approx(3 / 6)
    assert entry["pValue"] == 0.25 and complete["pValue"] == 0.25
    markdown = build_report(path, adjudication, output_format="md", allow_unverified=True)
    summary = {row["metric"]: row for row in markdown_tables(markdown)["Task-level paired differences per metric"]}
    assert summary["correctness (intention to treat)"]["role"] == "primary"
    assert summary["correctness (complete case)"]["role"] == "sensitivity"
    rates = [row for table, rows in markdown_tables(markdown).items() if table.startswith("Correctness per arm")
             for row in rows]
    assert {(r["arm"], r["view"], r["correct / attempts"]) for r in rates} == {
        ("Repository tools", "intention to treat", "6 / 12"),
        ("Repository tools + doc-bridge", "intention to treat", "10 / 12"),
        ("Repository tools", "complete case", "6 / 12"), ("Repository tools + doc-bridge", "complete case", "10 / 10")}
    assert "an attempt that did not complete counts as not correct" in markdown


def test_the_json_report_carries_every_key_of_the_contract(tmp_path: Path) -> None:
    observations = []
    outcomes_by_key: dict[tuple[str, str, int], str] = {}
    for index, task in enumerate(("t0", "t1", "t2")):
        for rep in (1, 2):
            observations.append(cli_obs(task, BASE, rep, input_tokens=1000 + rep, wall_ms=2000 + 5 * rep))
            observations.append(cli_obs(task, TREAT, rep, input_tokens=900 + 10 * index, wall_ms=1900 + rep))
            outcomes_by_key[(task, BASE, rep)] = "incorrect" if rep == 1 else "correct"
            outcomes_by_key[(task, TREAT, rep)] = "correct"
    path = tmp_path / "ledger.json"
    data = write(path, ledger(observations))
    outcomes: dict[int, str | None] = {i: outcomes_by_key[(o["taskId"], o["scenario"], o["repetition"])]
                                       for i, o in enumerate(observations)}
    adjudication = tmp_path / "ledger.json.adjudication.json"
    adjudication.write_text(json.dumps(companion(data, outcomes)))
    document = _json(path, adjudication)
    assert document["primary"] == {"metric": "correctness", "betterWhen": "higher", "alpha": 0.05}
    ratio_metrics = {"inputTokens", "outputTokens", "wallTimeMs", "chargedUsd", "repricedUsd"}
    for entry in document["metrics"]:
        assert {"metric", "estimate", "pValue", "ciLow", "ciHigh", "tasks", "repetitions", "role", "pValueAdjusted",
                "smallestAttainableP", "variance"} <= set(entry), entry["metric"]
        assert entry["role"] in ("primary", "secondary")
        assert set(entry["variance"]) >= {"betweenTask", "taskByArm", "withinTask"}
        assert set(entry["variance"]["withinTask"]) == {BASE, TREAT}
        if entry["metric"] in ratio_metrics:
            assert {"estimate", "ciLow", "ciHigh"} <= set(entry["ratio"]), entry["metric"]
            # 3 tasks cannot reject at 0.05: the ends are null, never a number standing for infinity
            assert entry["ratio"]["ciLow"] is None and entry["ratio"]["ciHigh"] is None
        else:
            assert "ratio" not in entry or entry["ratio"] is None
        assert entry["ciLow"] is None and entry["ciHigh"] is None  # unbounded at 3 tasks
        assert entry["smallestAttainableP"] is None or entry["smallestAttainableP"] >= 0.25
    correctness = _metric(document, "correctness")
    assert correctness["role"] == "primary" and correctness["pValueAdjusted"] == correctness["pValue"]
    assert set(correctness["rates"]) == {BASE, TREAT}
    assert all({"ciLow", "ciHigh"} <= set(rate) for rate in correctness["rates"].values())
    inputs = _metric(document, "inputTokens")
    assert inputs["variance"]["withinTask"][TREAT] == 0  # identical treatment repetitions give 0
    assert inputs["variance"]["withinTask"][BASE] > 0
