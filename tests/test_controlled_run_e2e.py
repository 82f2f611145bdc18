"""End to end on our example study: ``run`` → ``adjudicate`` → ``metrics`` with the reference provider.

Twelve tasks over the three example repositories (the population decision 11 allows), the
scripted provider and adjudicator of ``agentstudy.rehearsal``, no account and no network.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentstudy.rehearsal.controlled.example import build_controlled_example
from test_controlled_run_support import cli, run_args


def test_run_adjudicate_and_measure_the_example_study(tmp_path: Path) -> None:
    example = build_controlled_example(tmp_path / "study")
    ledger, adjudicated = tmp_path / "ledger.json", tmp_path / "adjudicated.json"

    dry = cli(*run_args(example, ledger, "--dry-run"))
    assert dry.exit_code == 0 and "Planned            12" in dry.stdout and not ledger.exists()

    ran = cli(*run_args(example, ledger, "--round", "rehearsal-round-1"))
    assert ran.exit_code == 0, ran.output
    assert "Executed           12" in ran.stdout and "completed 12" in ran.stdout

    # `agentstudy adjudicate` dispatches on the ledger's type to the controlled adjudicator.
    judged = cli("adjudicate", str(ledger), str(example.suite), "--adjudicator", str(example.providers),
                 "--output", str(adjudicated))
    assert judged.exit_code == 0, judged.output
    assert "automated 12" in judged.stdout

    for command, path in (("plan", example.plan), ("suite", example.suite), ("ledger", ledger),
                          ("ledger", adjudicated)):
        verified = cli(command, str(path))
        assert verified.exit_code == 0, verified.output
        assert "NOT VERIFIED" not in verified.stdout
    summary = json.loads(cli("ledger", str(adjudicated), "--json").stdout)["ledger"]
    assert summary["observations"] == 12 and summary["byAdjudication"] == {"automated": 12}
    actors = {item["adjudication"]["actor"] for item in json.loads(adjudicated.read_text())["observations"]}
    assert actors == {"rehearsal-adjudicator"}

    measured = cli("metrics", str(adjudicated), "--json")
    assert measured.exit_code == 0, measured.output
    report = json.loads(measured.stdout)["metrics"]
    assert report["observationCount"] == 12 and report["rounds"] == ["rehearsal-round-1"]
    assert report["source"]["verified"] is True
    by_scope: dict[str, dict[str, int]] = {}
    for group in report["groups"]:
        by_scope.setdefault(group["scope"], {})[group["key"]] = group["metrics"]["observationCount"]
    assert by_scope["model"] == {"low-cost-model": 6, "reference-model": 6}
    assert by_scope["scenario"] == {"repository-only": 4, "deterministic-doc-bridge": 4, "registry-assisted": 4}
    assert by_scope["aggregate"] == {"all": 12} and len(by_scope["task"]) == 12
    everything = next(group["metrics"] for group in report["groups"] if group["scope"] == "aggregate")
    assert everything["adjudicatedRate"] == 1 and everything["completedRate"] == 1
    assert everything["adjudicatedSuccessRate"] == 11 / 12
    assert everything["estimatedTokens"] > 0 and everything["providerTokens"] is None
    assert everything["agentCostUsd"] == 0  # priced at zero: a rehearsal spends nothing
    text = cli("metrics", str(adjudicated))
    assert "model      low-cost-model" in text.stdout and "scenario   repository-only" in text.stdout
