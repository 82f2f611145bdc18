"""A study listing all three agents in rehearsal: one `agentstudy minimal` pilot drives Claude Code, Codex and
Gemini CLI through the real pinned binaries against their scripted servers, and the report shows each agent's
pairs side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.rehearsal.example_study import build_example_study

from study_files import EXAMPLE_STUDY

AGENTS = ["claude-code", "codex", "gemini"]


@pytest.fixture(scope="module")
def three_agent_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    base = tmp_path_factory.mktemp("three-agents")
    example = build_example_study(base / "study")
    document = json.loads(EXAMPLE_STUDY.read_text())
    document["agents"] = AGENTS
    study = base / "study.json"
    study.write_text(json.dumps(document))
    output = base / "ledger.json"
    result = CliRunner().invoke(main, [
        "minimal", "--manifest", str(study), "--pilot", "--transport", "cli", "--rehearsal",
        *[f"--root={name}={path}" for name, path in example.roots.items()],
        "--output", str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1"])
    return result, output


def test_each_agent_runs_each_arm_in_one_ledger(three_agent_run: tuple[Result, Path]) -> None:
    result, output = three_agent_run
    assert result.exit_code == 0, result.output
    data = output.read_bytes()
    assert verify_ledger_bytes(data).problems == ()
    ledger: dict[str, Any] = json.loads(data)
    observations = ledger["observations"]
    assert [(o["agent"], o["scenario"]) for o in observations] == [
        (agent, scenario) for agent in AGENTS for scenario in ("repository-only", "doc-bridge-mcp")]
    assert all(o["status"] == "completed" for o in observations), [o.get("statusReason") for o in observations]
    assert {o["agent"]: o["cliVersion"] for o in observations}["gemini"] == "0.61.0"
    assert [a["name"] for a in ledger["cli"]["otherAgents"]] == ["codex", "gemini"]
    by_agent = {(o["agent"], o["scenario"]): o["toolCallsByName"] for o in observations}
    for agent in AGENTS:
        assert any(n.startswith("mcp__doc-bridge__") for n in by_agent[(agent, "doc-bridge-mcp")])
        assert not any(n.startswith("mcp") for n in by_agent[(agent, "repository-only")])


def test_the_report_shows_each_agents_pairs_side_by_side(three_agent_run: tuple[Result, Path]) -> None:
    _, output = three_agent_run
    report = CliRunner().invoke(main, ["report", str(output), "--format", "md"])
    assert report.exit_code == 0, report.output
    for agent in AGENTS:
        assert f"## Agent {agent}: Paired differences" in report.stdout
    assert "claude-code: 2 attempts, 1 pair; codex: 2 attempts, 1 pair; gemini: 2 attempts, 1 pair" in report.stdout
