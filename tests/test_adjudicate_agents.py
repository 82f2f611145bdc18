"""``agentstudy adjudicate --agent codex|gemini``: the blind adjudication with the real pinned Codex CLI and Gemini
CLI, each against its own scripted server running the key-term adjudicator policy (zero spend).

Real parts only: the example study's git corpora, the pinned binaries in .tools, bubblewrap, the scripted
Responses / Gemini API servers on 127.0.0.1. The parent environment holds sentinel credentials; none may reach
an adjudicator child (a wrapper binary records the environment each child was given).
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.adjudication.demo import NO_MCP_SERVER
from agentstudy.adjudication.run import AdjudicationRefused, AdjudicationRequest, run_adjudication
from agentstudy.agents.registry import agent_cli
from agentstudy.cli import main
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.adjudicator_policy import adjudicator_reply
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.transports.cli import CliSettings
from test_adjudication_support import BLINDING_TERMS, load_view, observation, write_ledger

ANSWER = "Deadlines use time.monotonic (src/lantern/cache.py:29); prototypes used time.time (docs/design.md:99)."
SENTINELS = {"OPENAI_API_KEY": "sk-parent-SENTINEL-openai", "ANTHROPIC_API_KEY": "sk-ant-parent-SENTINEL",
             "GOOGLE_API_KEY": "parent-SENTINEL-google", "GEMINI_API_KEY": "parent-SENTINEL-gemini"}
AGENTS = ("codex", "gemini")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("adjudicate-agents-study"))


@pytest.fixture
def ledger(tmp_path: Path, study: ExampleStudy) -> Path:
    return write_ledger(tmp_path / "ledger.json", study, [
        observation("lantern-discovery", "repository-only", ANSWER),
        observation("lantern-discovery", "doc-bridge-mcp", ANSWER + " Found via mcp__doc-bridge__doc_search."),
        observation("lantern-architecture", "repository-only", "", status="invalid-setup"),
    ], status="blocked")


def _roots(study: ExampleStudy) -> list[str]:
    return [f"--root={name}={path}" for name, path in study.roots.items()]


def _adjudicate(ledger: Path, study: ExampleStudy, output: Path, *extra: str) -> Result:
    args = ["adjudicate", str(ledger), "--manifest", str(study.manifest_path), *_roots(study), "--rehearsal",
            "--budget-usd", "1", "--output", str(output), "--allow-unverified", *extra]
    return CliRunner().invoke(main, args, env=SENTINELS)


def _companion(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", AGENTS)
def test_the_real_agent_adjudicates_blind_against_its_scripted_server(
    tmp_path: Path, study: ExampleStudy, ledger: Path, name: str
) -> None:
    agent = agent_cli(name)
    binary = agent.find_binary(None, os.environ)
    bodies: list[str] = []

    def recording(body: Any) -> Any:
        bodies.append(json.dumps(body, ensure_ascii=False).lower())
        return adjudicator_reply(body)

    output = tmp_path / "companion.json"
    with agent.rehearsal_server(0, policy=recording) as server:
        summary = run_adjudication(AdjudicationRequest(
            ledger=load_view(ledger), loaded=load_manifest(study.manifest_path), roots=dict(study.roots),
            output=output, settings=CliSettings(binary=binary, model=agent.rehearsal_model, mcp=NO_MCP_SERVER,
                                                rehearsal_base_url=server.agent_base_url, agent=name),
            cap_usd=Decimal("1"), item_budget_usd=Decimal("0.10"), expected_cli_version=agent.pinned_version,
            seed=7, parent_env={**os.environ, **SENTINELS},
        ))
        served = len(server.requests)
    companion = _companion(output)
    assert summary.status == companion["status"] == "adjudicated"
    adjudicator = companion["adjudicator"]
    assert (adjudicator["agent"], adjudicator["expectedCliVersion"], adjudicator["model"]) == (
        name, agent.pinned_version, agent.rehearsal_model)
    assert agent.version_problem(adjudicator["cliVersion"], agent.pinned_version) is None
    assert adjudicator["tools"] == list(agent.repository_tools) and adjudicator["mcpServers"] == []
    assert adjudicator["containment"] == "bwrap" and adjudicator["prices"] == agent.price_entry(agent.rehearsal_model)
    items = companion["items"]
    assert len(items) == 2 and companion["missing"][0]["status"] == "invalid-setup"
    for item in items:
        assert item["status"] == "scored" and item["attemptStatus"] == "completed"
        assert len(item["verdicts"]) == 4 and item["chargedUsd"] > 0 and item["inputTokens"] > 0
        assert item["cliReportedCostUsd"] is None and item["computedCostUsd"] == item["chargedUsd"]
    assert served >= 2 and len(bodies) >= 2, "every item's agent talked to the scripted adjudicator"
    for text in bodies:
        assert [term for term in BLINDING_TERMS if term in text] == [], "the adjudicator saw the scenario"
        assert not any(secret.lower() in text for secret in SENTINELS.values())


@pytest.mark.parametrize("name", AGENTS)
def test_no_parent_credential_reaches_an_adjudicator_child(
    tmp_path: Path, study: ExampleStudy, ledger: Path, name: str
) -> None:
    # A wrapper as the agent binary writes its own /proc/self/environ, then execs the real binary; it runs under
    # --containment restricted so that it can write the log (the child's environment is built the same way).
    agent = agent_cli(name)
    log = tmp_path / "environ.log"
    wrapper = tmp_path / f"{name}-wrapper"
    wrapper.write_text(f"#!/bin/sh\n{{ tr '\\0' '\\n' < /proc/self/environ; printf 'END\\n'; }} >> '{log}'\n"
                       f"exec '{agent.find_binary(None, os.environ)}' \"$@\"\n")
    wrapper.chmod(0o755)
    output = tmp_path / "companion.json"
    result = _adjudicate(ledger, study, output, "--agent", name, "--agent-bin", str(wrapper), "--model",
                         agent.rehearsal_model, "--containment", "restricted")
    assert result.exit_code == 0, result.output
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert (line["status"], line["scored"], line["attempts"]) == ("adjudicated", 2, 2)
    assert _companion(output)["adjudicator"]["agent"] == name
    starts = [entry for entry in log.read_text().split("END\n") if entry.strip()]
    assert len(starts) >= 3, "the version probe and one start per item"
    for entry in starts:
        leaked = [key for key, value in SENTINELS.items() if value in entry]
        assert leaked == [], f"{name} child saw the parent's {leaked}"


def test_the_agent_flags_are_checked_before_anything_runs(
    tmp_path: Path, study: ExampleStudy, ledger: Path
) -> None:
    output = tmp_path / "companion.json"
    cases = {
        ("--agent", "codex", "--claude-bin", "/bin/true", "--model", "rehearsal-scripted"): "Claude Code's",
        ("--agent", "gemini", "--cli-version", "0.61.0", "--model", "rehearsal-scripted"): "Claude Code's",
        ("--agent", "gemini", "--agent-bin", str(tmp_path / "nothing"), "--model", "rehearsal-scripted"): "",
        ("--agent", "gemini", "--model", "gpt-5.5"): "no price in Gemini CLI's table",
        ("--agent", "codex", "--model", "rehearsal-scripted", "--agent-version", "9.9.9"): "9.9.9",
    }
    for extra, words in cases.items():
        result = _adjudicate(ledger, study, output, *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert words in result.output and not output.exists(), (extra, result.output)


def test_the_price_check_uses_the_adjudicator_agents_table(study: ExampleStudy, ledger: Path, tmp_path: Path) -> None:
    agent = agent_cli("gemini")
    request = AdjudicationRequest(
        ledger=load_view(ledger), loaded=load_manifest(study.manifest_path), roots=dict(study.roots),
        output=tmp_path / "companion.json",
        settings=CliSettings(binary=agent.find_binary(None, os.environ), model="gpt-5.5", mcp=NO_MCP_SERVER,
                             rehearsal_base_url="http://127.0.0.1:9", agent="gemini"),
        cap_usd=Decimal("1"), item_budget_usd=Decimal("0.10"), expected_cli_version=agent.pinned_version, seed=1,
        parent_env=dict(os.environ),
    )
    with pytest.raises(AdjudicationRefused, match="no price in Gemini CLI's table"):
        run_adjudication(request)
    assert not (tmp_path / "companion.json").exists()


def test_a_ray_adjudication_checks_the_workers_by_the_adjudicator_agents_version_rule(
    monkeypatch: pytest.MonkeyPatch, study: ExampleStudy, ledger: Path, tmp_path: Path
) -> None:
    # What every Ray worker proves before it runs an item: the adjudicator agent's binary at its version, read
    # by that agent's rule (Gemini's bare "0.61.0", not Claude Code's first token).
    from contextlib import ExitStack

    from agentstudy.adjudication import remote
    seen: list[Any] = []

    class Started:
        excluded: tuple[Any, ...] = ()

    def start(stack: ExitStack, **kwargs: Any) -> Started:
        seen.append(kwargs["needs"])
        return Started()

    monkeypatch.setattr(remote, "start_executor", start)
    agent = agent_cli("gemini")
    request = AdjudicationRequest(
        ledger=load_view(ledger), loaded=load_manifest(study.manifest_path), roots=dict(study.roots),
        output=tmp_path / "companion.json",
        settings=CliSettings(binary=agent.find_binary(None, os.environ), model=agent.rehearsal_model,
                             mcp=NO_MCP_SERVER, agent="gemini"),
        cap_usd=Decimal("1"), item_budget_usd=Decimal("0.10"), expected_cli_version=agent.pinned_version, seed=1,
        parent_env=dict(os.environ), executor="ray", concurrency=2,
    )
    with ExitStack() as stack:
        remote.open_item_executor(stack, request, [])
    assert [(needs.agent, needs.expected_version) for needs in seen] == [("gemini", "0.61.0")]
