"""A study with both agents in rehearsal (issue 21 item 6, Must show): one `agentstudy minimal` run drives
Claude Code and Codex through the real pinned binaries against their scripted servers, and the report shows
two paired results, one per agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.rehearsal.example_study import build_example_study
from test_report_builders import markdown_tables

from study_files import EXAMPLE_STUDY

AGENTS = ["claude-code", "codex"]


@pytest.fixture(scope="module")
def two_agent_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The example study file with ``agents: [claude-code, codex]`` and its ``--root`` flags."""
    base = tmp_path_factory.mktemp("two-agents")
    example = build_example_study(base / "study")
    document = json.loads(EXAMPLE_STUDY.read_text())
    document["agents"] = AGENTS
    study = base / "study.json"
    study.write_text(json.dumps(document))
    return study, [f"--root={name}={path}" for name, path in example.roots.items()]


@pytest.fixture(scope="module")
def two_agent_run(two_agent_study: tuple[Path, list[str]]) -> tuple[Result, Path]:
    """Its free cli pilot in rehearsal: the command's result and the ledger."""
    study, roots = two_agent_study
    output = study.parent / "ledger.json"
    result = CliRunner().invoke(main, [
        "minimal", "--manifest", str(study), "--pilot", "--transport", "cli", "--rehearsal", *roots,
        "--output", str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1"])
    return result, output


@pytest.mark.parametrize(("extra", "message"), [
    (["--transport", "http", "--rehearsal", "--input-usd-per-million", "1", "--output-usd-per-million", "1"],
     "a study that lists agents needs --transport cli"),
    (["--rehearsal", "--agent-model", "codex"], "--agent-model 'codex' is not NAME=MODEL"),
    (["--rehearsal", "--agent-model", "claude-code=claude-haiku-5-5"], "--agent-model claude-code: not another agent"),
    (["--approve-budget", "--agent-model", "codex=gpt-5.5", "--agent-model", "codex=gpt-5.5"],
     "--agent-model names 'codex' twice"),
    (["--approve-budget"], "agent codex needs --agent-model codex=MODEL (a real run)"),  # nothing is spent
    (["--rehearsal", "--agent", "codex", "--agent-model", "codex=x"], "--agent-model codex: not another agent"),
])
def test_bad_agent_flags_exit_2_before_anything_starts(two_agent_study: tuple[Path, list[str]], extra: list[str],
                                                       message: str, tmp_path: Path) -> None:
    study, roots = two_agent_study
    output = tmp_path / "ledger.json"
    result = CliRunner().invoke(main, ["minimal", "--manifest", str(study), "--pilot", *roots, "--output",
                                       str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1",
                                       "--transport", "cli", *extra])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not output.exists()


def test_both_agents_run_each_arm_in_one_ledger(two_agent_run: tuple[Result, Path]) -> None:
    result, output = two_agent_run
    assert result.exit_code == 0, result.output
    data = output.read_bytes()
    assert verify_ledger_bytes(data).problems == ()
    ledger: dict[str, Any] = json.loads(data)
    observations = ledger["observations"]
    assert [(o["agent"], o["scenario"]) for o in observations] == [
        ("claude-code", "repository-only"), ("claude-code", "doc-bridge-mcp"),
        ("codex", "repository-only"), ("codex", "doc-bridge-mcp")]
    assert all(o["status"] == "completed" for o in observations)
    assert len({(o["taskId"], o["repetition"]) for o in observations}) == 1  # the same task and repetition
    versions = {o["agent"]: o["cliVersion"] for o in observations}
    assert versions["codex"] == "codex-cli 0.171.0" and versions["claude-code"].startswith("2.1.296")
    assert ledger["cli"]["agent"]["name"] == "claude-code"
    assert [a["name"] for a in ledger["cli"]["otherAgents"]] == ["codex"]
    assert ledger["cli"]["otherAgents"][0]["features"]["apps"] is False
    by_agent = {(o["agent"], o["scenario"]): o["toolCallsByName"] for o in observations}
    for agent in AGENTS:
        assert any(n.startswith("mcp__doc-bridge__") for n in by_agent[(agent, "doc-bridge-mcp")])
        assert not any(n.startswith("mcp__") for n in by_agent[(agent, "repository-only")])
    assert ledger["plannedAttempts"] == 4 and ledger["fullAttempts"] == 72


def test_the_report_shows_two_paired_results_one_per_agent(two_agent_run: tuple[Result, Path]) -> None:
    _, output = two_agent_run
    report = CliRunner().invoke(main, ["report", str(output), "--format", "md"])
    assert report.exit_code == 0, report.output
    tables = markdown_tables(report.stdout)
    caption = next(c for c in tables if c.endswith("task level, each agent alone (exploratory)"))
    rows = {row["metric"]: row for row in tables[caption]}
    for agent in AGENTS:
        cell = rows["input tokens"][f"{agent}: Δ per task [95 % interval]"]
        assert cell not in ("", "—")
        assert "1 task × 1 repetition" in rows["input tokens"][f"{agent}: p (test of the mean); design"]
        assert f"## Agent {agent}: Paired differences" in report.stdout
    assert "there is no overall line" in report.stdout
    assert "claude-code: 2 attempts, 1 pair; codex: 2 attempts, 1 pair" in report.stdout


def test_two_agents_run_concurrently_with_one_budget(two_agent_study: tuple[Path, list[str]], tmp_path: Path) -> None:
    """--concurrency 2: both agents' attempts of the same task, arm and repetition may be in flight at once;
    each settles its own open reservation (the identity includes the agent) and the ledger verifies."""
    study, roots = two_agent_study
    output = tmp_path / "ledger.json"
    result = CliRunner().invoke(main, [
        "minimal", "--manifest", str(study), "--pilot", "--transport", "cli", "--rehearsal", *roots,
        "--output", str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1", "--concurrency", "2"])
    assert result.exit_code == 0, result.output
    data = output.read_bytes()
    assert verify_ledger_bytes(data).problems == ()
    ledger = json.loads(data)
    assert sorted((o["agent"], o["scenario"]) for o in ledger["observations"]) == [
        ("claude-code", "doc-bridge-mcp"), ("claude-code", "repository-only"),
        ("codex", "doc-bridge-mcp"), ("codex", "repository-only")]
    assert all(o["status"] == "completed" for o in ledger["observations"])
    assert ledger["openReservations"] == []


def test_a_two_agent_ledger_is_adjudicated_blind_and_reported_per_agent(two_agent_study: tuple[Path, list[str]],
                                                                       two_agent_run: tuple[Result, Path]) -> None:
    """Each agent's observation of the same task, arm and repetition is its own item (the ledger view keys
    observations by agent too); the adjudicator's prompts never name the agent; the report joins the
    companion and shows correctness for each agent."""
    study, roots = two_agent_study
    result, ledger = two_agent_run
    assert result.exit_code == 0, result.output
    env = {"ADJUDICATOR_MODEL": "claude-haiku-5-5", "ADJUDICATOR_BUDGET_USD": "1", "ANTHROPIC_API_KEY": None}
    adjudicated = CliRunner().invoke(main, ["adjudicate", str(ledger), "--manifest", str(study), *roots,
                                            "--rehearsal"], env=env)
    assert adjudicated.exit_code == 0, adjudicated.output
    line = json.loads(adjudicated.stdout.strip().splitlines()[-1])
    assert (line["status"], line["items"], line["scored"]) == ("adjudicated", 4, 4)
    companion_path = ledger.parent / "ledger.adjudication.json"
    companion = json.loads(companion_path.read_text())
    assert sorted(item["observationIndex"] for item in companion["items"]) == [0, 1, 2, 3]
    assert all(item["promptBytes"] > 0 for item in companion["items"])
    assert "codex" not in json.dumps(companion["blinding"]) and "claude-code" not in json.dumps(companion["blinding"])
    report = CliRunner().invoke(main, ["report", str(ledger), "--adjudication", str(companion_path), "--format",
                                       "md"])
    assert report.exit_code == 0, report.output
    for agent in AGENTS:
        section = report.stdout.split(f"## Agent {agent}: Paired differences", 1)[1]
        assert "No adjudication companion was given" not in section.split("## Agent", 1)[0]
    assert "Correctness: not adjudicated" not in report.stdout
