"""``agentstudy report --format json`` (issue 17 item 7): every number machine-readable, nulls with
reasons, exact USD, the same analysis as the text report."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.report.build import build_report
from test_report_builders import ANSWER_MARKER, cli_obs, full_study, ledger, write
from test_report_cli import ORIGINAL_LEDGER

METRICS = ["inputTokens", "outputTokens", "toolCalls", "wallTimeMs", "chargedUsd"]


def _json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["report", *args, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert ANSWER_MARKER not in result.stdout
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_a_full_study_as_json_carries_design_estimates_and_exact_usd(tmp_path: Path) -> None:
    # charges whose float sums are noisy: 0.0345927 + 0.0000001 ... must come out digit for digit.
    rows = [(5000, 4000 + 10 * k, 5, 3, 0.0345927, float(Decimal("0.0345927") - Decimal("0.0000011") * (k + 1)))
            for k in range(18)]
    path = tmp_path / "ledger.json"
    write(path, ledger(full_study(rows), rehearsal=False))
    document = _json(str(path))
    assert document["type"] == "minimal-study-report" and document["rehearsal"] is False
    assert document["verified"] is True and document["exploratory"] is True
    assert document["design"] == {"tasks": 6, "repetitions": 3, "label": "6 tasks × 3 repetitions", "attempts": 36,
                                  "plannedAttempts": 36, "mode": "full", "transport": "cli",
                                  "model": "claude-haiku-5-5"}
    metrics = {m["metric"]: m for m in document["metrics"]}
    assert list(metrics) == METRICS
    for entry in metrics.values():
        assert {"tasks", "repetitions", "estimate", "ciLow", "ciHigh", "pValue", "method"} <= set(entry)
        assert (entry["tasks"], entry["repetitions"]) == (6, 3)
    # every task's input-token and USD differences are negative: p = 2/64 exactly
    assert metrics["inputTokens"]["pValue"] == 0.03125 and metrics["chargedUsd"]["pValue"] == 0.03125
    assert metrics["toolCalls"]["estimate"] == -2.0
    # USD: the mean of task differences -0.0000011 * (mean of k + 1 per task), printed without float noise
    expected = [-(Decimal("0.0000011") * (3 * t + 2)) for t in range(6)]
    assert [Decimal(repr(e["difference"])) for e in metrics["chargedUsd"]["taskEffects"]] == expected
    assert Decimal(repr(metrics["chargedUsd"]["estimate"])) == sum(expected) / 6
    assert not re.search(r"\d\.\d*0000000\d|\d\.\d*9999999\d", json.dumps(metrics["chargedUsd"]))
    spent = Decimal(repr(document["spend"]["spentUsd"]))
    assert spent == sum((Decimal(repr(r[4])) + Decimal(repr(r[5])) for r in rows), Decimal(0))
    variance = {v["metric"]: v for v in document["varianceComponents"]}
    assert set(variance) == set(METRICS)
    assert variance["inputTokens"]["method"] is not None and variance["inputTokens"]["betweenTask"] is not None
    power = {p["metric"]: p for p in document["powerPlans"]}
    assert set(power) == set(METRICS) and "powerReason" not in document
    assert (power["inputTokens"]["tasks"], power["inputTokens"]["repetitions"]) == (6, 3)
    # no adjudication: the default primary (correctness) is absent and every metric is one of the secondaries,
    # each planned at Holm's strictest level alpha / m
    secondaries = sum(1 for m in metrics.values() if m["role"] == "secondary")
    assert secondaries == len(METRICS)
    assert all(p["alpha"] == 0.05 / secondaries and p["power"] == 0.8 and p["simulations"] == 1200
               for p in power.values())
    assert [c["arm"] for c in document["containment"]] == ["repository-only", "doc-bridge-mcp"]
    assert len(document["attempts"]) == 36


def test_the_json_holds_every_table_of_the_text_report(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    write(path, ledger(full_study()))
    document = _json(str(path))
    text = build_report(path, output_format="text")
    for table in document["tables"].values():
        assert table["caption"] in text
        for row in table["rows"]:
            assert all(cell in text for cell in row)
    assert {"task-level-summary", "per-task", "variance-components", "attempts", "containment"} <= set(
        document["tables"])


def test_not_computable_values_are_null_with_a_reason(tmp_path: Path) -> None:
    observations = [cli_obs("a", "repository-only", 1, input_tokens=2000),
                    cli_obs("a", "doc-bridge-mcp", 1, input_tokens=3078)]
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, mode="pilot", planned=2))
    document = _json(str(path), "--allow-unverified")
    entry = next(m for m in document["metrics"] if m["metric"] == "inputTokens")
    assert (entry["tasks"], entry["repetitions"], entry["estimate"]) == (1, 1, 1078.0)
    assert entry["ciLow"] is None and entry["ciHigh"] is None and entry["pValue"] is None
    assert entry["reason"] == "not computable with 1 task (needs at least 2)"
    variance = next(v for v in document["varianceComponents"] if v["metric"] == "inputTokens")
    assert variance["betweenTask"] is None and "at least 2 tasks" in variance["reason"]
    assert entry["variance"] == {k: v for k, v in variance.items() if k != "metric"}
    assert entry["variance"]["withinTask"] == {"repository-only": None, "doc-bridge-mcp": None}


def test_a_controlled_ledger_as_json_is_its_metrics_report() -> None:
    result = CliRunner().invoke(main, ["report", str(ORIGINAL_LEDGER), "--allow-unverified", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(document) == {"metrics"} and isinstance(document["metrics"], dict)
