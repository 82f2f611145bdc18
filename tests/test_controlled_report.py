"""``agentstudy report`` on controlled-study ledgers (issue 17 item 6): a document in Markdown and HTML.

Real rehearsal runs of the example study (balanced: each task in one scenario; pairwise: each
task in both) and a constructed two-round ledger: the tables, one ``<svg>`` per plot, the
columns explained, the warning for different tasks, and the task-level paired analysis checked
against the ledger's own numbers.
"""

from __future__ import annotations

import html
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from agentstudy.rehearsal.controlled.example import build_controlled_example
from test_controlled_metrics import two_rounds, write_ledger
from test_controlled_run_support import cli, run_args

WARNING = "WARNING: the scenarios ran different tasks"
EXPLANATION = "missing: how many of the group's metrics no observation reported"


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    made: dict[str, Path] = {}
    for name, pairwise in (("balanced", False), ("pairwise", True)):
        root = tmp_path_factory.mktemp(name)
        example = build_controlled_example(root / "study", pairwise=pairwise)
        ledger, adjudicated = root / "ledger.json", root / "adjudicated.json"
        assert cli(*run_args(example, ledger, "--round", "round-1")).exit_code == 0
        judged = cli("adjudicate", str(ledger), str(example.suite), "--adjudicator", str(example.providers),
                     "--output", str(adjudicated))
        assert judged.exit_code == 0, judged.output
        made[name] = adjudicated
    return made


def _report(ledger: Path, output_format: str) -> str:
    result = cli("report", str(ledger), "--format", output_format)
    assert result.exit_code == 0, result.output
    return result.stdout


def _figures(page: str) -> list[str]:
    return re.findall(r'<figure id="([^"]+)"><svg', page)


def test_balanced_selection_is_warned_about_everywhere_and_has_no_paired_analysis(ledgers: dict[str, Path]) -> None:
    page = _report(ledgers["balanced"], "html")
    assert page.startswith("<!DOCTYPE html>") and "<pre>" not in page and "<script" not in page
    for table in ("about", "coverage", "groups", "missing"):
        assert f'<table id="{table}">' in page
    assert _figures(page) == ["plot-rates", "plot-tokens"] and page.count("<svg") == 2
    assert page.count(WARNING) == 3, "in the summary, beside the scenario rows and beside the round comparisons"
    assert html.escape(EXPLANATION) in page and "Wilson 95 % interval" in page
    assert "No task ran in two scenarios under one model" in page
    markdown = _report(ledgers["balanced"], "md")
    assert markdown.startswith("# Controlled-study metrics") and "<svg" not in markdown
    assert WARNING in markdown and EXPLANATION in markdown
    assert "| scope | key | round | obs | completed \\[95 % CI\\]" in markdown
    assert "**Metrics not reported**" in markdown


def _tokens(observation: dict[str, Any]) -> int:
    return int(observation["execution"]["inputTokens"] + observation["execution"]["outputTokens"])


def test_pairwise_selection_gets_the_task_level_paired_analysis(ledgers: dict[str, Path]) -> None:
    markdown = _report(ledgers["pairwise"], "md")
    assert WARNING not in markdown and "Every scenario ran the same tasks" in markdown
    observations = json.loads(ledgers["pairwise"].read_text(encoding="utf-8"))["observations"]
    model = "low-cost-model"
    by_task: dict[str, dict[str, int]] = {}
    for item in observations:
        if item["model"]["id"] == model:
            by_task.setdefault(item["task"]["taskId"], {})[item["scenario"]["id"]] = _tokens(item)
    differences = [arms["deterministic-doc-bridge"] - arms["repository-only"] for arms in by_task.values()]
    assert len(differences) == 6
    row = next(line for line in markdown.splitlines()
               if line.startswith(f"| {model} | deterministic-doc-bridge − repository-only | tokens"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[3] == "6 tasks × 1 repetition"
    assert cells[4] == f"{statistics.fmean(differences):+.1f}".replace("+0.0", "0.0")
    if all(d > 0 for d in differences) or all(d < 0 for d in differences):
        assert cells[6] == "0.031", "one sign over 6 tasks: p = 2/64 exactly"
    page = _report(ledgers["pairwise"], "html")
    assert '<table id="paired">' in page and _figures(page) == ["plot-rates", "plot-tokens"]


def test_two_rounds_get_the_comparison_table_and_plot(tmp_path: Path) -> None:
    ledger = write_ledger(tmp_path / "ledger.json", two_rounds("success", "incomplete"))
    page = _report(ledger, "html")
    assert _figures(page) == ["plot-rates", "plot-tokens", "plot-rounds"] and page.count("<svg") == 3
    assert '<table id="comparisons">' in page and "regressed" in page and "successRate" in page
    markdown = _report(ledger, "md")
    assert "Round baseline (baseline) against round-2" in markdown
    assert re.search(r"\| aggregate \| all \| 2 \| 2 \| regressed \| successRate \|", markdown)
