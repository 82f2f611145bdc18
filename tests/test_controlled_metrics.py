"""The metrics calculator and ``agentstudy metrics``: rates, intervals, P95, missing data, comparisons, exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agentstudy.controlled.metrics import metric_set, percentile95, wilson95
from agentstudy.controlled.metrics_report import calculate_study_metrics
from agentstudy.protocol.controlled.hashing import content_hash_of
from agentstudy.protocol.controlled.ledger import create_observation, empty_ledger, ledger_file_text, upsert_observation
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1
from test_controlled_run_support import artifact, cli

BASE: dict[str, Any] = {
    "type": "controlled-study-observation", "schemaVersion": 1, "observationVersion": "v1",
    "observedAt": "2026-10-01T00:00:00.000Z", "runId": "metrics-run-01", "planHash": "a" * 64,
    "task": {"taskId": "task-a", "repositoryId": "repo-a", "category": "discovery", "scenarioId": "repository-only",
             "modelId": "low-cost-model", "replicate": 0, "variantId": "variant-a", "difficulty": "easy"},
    "model": {"id": "low-cost-model", "role": "low-cost", "provider": "rehearsal", "model": "scripted-small",
              "version": "v1", "parametersHash": "b" * 64, "contextLimit": 1000, "toolConfigurationHash": "c" * 64,
              "promptContractHash": "d" * 64},
    "scenario": {"id": "repository-only", "network": False},
    "execution": {"status": "completed", "exitCode": 0, "signal": None, "durationMs": 100, "responseBytes": 10,
                  "stderrBytes": 0},
    "contextBytes": 400, "evidenceIds": [], "adjudication": {"status": "pending"},
}


def observation(replicate: int, *, round_id: str | None = None, run_id: str = "metrics-run-01",
                **fields: Any) -> ControlledStudyObservationV1:
    """An observation of ``task-a`` replicate ``replicate`` with ``fields`` merged in (``execution`` merged too)."""
    payload = copy.deepcopy(BASE)
    payload["task"]["replicate"] = replicate
    payload["runId"] = run_id
    if round_id is not None:
        payload["round"] = round_id
    payload["execution"].update(fields.pop("execution", {}))
    payload.update(fields)
    return create_observation(payload).model


def test_wilson_interval_matches_the_published_values() -> None:
    assert wilson95(0, 0) == {"low": 0, "high": 0}
    half = wilson95(5, 10)
    assert (round(half["low"], 4), round(half["high"], 4)) == (0.2366, 0.7634)
    none = wilson95(0, 10)
    assert none["low"] == 0 and round(none["high"], 4) == 0.2775
    every = wilson95(10, 10)
    assert round(every["low"], 4) == 0.7225 and every["high"] == 1


def test_p95_is_the_nearest_rank() -> None:
    assert percentile95([]) == 0
    assert percentile95([7]) == 7
    assert percentile95(list(range(1, 21))) == 19
    assert percentile95([5, 1, 100, 2]) == 100


def test_missing_stays_missing_and_partial_is_named() -> None:
    with_tokens = observation(0, execution={"inputTokens": 10, "outputTokens": 5, "tokenMethod": "provider",
                                            "toolCalls": 3}, measurements={"agentCostUsd": 0.1,
                                                                           "providerTokenCostUnits": 15})
    without = observation(1, measurements={"agentCostUsd": 0.2})
    metrics = metric_set([with_tokens, without])
    assert metrics["providerTokens"] == 15 and "providerTokens-partial" in metrics["missingMetrics"]
    assert metrics["estimatedTokens"] is None and "estimatedTokens" in metrics["missingMetrics"]
    assert metrics["averageToolCalls"] == 3 and "toolCalls-partial" in metrics["missingMetrics"]
    assert metrics["agentCostUsd"] == 0.3  # exact: 0.1 + 0.2 is 0.3, not 0.30000000000000004
    assert metrics["analysisCostUsd"] is None and metrics["totalCostUsd"] is None
    assert metrics["successRate"] is None and metrics["successConfidence95"] is None
    assert {"taskOutcome", "evidenceQuality", "safetyOutcome", "searchHitRate"} <= set(metrics["missingMetrics"])
    assert metrics["contextBytesP95"] == 400 and metrics["completedRate"] == 1


def test_correct_answer_figures_use_adjudicated_success_only() -> None:
    claimed = observation(0, taskOutcome="success", execution={"durationMs": 900})
    approved = observation(1, taskOutcome="partial", execution={"durationMs": 300, "inputTokens": 40,
                                                                "outputTokens": 2, "tokenMethod": "estimate"},
                           adjudication={"status": "automated", "actor": "judge", "method": "m", "outcome": "success"})
    metrics = metric_set([claimed, approved])
    assert metrics["successRate"] == 0.5  # self-reported
    assert metrics["adjudicatedSuccessRate"] == 1
    assert metrics["timeToCorrectAnswerP95Ms"] == 300 and metrics["tokensToCorrectAnswerP95"] == 42


def two_rounds(baseline_outcome: str, current_outcome: str, current_tokens: int = 100) -> list[Any]:
    def judged(replicate: int, round_id: str, outcome: str, tokens: int) -> ControlledStudyObservationV1:
        return observation(replicate, round_id=round_id, taskOutcome=outcome,
                           execution={"inputTokens": tokens, "outputTokens": 0, "tokenMethod": "provider"})
    return [judged(0, "baseline", baseline_outcome, 100), judged(1, "baseline", baseline_outcome, 100),
            judged(2, "round-2", current_outcome, current_tokens), judged(3, "round-2", current_outcome,
                                                                          current_tokens)]


def aggregate(report: dict[str, Any]) -> dict[str, Any]:
    return next(item for item in report["comparisons"] if item["scope"] == "aggregate")


@pytest.mark.parametrize(("baseline", "current", "tokens", "status", "regressions"), [
    ("success", "incomplete", 100, "regressed", ["successRate"]),
    ("success", "success", 106, "regressed", ["providerTokens"]),
    ("incomplete", "success", 100, "improved", []),
    ("success", "success", 90, "improved", []),
    ("success", "success", 104, "unchanged", []),
])
def test_round_comparisons(baseline: str, current: str, tokens: int, status: str, regressions: list[str]) -> None:
    report = calculate_study_metrics(two_rounds(baseline, current, tokens))
    assert (report["baselineRound"], report["currentRound"]) == ("baseline", "round-2")
    comparison = aggregate(report)
    assert (comparison["status"], comparison["regressions"]) == (status, regressions)


def test_small_samples_are_inconclusive_and_one_sided_groups_not_analyzed() -> None:
    items = two_rounds("success", "incomplete")[1:]
    report = calculate_study_metrics(items)
    assert aggregate(report)["status"] == "inconclusive" and aggregate(report)["regressions"] == []
    single = calculate_study_metrics([observation(0, round_id="only"), observation(1, round_id="only")])
    assert single["currentRound"] is None and single["comparisons"] == []
    moved = two_rounds("success", "success")
    moved[2] = observation(2, round_id="round-2", task={**BASE["task"], "taskId": "task-b", "replicate": 2})
    statuses = {item["key"]: item["status"] for item in calculate_study_metrics(moved)["comparisons"]
                if item["scope"] == "task"}
    assert statuses == {"task-a": "inconclusive", "task-b": "not-analyzed"}


def test_run_id_selection_within_the_compared_rounds() -> None:
    items = [*two_rounds("success", "incomplete"),
             observation(4, round_id="round-2", run_id="metrics-run-02", taskOutcome="success"),
             observation(5, round_id="round-2", run_id="metrics-run-02", taskOutcome="success")]
    report = calculate_study_metrics(items, current_run_id="metrics-run-02")
    assert report["observationCount"] == 4 and report["runIds"] == ["metrics-run-01", "metrics-run-02"]
    assert report["currentRunId"] == "metrics-run-02" and aggregate(report)["status"] == "unchanged"


def test_the_report_is_deterministic_and_content_hashed() -> None:
    items = two_rounds("success", "incomplete")
    report = calculate_study_metrics(items)
    assert report == calculate_study_metrics(items)
    assert content_hash_of(report) == report["contentHash"] and report["contentHashAlgo"] == "sha256-normalized-v1"
    scopes = {group["scope"] for group in report["groups"]}
    assert scopes == {"task", "repository", "category", "difficulty", "model", "scenario", "replicate", "aggregate"}


def write_ledger(path: Path, items: list[ControlledStudyObservationV1]) -> Path:
    ledger = empty_ledger()
    for item in items:
        ledger = upsert_observation(ledger, create_observation(item.to_document()))
    path.write_text(ledger_file_text(ledger), encoding="utf-8")
    return path


def test_metrics_command_exits_1_on_a_regression_unless_allowed(tmp_path: Path) -> None:
    ledger = write_ledger(tmp_path / "ledger.json", two_rounds("success", "incomplete"))
    result = cli("metrics", str(ledger), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)["metrics"]
    assert json.loads(result.stdout)["ok"] is False and aggregate(report)["status"] == "regressed"
    assert "comparison(s) regressed" in result.stderr
    allowed = cli("metrics", str(ledger), "--allow-regressions")
    assert allowed.exit_code == 0 and "aggregate" in allowed.stdout and "Regressed" in allowed.stdout
    fine = write_ledger(tmp_path / "fine.json", two_rounds("success", "success"))
    assert cli("metrics", str(fine)).exit_code == 0


def test_metrics_refuses_an_unverified_ledger_without_the_flag(tmp_path: Path) -> None:
    ledger = write_ledger(tmp_path / "ledger.json", two_rounds("success", "success"))
    ledger.write_text(ledger.read_text().replace('"durationMs": 100', '"durationMs": 101', 1))
    refused = cli("metrics", str(ledger))
    assert refused.exit_code == 2 and "content hash" in refused.stderr
    assert cli("metrics", str(ledger), "--allow-unverified").exit_code == 0


def test_original_ledger_report_agrees_with_the_ledger_command() -> None:
    path = artifact("observation-ledger-v1.json")
    result = cli("metrics", str(path), "--allow-unverified", "--json", "--allow-regressions")
    assert result.exit_code == 0, result.stderr
    assert "unverified" in result.stderr and "observation 237" in result.stderr and "observation 283" in result.stderr
    report = json.loads(result.stdout)["metrics"]
    assert report["observationCount"] == 448 and len(report["runIds"]) == 11
    assert report["source"]["verified"] is False and report["source"]["unverifiedObservations"] == [237, 283]
    ledger = json.loads(cli("ledger", str(path), "--allow-unverified", "--json").stdout)["ledger"]
    assert report["byStatus"] == ledger["byStatus"] and report["byAdjudication"] == ledger["byAdjudication"]
    assert report["byRound"] == ledger["byRound"]
    assert sorted(report["runIds"]) == sorted(run["runId"] for run in ledger["runs"])
    everything = next(group for group in report["groups"] if group["scope"] == "aggregate")
    assert everything["metrics"]["observationCount"] == ledger["byRound"][everything["round"]]
    assert sum(group["metrics"]["observationCount"] for group in report["groups"]
               if group["scope"] == "aggregate") == 448
    assert content_hash_of(report) == report["contentHash"]
    text = cli("metrics", str(path), "--allow-unverified")
    assert text.exit_code == 1  # the original's own rounds compare with regressions
    assert "448 observations, 11 run ids, 8 rounds" in text.stdout
    assert "NOT VERIFIED (observations 237, 283)" in text.stdout
