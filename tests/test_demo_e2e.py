"""End to end with the real Claude Code binary, the rehearsal server and the example MCP server.

Nothing is mocked: real git corpora, the real pinned CLI, a real HTTP server on 127.0.0.1
and the real MCP SDK server. The test process holds a planted ``ANTHROPIC_API_KEY``; it must
never reach the child, the ledger or the output.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agentstudy.commands.view import ConsoleProgress, print_summary_table
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.report.build import build_report
from agentstudy.runners.cli_request import CliRunRequest
from agentstudy.runners.minimal import run_cli_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings
from claude_versions import ClaudeCode

from inprocess_cli import invoke_agentstudy

PLANTED_KEY = "sk-ant-planted-test-key-0123456789"


def _request(tmp_path: Path, server: RehearsalServer, output: Path, binary: Path,
             version: str = "2.1.296") -> CliRunRequest:
    study = build_example_study(tmp_path / "study")
    return CliRunRequest(
        loaded=load_manifest(study.manifest_path),
        mode="pilot",
        roots=study.roots,
        output=output,
        settings=CliSettings(
            binary=binary,
            model="claude-haiku-5-5",
            mcp=DEFAULT_MCP_SERVER,
            rehearsal_base_url=server.base_url,
        ),
        cap_usd=Decimal("1"),
        attempt_budget_usd=Decimal("0.10"),
        expected_cli_version=version,
        parent_env={**os.environ, "ANTHROPIC_API_KEY": PLANTED_KEY},
    )


def _ledger(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_pilot_runs_both_arms_and_keeps_the_key_away(
    tmp_path: Path, claude_code: ClaudeCode, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each pinned Claude Code (2.1.296 and 2.1.328): its stream is accepted and both arms complete."""
    output = tmp_path / "out" / "ledger.json"
    output.parent.mkdir()
    progress = io.StringIO()
    with RehearsalServer() as server:
        request = replace(_request(tmp_path, server, output, claude_code.binary, claude_code.version),
                          progress=ConsoleProgress(Console(file=progress, width=400)))
        summary = run_cli_study(request)
        requests = server.requests
    assert summary.status == "awaiting-adjudication"
    ledger = _ledger(output)
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    assert ledger["status"] == "awaiting-adjudication"
    assert ledger["adjudication"] == {"method": "agent", "humanReview": False}
    observations = ledger["observations"]
    assert [o["scenario"] for o in observations] == ["repository-only", "doc-bridge-mcp"]
    assert all(o["cliVersion"].split()[0] == o["expectedCliVersion"] == claude_code.version for o in observations)
    assert all(o["status"] == "completed" for o in observations)
    assert all(o["correctness"] is None and o["adjudication"] == "pending" for o in observations)
    repository_only, doc_bridge = observations
    assert not any(name.startswith("mcp__") for name in repository_only["toolCallsByName"])
    assert repository_only["mcp_servers"] == []
    mcp_calls = {k: v for k, v in doc_bridge["toolCallsByName"].items() if k.startswith("mcp__doc-bridge__")}
    assert sum(mcp_calls.values()) >= 1
    assert doc_bridge["mcp_servers"][0]["status"] == "connected"
    assert "mcp__doc-bridge__doc_write" not in doc_bridge["tools"]
    assert ledger["mcpServer"]["deniedTools"] == ["mcp__doc-bridge__doc_write"]
    for observation in observations:
        assert observation["answer"], "a completed attempt keeps its private answer"
        assert observation["chargedUsd"] == max(observation["cliReportedCostUsd"], observation["computedCostUsd"])
        assert observation["inputTokens"] > 0 and observation["usageComplete"] is True
    assert repository_only["exportTreeSha256"] == doc_bridge["exportTreeSha256"], "both arms see the same corpus"
    assert repository_only["exportFiles"] == doc_bridge["exportFiles"] > 0
    # Both arms ran in bubblewrap (the default) with the file tools confined to the export: reading
    # outside it is no longer a gap the record admits.
    assert ledger["containment"].startswith("bwrap ")
    for observation in observations:
        assert observation["containment"] == "bwrap"
        assert any("confined to the export (--restricted)" in text for text in observation["isolationAchieved"])
        assert any(text.startswith("bubblewrap:") for text in observation["isolationAchieved"])
        assert not any("outside the export" in text for text in observation["isolationNotAchieved"])
    assert any("private HOME" in text for text in doc_bridge["isolationAchieved"])
    charged = sum(Decimal(str(o["chargedUsd"])) for o in observations)
    assert Decimal(str(ledger["budget"]["spent"])) == charged
    # Issue 17 item 8: the ledger's charges, the JSON line, the last progress line, the table and the
    # report all print the same spend, to the last digit (one rounding rule: half-up to 6 decimals).
    assert Decimal(repr(summary.line["spentUsd"])) == charged
    shown = f"{charged.quantize(Decimal('0.000001'), rounding='ROUND_HALF_UP')}"
    assert re.findall(r"spent (\d+\.\d+) of", progress.getvalue())[-1] == shown
    with pytest.MonkeyPatch.context() as wide:
        wide.setenv("COLUMNS", "300")  # one table row per line
        print_summary_table(summary)
    assert f"{shown} notional USD (rehearsal: nothing was paid) of a 1.00 USD cap" in capsys.readouterr().err
    assert re.search(rf"\| spent \| {re.escape(shown)} ", build_report(output, output_format="md"))
    # The child never had the key: the CLI would otherwise have sent it as x-api-key.
    assert requests, "the CLI talked to the rehearsal server"
    assert not any(r.has_x_api_key for r in requests)
    assert all(r.has_authorization for r in requests)
    assert PLANTED_KEY not in output.read_text(encoding="utf-8")
    assert PLANTED_KEY not in json.dumps(summary.line)


def test_api_failure_blocks_the_run_and_keeps_the_reservation(tmp_path: Path, claude_bin: Path) -> None:
    output = tmp_path / "ledger.json"
    with RehearsalServer(fail_with_status=500) as server:
        summary = run_cli_study(_request(tmp_path, server, output, claude_bin))
    assert summary.status == "blocked"
    ledger = _ledger(output)
    assert ledger["status"] == "blocked"
    [observation] = ledger["observations"]
    assert observation["status"] == "failed"
    assert observation["answer"] == ""
    assert observation["chargedUsd"] == 0.1
    assert ledger["budget"]["spent"] == 0.1
    assert summary.line["extrapolatedFullRunUsd"] is None


def test_demo_command_end_to_end(tmp_path: Path, claude_bin: Path) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": PLANTED_KEY, "AGENTSTUDY_CLAUDE_BIN": str(claude_bin)}
    directory = tmp_path / "demo"
    completed = subprocess.run(
        [sys.executable, "-m", "agentstudy", "demo", "--output-dir", str(directory)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    summary = json.loads(completed.stdout.strip().splitlines()[-1])
    assert summary["attempts"] == 2
    assert summary["byStatus"] == {"completed": 2}
    assert summary["byScenario"] == {"repository-only": 1, "doc-bridge-mcp": 1}
    ledger_path = directory / "ledger.json"
    assert stat.S_IMODE(ledger_path.stat().st_mode) == 0o600
    for text in (completed.stdout, completed.stderr, ledger_path.read_text(encoding="utf-8")):
        assert PLANTED_KEY not in text
    for report in ("report.html", "report.md"):
        assert stat.S_IMODE((directory / report).stat().st_mode) == 0o600
    assert not (directory / "ledger.adjudication.json").exists(), "adjudication only on request"
    answers = [o["answer"] for o in _ledger(ledger_path)["observations"]]
    for answer in answers:
        assert answer not in completed.stdout and answer not in completed.stderr
    again = invoke_agentstudy("demo", "--output-dir", str(directory), env=env)  # a refusal: no process needed
    assert again.returncode == 2
    assert "not empty" in again.stderr


def test_demo_with_adjudication_scores_both_attempts_and_reports_them(tmp_path: Path,
                                                                     claude_code: ClaudeCode) -> None:
    """The demo command, pilot and adjudication, with each pinned Claude Code (2.1.296 and 2.1.328)."""
    directory = tmp_path / "demo"
    # In this process: what is read here is files, not the process (test_demo_command_end_to_end runs one).
    completed = invoke_agentstudy("demo", "--adjudicate", "--output-dir", str(directory),
                                  "--claude-bin", str(claude_code.binary), "--agent-version", claude_code.version)
    assert completed.returncode == 0, completed.stderr
    companion = json.loads((directory / "ledger.adjudication.json").read_text(encoding="utf-8"))
    ledger_bytes = (directory / "ledger.json").read_bytes()
    assert {o["expectedCliVersion"] for o in json.loads(ledger_bytes)["observations"]} == {claude_code.version}
    assert companion["ledgerSha256"] == hashlib.sha256(ledger_bytes).hexdigest()
    assert companion["status"] == "adjudicated"
    assert [item["status"] for item in companion["items"]] == ["scored", "scored"]
    assert companion["humanReview"] is False and companion["method"] == "agent"
    markdown = (directory / "report.md").read_text(encoding="utf-8")
    assert "Adjudication was by an agent with no human review." in markdown
    assert "bound to this ledger's SHA-256 (verified)" in markdown


def test_the_demo_refuses_an_agent_version_without_an_agent_binary(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agentstudy.cli import main

    result = CliRunner().invoke(main, ["demo", "--transport", "http", "--agent-version", "2.1.328", "--output-dir",
                                       str(tmp_path / "demo")])
    assert result.exit_code == 2 and "--agent-version is the cli agent's" in result.output
    assert not (tmp_path / "demo").exists()
