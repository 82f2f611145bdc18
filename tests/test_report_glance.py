"""The "Result at a glance" section (issue 17, item 4) on hand-built ledgers with known answers."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from agentstudy.report.analysis import CHARGED, CORRECTNESS, INPUT, TOOLS, WALL
from agentstudy.report.build import build_report
from agentstudy.report.glance import direction
from agentstudy.report.inference import TaskLevelSummary
from test_report_builders import TASKS, cli_obs, companion, full_study, ledger, markdown_tables, write

CAPTION = "Repository tools + doc-bridge compared with Repository tools, task level (exploratory)"


def _summary(estimate: float | None) -> TaskLevelSummary:
    return TaskLevelSummary(6, 3, "6 tasks × 3 repetitions", estimate, None, None, None, None, None, None, "m", ())


def test_the_direction_is_said_in_words_with_the_treatment_arm() -> None:
    assert direction(_summary(1250.0), INPUT) == "1,250 more input tokens per task with doc-bridge-mcp"
    assert direction(_summary(-2.5), TOOLS) == "2.5 fewer tool calls per task with doc-bridge-mcp"
    assert direction(_summary(-312.0), WALL) == "312 ms less wall time per task with doc-bridge-mcp"
    assert direction(_summary(0.00125), CHARGED) == "0.001250 USD more charged per task with doc-bridge-mcp"
    assert direction(_summary(-0.25), CORRECTNESS) == "0.250 lower correctness score per task with doc-bridge-mcp"
    assert direction(_summary(0.0), TOOLS) == "no difference in tool calls (rounded)"
    assert direction(_summary(None), TOOLS).startswith("not computable")


def _headings(text: str) -> list[str]:
    lines = text.splitlines()
    return [line for line, under in itertools.pairwise(lines)
            if under and set(under) == {"-"} and len(under) == len(line)]


def test_the_glance_comes_first_with_correctness_first_and_provenance_last(tmp_path: Path) -> None:
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    (tmp_path / "companion.json").write_text(json.dumps(companion(data, {
        i: "correct" if json.loads(data)["observations"][i]["scenario"] == "doc-bridge-mcp" else "partial"
        for i in range(36)})))
    text = build_report(tmp_path / "ledger.json", tmp_path / "companion.json")
    headings = _headings(text)
    assert headings[0] == "Result at a glance" and headings[-1] == "Appendix: provenance"
    glance = text[:text.index("About this report")]
    assert "ledger SHA-256" not in glance and "ledger SHA-256" in text[text.index("Appendix: provenance"):]
    rows = markdown_tables(build_report(tmp_path / "ledger.json", tmp_path / "companion.json", output_format="md"))
    table = rows[CAPTION]
    assert [r["metric"] for r in table] == ["correctness", "input tokens", "tool calls", "wall time", "charged USD"]
    by_metric = {r["metric"]: r for r in table}
    # Every task: D uses 100 fewer input tokens, 2 fewer tool calls, 500 ms less; D correct (1), R partial (0.5).
    assert by_metric["input tokens"]["in words"] == "100 fewer input tokens per task with Repository tools + doc-bridge"
    assert by_metric["tool calls"]["in words"] == "2 fewer tool calls per task with Repository tools + doc-bridge"
    assert by_metric["wall time"]["in words"] == "500 ms less wall time per task with Repository tools + doc-bridge"
    assert by_metric["correctness"]["in words"] == \
        "0.500 higher correctness score per task with Repository tools + doc-bridge"
    assert by_metric["correctness"]["better when"] == "higher" and by_metric["input tokens"]["better when"] == "lower"
    for row in table:
        assert row["design"] == "6 tasks × 3 repetitions"
        assert row["p (test of the mean)"].startswith("0.031")  # 2 / 2^6: every task difference has one sign
    # correctness is the default primary (its p alone); the four secondaries carry Holm's p beside (issue 41)
    assert by_metric["correctness"]["p (test of the mean)"] == "0.031"
    assert by_metric["tool calls"]["p (test of the mean)"] == "0.031; Holm-adjusted 0.156"
    assert "Containment achieved:" in glance and "Caveats: only the primary endpoint answers" in glance
    assert "Real run (full, awaiting-adjudication, 36 attempts, transport cli)" in glance


@pytest.mark.parametrize("output_format", ["text", "md", "html"])
def test_a_blocked_pilot_says_why_and_what_is_not_computable(tmp_path: Path, output_format: str) -> None:
    observations = [cli_obs(TASKS[0], "repository-only", 1), cli_obs(TASKS[0], "doc-bridge-mcp", 1,
                                                                     status="invalid-setup", charged=0.0)]
    write(tmp_path / "ledger.json", ledger(observations, mode="pilot", status="blocked",
                                           stopReason="attempt 2 ended invalid-setup"))
    report = build_report(tmp_path / "ledger.json", output_format=output_format)
    glance = " ".join(report[:report.index("About this report")].split()).replace("\\", "")
    assert "Result at a glance" in glance
    assert "The run ended blocked: attempt 2 ended invalid-setup." in glance
    assert "not computable: no task has values in both arms" in glance
    assert "(pilot, blocked, 2 attempts, transport cli)" in glance


def test_a_secondary_metrics_raw_p_never_stands_alone_and_a_pilot_is_not_a_finding(tmp_path: Path) -> None:
    observations = []
    for t, task in enumerate(TASKS):
        observations += [cli_obs(task, "repository-only", 1, input_tokens=1000, wall_ms=1000),
                         cli_obs(task, "doc-bridge-mcp", 1, input_tokens=900 - t, wall_ms=900 + t)]
    write(tmp_path / "ledger.json", ledger(observations, mode="pilot", analysis={
        "primary": {"metric": "inputTokens", "betterWhen": "lower"}, "secondary": ["wallTimeMs", "toolCalls"]}))
    report = build_report(tmp_path / "ledger.json", output_format="md")
    glance = report[:report.index("About this report")]
    verdict = next(line for line in glance.splitlines() if "Does doc-bridge help?" in line)
    assert verdict.startswith("A pilot, not a finding.")
    assert "0.031; Holm-adjusted 0.062" in glance  # wall time: raw 2/64, Holm over the two secondaries
    assert "| 0.031 |" in glance  # the primary's p alone: it is tested at alpha


def test_the_declared_primarys_direction_is_shown_where_it_differs_from_the_metrics_default(tmp_path: Path) -> None:
    # a study that wants the agent to read more (input tokens: higher is better), against the metric's default
    observations = []
    for t, task in enumerate(TASKS):
        observations += [cli_obs(task, "repository-only", 1, input_tokens=1000, tool_calls=4),
                         cli_obs(task, "doc-bridge-mcp", 1, input_tokens=1100 + t, tool_calls=2)]
    write(tmp_path / "ledger.json", ledger(observations, analysis={
        "primary": {"metric": "inputTokens", "betterWhen": "higher"}}))
    by_metric = {r["metric"]: r for r in markdown_tables(build_report(tmp_path / "ledger.json",
                                                                      output_format="md"))[CAPTION]}
    assert by_metric["input tokens"]["better when"] == "higher"  # the declared direction
    assert by_metric["tool calls"]["better when"] == "lower"  # not the primary: the metric's default
    text = " ".join(build_report(tmp_path / "ledger.json").split())
    assert "Primary endpoint: inputTokens (higher is better;" in text
    assert "the treatment is better on the primary endpoint" in text  # more input tokens, as declared
    from agentstudy.report.plots import direction_label

    # the forest plot's axis says which side favours which arm by the same declared direction
    assert direction_label(INPUT) == "← favours doc-bridge-mcp · favours repository-only →"
    assert direction_label(INPUT, None, "higher") == "← favours repository-only · favours doc-bridge-mcp →"
