"""A report of a study with several agents (issue 21 item 6): pairs within an agent, each agent's paired
result side by side, agents never pooled."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.report.agents import agent_analyses
from agentstudy.report.analysis import analyse
from agentstudy.report.build import build_report
from agentstudy.report.load import load_study
from agentstudy.report.model import ReportInputError
from test_report_builders import ANSWER_MARKER, TASKS, cli_obs, ledger, markdown_tables, write

AGENTS = ("claude-code", "codex")
SIDE = ("repository-only compared with doc-bridge-mcp", "doc-bridge-mcp compared with repository-only")


def two_agent_observations(tasks: int = 3, reps: int = 2) -> list[dict[str, Any]]:
    """The crossed schedule: per task and repetition both agents, each in the counterbalanced arm order.
    Claude Code's treatment uses 100 more input tokens than its control, Codex's 300 fewer: a pooled
    pair or a pooled mean would be neither."""
    observations = []
    for t, task in enumerate(TASKS[:tasks]):
        for r in range(reps):
            for agent, delta in (("claude-code", 100), ("codex", -300)):
                base = 2000 + 10 * t + r
                extra: dict[str, Any] = {} if agent == "claude-code" else {"agent": "codex"}
                pair = [cli_obs(task, "repository-only", r + 1, input_tokens=base, **extra),
                        cli_obs(task, "doc-bridge-mcp", r + 1, input_tokens=base + delta, **extra)]
                observations.extend(pair if (t + r) % 2 == 0 else pair[::-1])
    return observations


@pytest.fixture
def two_agent_ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.json"
    write(path, ledger(two_agent_observations()))
    return path


def test_pairs_are_formed_within_an_agent(two_agent_ledger: Path) -> None:
    study = load_study(two_agent_ledger)
    assert study.agents == AGENTS
    analyses = agent_analyses(study)
    assert list(analyses) == list(AGENTS)
    for agent, analysis in analyses.items():
        assert len(analysis.pairs) == 3 * 2
        for pair in analysis.pairs:
            assert pair.agent == agent
            assert pair.baseline is not None and pair.treatment is not None
            assert pair.baseline.agent == pair.treatment.agent == agent
            assert pair.differences["inputTokens"] == (100 if agent == "claude-code" else -300)
        inputs = next(r for r in analysis.results if r.metric.key == "inputTokens")
        assert inputs.task_level.estimate == (100 if agent == "claude-code" else -300)
        assert inputs.task_level.tasks == 3


def test_the_pooled_analysis_is_refused(two_agent_ledger: Path) -> None:
    with pytest.raises(ReportInputError, match=r"2 agents \(claude-code, codex\); each agent is analysed alone"):
        analyse(load_study(two_agent_ledger))


def test_markdown_report_shows_two_paired_results_side_by_side(two_agent_ledger: Path) -> None:
    text = build_report(two_agent_ledger, output_format="md")
    assert text.startswith("# Paired report by agent")
    tables = markdown_tables(text)
    caption = next(c for c in tables if c.startswith("Repository tools + doc-bridge compared with Repository tools, "
                                                      "task level, each agent alone"))
    rows = {row["metric"]: row for row in tables[caption]}
    inputs = rows["input tokens"]
    # 3 tasks: the sign-flip test cannot reject anything at 0.05, so the interval is unbounded ("—")
    assert inputs["claude-code: Δ per task [95 % interval]"] == "+100.0 —"
    assert inputs["codex: Δ per task [95 % interval]"] == "-300.0 —"
    assert inputs["claude-code: in words"] == "100 more input tokens per task with Repository tools + doc-bridge"
    assert inputs["codex: in words"] == "300 fewer input tokens per task with Repository tools + doc-bridge"
    assert "3 tasks × 2 repetitions" in inputs["codex: p (test of the mean); design"]
    assert "No number in this report pools agents, and there is no overall line" in text
    # Each agent's one-agent report follows, every section and table labelled with the agent.
    for agent in AGENTS:
        assert f"## Agent {agent}: Result at a glance" in text
        assert f"## Agent {agent}: Paired differences" in text
        glance = next(c for c in tables if c.startswith(f"{agent}: Repository tools + doc-bridge compared with"))
        assert {row["metric"] for row in tables[glance]} >= {"input tokens", "tool calls"}
    assert text.count("## Appendix: provenance") == 1
    assert "claude-code (12 attempts); codex (12 attempts)" in text
    assert "-100.0" not in text and "+200" not in text  # neither the pooled mean nor a cross-agent pair
    assert ANSWER_MARKER not in text


def test_html_report_has_the_side_by_side_table_and_unique_ids(two_agent_ledger: Path) -> None:
    page = build_report(two_agent_ledger, output_format="html")
    assert '<table id="agents">' in page
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    for agent in AGENTS:
        assert f'id="{agent}-glance"' in page and f'id="{agent}-pairs"' in page
        assert f'id="{agent}-plot-differences"' in page
    assert "<script" not in page


def test_json_report_is_one_view_per_agent(two_agent_ledger: Path) -> None:
    data = json.loads(build_report(two_agent_ledger, output_format="json"))
    assert data["type"] == "minimal-study-report-by-agent" and list(data["agents"]) == list(AGENTS)
    for agent, delta in (("claude-code", 100), ("codex", -300)):
        metrics = {m["metric"]: m for m in data["agents"][agent]["metrics"]}
        assert metrics["inputTokens"]["estimate"] == delta


def test_a_one_agent_ledger_reports_as_before(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    one = [o for o in two_agent_observations() if "agent" not in o]
    write(path, ledger(one))
    text = build_report(path, output_format="md")
    assert text.startswith("# Paired report: doc-bridge on repo-one")
    assert "by agent" not in text and "Agent claude-code" not in text
    only_codex = tmp_path / "codex.json"
    write(only_codex, ledger([o for o in two_agent_observations() if "agent" in o]))
    assert build_report(only_codex, output_format="md").startswith("# Paired report: doc-bridge on repo-one")


def test_the_same_agent_twice_on_one_task_arm_repetition_still_does_not_verify(tmp_path: Path) -> None:
    observations = two_agent_observations(tasks=1, reps=1)
    observations.append(cli_obs(TASKS[0], "doc-bridge-mcp", 1, agent="codex"))
    path = tmp_path / "ledger.json"
    verification = verify_ledger_bytes(write(path, ledger(observations)))
    assert not verification.verified
    assert "a second observation of t1-discovery doc-bridge-mcp repetition 1 of codex" in verification.first()
    with pytest.raises(ReportInputError,  # the one verifier speaks first (every reader shares it)
                       match="a second observation of t1-discovery doc-bridge-mcp repetition 1 of codex"):
        load_study(path)


def test_power_planning_refuses_a_two_agent_ledger_in_one_line(two_agent_ledger: Path) -> None:
    from click.testing import CliRunner

    from agentstudy.cli import main

    result = CliRunner().invoke(main, ["power", str(two_agent_ledger)])
    assert result.exit_code == 2
    assert result.stderr.strip() == ("agentstudy: error: the ledger holds attempts of 2 agents (claude-code, codex); "
                                     "each agent is analysed alone; power planning reads a one-agent ledger")


def test_the_ledger_command_counts_each_agents_observations(two_agent_ledger: Path) -> None:
    from click.testing import CliRunner

    from agentstudy.cli import main

    text = CliRunner().invoke(main, ["ledger", str(two_agent_ledger)])
    assert text.exit_code == 0, text.output
    assert re.search(r"^Agents +claude-code 12, codex 12$", text.output, re.MULTILINE), text.output
    as_json = json.loads(CliRunner().invoke(main, ["ledger", str(two_agent_ledger), "--json"]).output)
    assert as_json["ledger"]["byAgent"] == {"claude-code": 12, "codex": 12}


def test_the_side_by_side_header_follows_the_studys_alpha(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    analysis = {"primary": {"metric": "inputTokens", "betterWhen": "lower"}, "alpha": 0.1}
    write(path, ledger(two_agent_observations(), analysis=analysis))
    tables = markdown_tables(build_report(path, output_format="md"))
    caption = next(c for c in tables
                   if c.startswith("Repository tools + doc-bridge compared with Repository tools, task level"))
    inputs = next(row for row in tables[caption] if row["metric"] == "input tokens")
    assert "claude-code: Δ per task [90 % interval]" in inputs and "codex: Δ per task [90 % interval]" in inputs
    assert not any("95 %" in header for header in inputs)


def test_each_agents_primary_is_holm_adjusted_across_the_agents(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    write(path, ledger(two_agent_observations(tasks=6, reps=1),
                       analysis={"primary": {"metric": "inputTokens", "betterWhen": "lower"}}))
    data = json.loads(build_report(path, output_format="json"))
    primaries = {agent: next(m for m in view["metrics"] if m["role"] == "primary")
                 for agent, view in data["agents"].items()}
    raw = sorted((m["pValue"], agent) for agent, m in primaries.items())
    # Holm over two: the smaller p times 2, the larger at least that and times 1, capped at 1
    first = min(1.0, 2 * raw[0][0])
    assert primaries[raw[0][1]]["pValueAdjusted"] == pytest.approx(first)
    assert primaries[raw[1][1]]["pValueAdjusted"] == pytest.approx(max(first, raw[1][0]))
    assert primaries["codex"]["pValueAdjusted"] > primaries["codex"]["pValue"]
    text = build_report(path, output_format="md")
    assert "Holm-adjusted across the 2 agents of the study" in text
