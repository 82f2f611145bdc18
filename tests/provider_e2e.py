"""The controlled example study run end to end by a bundled provider adapter in rehearsal (issue 34, "Must show").

``run_example(agent, dest)`` builds the example (12 tasks, three repositories), runs ``agentstudy run`` with
``providers-<agent>.json`` (the real pinned agent binary against the scripted model server, zero spend),
then ``agentstudy ledger``, ``adjudicate-controlled`` with the same adapter as adjudicator (two observations)
and ``metrics``. The test modules share one such run per agent and assert on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import Result

from agentstudy.rehearsal.controlled.example import build_controlled_example
from test_controlled_run_support import cli


@dataclass(frozen=True)
class ExampleRun:
    """Results of one agent's end-to-end rehearsal: the commands' results and the files they wrote."""

    run: Result
    ledger_check: Result
    adjudication: Result
    metrics: Result
    plan: dict[str, Any]
    ledger: dict[str, Any]
    adjudicated: dict[str, Any]


def run_example(agent: str, dest: Path) -> ExampleRun:
    """Run the example with ``agent``'s adapter in rehearsal (see the module docstring)."""
    example = build_controlled_example(dest / "example")
    providers = example.agent_providers[agent]
    ledger, adjudicated = dest / "ledger.json", dest / "adjudicated.json"
    run = cli("run", str(example.plan), str(example.suite), "--providers", str(providers), "--repositories",
              str(example.repositories), "--ledger", str(ledger), "--concurrency", "4")
    ledger_check = cli("ledger", str(ledger))
    adjudication = cli("adjudicate-controlled", str(ledger), str(example.suite), "--adjudicator", str(providers),
                       "--output", str(adjudicated), "--limit", "2")
    metrics = cli("metrics", str(adjudicated))
    return ExampleRun(run, ledger_check, adjudication, metrics, json.loads(example.plan.read_text()),
                      json.loads(ledger.read_text()), json.loads(adjudicated.read_text()))


def check_example_run(done: ExampleRun, agent: str) -> None:
    """The issue's assertions on one agent's run: every plan hash verifies, every observation completed with
    provider tokens equal to what the scripted server served, the doc-bridge arms got the MCP server and
    repository-only provably did not, the ledger verifies, two observations adjudicated by the adapter,
    metrics computed."""
    assert done.run.exit_code == 0, done.run.stderr
    observations = done.ledger["observations"]
    assert len(observations) == 12
    assert {o["planHash"] for o in observations} == {done.plan["contentHash"]}
    for observation in observations:
        execution, measurements = observation["execution"], observation["measurements"]
        assert execution["status"] == "completed", execution
        assert execution["tokenMethod"] == "provider"
        assert execution["inputTokens"] == measurements["rehearsalServedInputTokens"] > 0
        assert execution["outputTokens"] == measurements["rehearsalServedOutputTokens"] > 0
        assert measurements["providerTokenCostUnits"] == execution["inputTokens"] + execution["outputTokens"]
        assert measurements["cachedInputTokens"] == 0 and execution["toolCalls"] >= 1
        assert measurements["agentCostUsd"] == 0
        if observation["task"]["scenarioId"] == "repository-only":
            assert measurements["agentMcpToolsOffered"] == 0  # the tools the agent sent the model
            assert "docBridgeQueryCount" not in measurements
        else:
            assert measurements["agentMcpToolsOffered"] >= 1
            assert measurements["docBridgeQueryCount"] >= 1
    assert {o["adjudication"]["outcome"] for o in observations} <= {"success", "partial"}
    assert done.ledger_check.exit_code == 0, done.ledger_check.stderr
    assert done.adjudication.exit_code == 0, done.adjudication.stderr
    judged = [o for o in done.adjudicated["observations"] if o["adjudication"].get("method") == "independent-rubric-v1"]
    assert len(judged) == 2
    for observation in judged:
        verdict = observation["adjudication"]
        assert (verdict["status"], verdict["actor"], verdict["tokenMethod"]) == (
            "automated", f"{agent}-adjudicator", "provider")
        assert observation["measurements"]["adjudicatorInputTokens"] > 0
    assert done.metrics.exit_code == 0, done.metrics.stderr
