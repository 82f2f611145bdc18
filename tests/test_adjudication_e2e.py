"""End to end with the real Claude Code binary: a real study ledger, then its blind adjudication.

Nothing is mocked: real git corpora, the real pinned CLI for the study and for the adjudicator,
the real rehearsal server on 127.0.0.1 (the study's careful agent, then the key-term
adjudicator policy) and the real MCP server for the study's MCP arm. Every request body the
adjudicator's policy receives is recorded, and none may name a scenario, the MCP server or one
of its tools; the adjudicator is offered only Read, Grep and Glob.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.adjudication.demo import run_demo_adjudication
from agentstudy.adjudication.run import run_adjudication
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.adjudicator_policy import adjudicator_reply
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.runners.cli_request import CliRunRequest
from agentstudy.runners.demo import run_demo
from agentstudy.runners.minimal import run_cli_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.runners.progress import SilentProgress
from agentstudy.transports.cli import CliSettings
from claude_versions import ClaudeCode, installed_claude_code
from test_adjudication_support import BLINDING_TERMS, MODEL, PLANTED_KEY, RecordingPolicy, request_for

REVEALING = " (found with mcp__doc-bridge__doc_search and doc.get of the doc-bridge MCP server, doc-bridge-mcp arm)"


def _companion(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


DemoCopy = Callable[[Path, ClaudeCode], Path]


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory: pytest.TempPathFactory) -> DemoCopy:
    """``copy(dest, claude)``: a fresh copy at ``dest`` of the demo pilot run with ``claude`` (asserted awaiting
    adjudication). Each version's pilot runs once per module; every test adjudicates its own copy, so nothing a
    test writes (a companion next to the ledger) is seen by another."""
    runs: dict[str, Path] = {}

    def copy(dest: Path, claude: ClaudeCode) -> Path:
        if claude.version not in runs:
            directory = tmp_path_factory.mktemp(f"demo-{claude.version}")
            summary = run_demo(directory, claude.binary, progress=SilentProgress(), version=claude.version)
            assert summary.status == "awaiting-adjudication"
            runs[claude.version] = directory
        shutil.copytree(runs[claude.version], dest, symlinks=True)
        return dest

    return copy


def _pinned(claude_bin: Path) -> ClaudeCode:
    """The pin (2.1.296) as a :class:`ClaudeCode` with ``claude_bin``'s binary."""
    return ClaudeCode(claude_bin, installed_claude_code("2.1.296").version)


def _demo_study(directory: Path) -> ExampleStudy:
    study = directory / "study"
    names = load_manifest(study / "manifest.json").manifest.repositories
    return ExampleStudy(manifest_path=study / "manifest.json", roots={name: study / name for name in names})


def _assert_blind(recorder: RecordingPolicy) -> None:
    assert recorder.bodies, "the adjudicator talked to the rehearsal server"
    for body in recorder.bodies:
        text = json.dumps(body, ensure_ascii=False).lower()
        leaked = [term for term in BLINDING_TERMS if term in text]
        assert leaked == [], f"the adjudicator saw {leaked}"
        assert sorted(tool["name"] for tool in body["tools"]) == ["Glob", "Grep", "Read"]
        assert PLANTED_KEY not in text


def _study(tmp_path: Path, binary: Path, policy: Any) -> tuple[ExampleStudy, Path]:
    study = build_example_study(tmp_path / "study")
    ledger = tmp_path / "ledger.json"
    with RehearsalServer(policy=policy) as server:
        run_cli_study(CliRunRequest(
            loaded=load_manifest(study.manifest_path), mode="pilot", roots=study.roots, output=ledger,
            settings=CliSettings(binary=binary, model=MODEL, mcp=DEFAULT_MCP_SERVER,
                                 rehearsal_base_url=server.base_url),
            cap_usd=Decimal("1"), attempt_budget_usd=Decimal("0.10"), expected_cli_version="2.1.296",
            parent_env=dict(os.environ),
        ))
    return study, ledger


def _offers_mcp(body: Mapping[str, Any]) -> bool:
    return any(str(tool.get("name", "")).startswith("mcp__") for tool in body.get("tools", []))


def test_demo_ledger_is_adjudicated_blind_and_bound_to_its_hash(
    tmp_path: Path, claude_bin: Path, demo_copy: DemoCopy
) -> None:
    directory = demo_copy(tmp_path / "demo", _pinned(claude_bin))
    ledger = directory / "ledger.json"
    before = ledger.read_bytes()
    output = tmp_path / "adjudication.json"
    recorder = RecordingPolicy(adjudicator_reply)
    with RehearsalServer(policy=recorder) as server:
        result = run_adjudication(request_for(ledger, _demo_study(directory), claude_bin, output,
                                              base_url=server.base_url, seed=2026))
    assert ledger.read_bytes() == before, "the ledger is never modified"
    companion = _companion(output)
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    assert companion["ledgerSha256"] == hashlib.sha256(before).hexdigest()
    assert companion["type"] == "minimal-study-adjudication"
    assert (companion["method"], companion["humanReview"]) == ("agent", False)
    assert result.status == companion["status"] == "adjudicated"
    observations = json.loads(before)["observations"]
    assert sorted(item["observationIndex"] for item in companion["items"]) == [0, 1]
    assert companion["missing"] == []
    for item in companion["items"]:
        observation = observations[item["observationIndex"]]
        assert (item["taskId"], item["repetition"]) == (observation["taskId"], observation["repetition"])
        assert item["status"] == "scored" and item["score"] in (0.0, 0.5, 1.0)
        assert len(item["verdicts"]) == 4 and item["method"] == "agent" and item["humanReview"] is False
        assert item["citations"]["total"] >= 1 and item["citations"]["valid"] == item["citations"]["total"]
        assert item["toolCallsByName"] == {"Read": 1}, "the adjudicator opened the cited file"
        assert item["chargedUsd"] > 0 and item["inputTokens"] > 0 and item["wallTimeMs"] >= 0
        assert "scenario" not in item
    assert companion["blinding"]["seed"] == 2026
    assert companion["adjudicator"]["mcpServers"] == [] and companion["adjudicator"]["rehearsal"] is True
    # spent is the exact Decimal sum written as the nearest float; each charge is itself a rounded float (the CLI
    # reports costs like 0.0009352000000000001), so the sum of the written charges may differ by a few ulps
    written = float(sum(Decimal(str(i["chargedUsd"])) for i in companion["items"]))
    assert math.isclose(companion["budget"]["spent"], written, rel_tol=1e-12, abs_tol=0.0)
    _assert_blind(recorder)
    assert PLANTED_KEY not in output.read_text(encoding="utf-8")


def test_answers_naming_the_server_and_its_tools_reach_the_adjudicator_scrubbed(
    tmp_path: Path, claude_bin: Path
) -> None:
    def revealing_agent(body: Mapping[str, Any]) -> ScriptedReply:
        reply = next_reply(body)
        if reply.stop_reason == "end_turn" and _offers_mcp(body):
            text = reply.content[-1]["text"] + REVEALING
            return replace(reply, content=[*reply.content[:-1], {"type": "text", "text": text}])
        if reply.stop_reason == "end_turn":
            text = reply.content[-1]["text"] + " (repository-only arm, no MCP)"
            return replace(reply, content=[*reply.content[:-1], {"type": "text", "text": text}])
        return reply

    study, ledger = _study(tmp_path, claude_bin, revealing_agent)
    answers = [o["answer"] for o in json.loads(ledger.read_text(encoding="utf-8"))["observations"]]
    assert any("mcp__doc-bridge__doc_search" in a for a in answers) and any("repository-only" in a for a in answers)
    recorder = RecordingPolicy(adjudicator_reply)
    output = tmp_path / "adjudication.json"
    with RehearsalServer(policy=recorder) as server:
        run_adjudication(request_for(ledger, study, claude_bin, output, base_url=server.base_url))
    _assert_blind(recorder)
    items = _companion(output)["items"]
    assert sorted(item["scrubbedMentions"] for item in items) == [2, 4]  # "doc-bridge MCP" is one mention
    assert all(item["status"] == "scored" for item in items)


def test_a_blocked_run_is_adjudicated_with_its_failed_observation_missing(tmp_path: Path, claude_bin: Path) -> None:
    def failing_mcp_arm(body: Mapping[str, Any]) -> ScriptedReply:
        if _offers_mcp(body):
            raise ValueError("scripted failure of the MCP arm")
        return next_reply(body)

    study, ledger = _study(tmp_path, claude_bin, failing_mcp_arm)
    document = json.loads(ledger.read_text(encoding="utf-8"))
    assert document["status"] == "blocked"
    assert [o["status"] for o in document["observations"]] == ["completed", "failed"]
    recorder = RecordingPolicy(adjudicator_reply)
    output = tmp_path / "adjudication.json"
    with RehearsalServer(policy=recorder) as server:
        summary = run_adjudication(request_for(ledger, study, claude_bin, output, base_url=server.base_url))
    companion = _companion(output)
    assert summary.status == companion["status"] == "adjudicated"
    [item] = companion["items"]
    assert item["observationIndex"] == 0 and item["status"] == "scored"
    assert companion["missing"] == [{"observationIndex": 1, "taskId": "lantern-discovery", "repetition": 1,
                                     "status": "failed"}]
    assert summary.line["missing"] == 1 and summary.line["scored"] == 1
    _assert_blind(recorder)


def test_demo_adjudication_runs_for_free_next_to_the_ledger(
    tmp_path: Path, claude_bin: Path, demo_copy: DemoCopy
) -> None:
    directory = demo_copy(tmp_path / "demo", _pinned(claude_bin))
    ledger = directory / "ledger.json"
    summary = run_demo_adjudication(directory, claude_bin, ledger)
    assert summary.companion == directory / "ledger.adjudication.json"
    assert summary.status == "adjudicated"
    assert summary.line["scored"] == 2 and summary.line["humanReview"] is False
    assert "no human review" in summary.line["note"]
    companion = _companion(summary.companion)
    assert companion["ledgerSha256"] == hashlib.sha256(ledger.read_bytes()).hexdigest()
    assert isinstance(companion["blinding"]["seed"], int)


def test_adjudicate_command_rehearses_end_to_end(
    tmp_path: Path, claude_code: ClaudeCode, demo_copy: DemoCopy
) -> None:
    """The adjudicate command over a demo pilot, each with each pinned Claude Code (2.1.296 and 2.1.328)."""
    directory = demo_copy(tmp_path / "demo", claude_code)
    study, ledger = _demo_study(directory), directory / "ledger.json"
    env = {**os.environ, "ANTHROPIC_API_KEY": PLANTED_KEY, "AGENTSTUDY_CLAUDE_BIN": str(claude_code.binary),
           "ADJUDICATOR_MODEL": MODEL, "ADJUDICATOR_BUDGET_USD": "1"}
    argv = [sys.executable, "-m", "agentstudy", "adjudicate", str(ledger), "--manifest", str(study.manifest_path),
            *[f"--root={name}={root}" for name, root in study.roots.items()], "--rehearsal",
            "--cli-version", claude_code.version]
    completed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr
    line = json.loads(completed.stdout.strip().splitlines()[-1])
    assert (line["status"], line["items"], line["scored"], line["humanReview"]) == ("adjudicated", 2, 2, False)
    companion_path = directory / "ledger.adjudication.json"
    assert line["companion"] == str(companion_path)
    assert stat.S_IMODE(companion_path.stat().st_mode) == 0o600
    answers = [o["answer"] for o in json.loads(ledger.read_text(encoding="utf-8"))["observations"]]
    for text in (completed.stdout, completed.stderr, companion_path.read_text(encoding="utf-8")):
        assert PLANTED_KEY not in text
    for answer in answers:
        assert answer not in completed.stdout and answer not in completed.stderr
    again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert again.returncode == 2 and "already exists" in again.stderr
