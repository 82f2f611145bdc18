"""The failure reason of an attempt is never lost (issue 16, deliverable 7).

Truncation, a timeout, a binary that cannot start and a child stopped by a signal each leave
their reason on the CLI observation as ``statusReason`` (our own short words), ``agentstudy
report`` shows it, ``agentstudy transcript`` prints it for ``--timed-out`` and truncated
inputs, and ledgers written before the field still load. Real parts: git corpora in
``tmp_path``, the ``agentstudy`` command (in process through click's runner: the attempt's own child is the
fake ``claude`` of ``tests/fakes.py``, a real subprocess).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.records import CliObservation
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.runners.cli_request import CliRunRequest
from agentstudy.runners.minimal import run_cli_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings

from fakes import FakeClaude

MODEL = "claude-haiku-5-5"
TRUNCATED = "stdout went past its 4 MiB bound and was truncated"
NOT_STARTED = "the executable could not be started"
CLEAN = (Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
         / "01-read-readme-apikey.stdout.jsonl")


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def run_agentstudy(*args: str) -> subprocess.CompletedProcess[str]:
    """``agentstudy args`` in this process: its exit code, stdout and stderr as a finished subprocess's."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return subprocess.CompletedProcess(["agentstudy", *args], result.exit_code, result.stdout, result.stderr)


def _minimal(study: ExampleStudy, fake: FakeClaude, output: Path) -> subprocess.CompletedProcess[str]:
    return run_agentstudy(
        "minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "cli", "--approve-budget",
        *(f"--root={name}={path}" for name, path in study.roots.items()), "--output", str(output),
        "--claude-bin", str(fake.path), "--model", MODEL, "--budget-usd", "1",
    )


def _first_observation(output: Path) -> dict[str, Any]:
    ledger = json.loads(output.read_text(encoding="utf-8"))
    assert ledger["status"] == "blocked" and len(ledger["observations"]) == 1, "the pilot stops at the failure"
    observation: dict[str, Any] = ledger["observations"][0]
    return observation


def _report(ledger: Path, *flags: str) -> str:
    result = run_agentstudy("report", str(ledger), *flags)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_valid_transcript_then_10_mb_is_failed_and_the_report_says_why(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude
) -> None:
    """The break: the reason (stdout over 4 MiB) was dropped; the report said "no further reason recorded"."""
    fake_claude.behave(mode="ok", trailingFloodBytes=10_000_000)
    output = tmp_path / "ledger.json"
    result = _minimal(study, fake_claude, output)
    assert result.returncode == 1, result.stderr
    observation = _first_observation(output)
    assert (observation["status"], observation["statusReason"]) == ("failed", TRUNCATED)
    assert (observation["cliSubtype"], observation["exitCode"]) == ("success", 0), "the transcript itself was fine"
    report = _report(output)
    assert TRUNCATED in report
    assert "no further reason recorded" not in report


def test_a_binary_that_cannot_start_leaves_its_reason(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude
) -> None:
    fake_claude.behave(mode="ok", dropExecAfterVersion=True)  # passes the version probe, then is no executable
    output = tmp_path / "ledger.json"
    result = _minimal(study, fake_claude, output)
    assert result.returncode == 1, result.stderr
    assert not os.access(fake_claude.path, os.X_OK)
    observation = _first_observation(output)
    assert (observation["status"], observation["statusReason"], observation["exitCode"]) == (
        "failed", NOT_STARTED, None)
    assert fake_claude.records == [], "the attempt never ran"
    assert NOT_STARTED in _report(output)


def test_a_child_stopped_by_a_signal_is_named_by_its_signal(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude
) -> None:
    fake_claude.behave(mode="ok", selfSignal=int(signal.SIGTERM))
    output = tmp_path / "ledger.json"
    result = _minimal(study, fake_claude, output)
    assert result.returncode == 1, result.stderr
    observation = _first_observation(output)
    assert (observation["status"], observation["exitCode"]) == ("failed", -int(signal.SIGTERM))
    assert observation["statusReason"] == "stopped by signal SIGTERM"
    assert "stopped by signal SIGTERM" in _report(output)


def test_a_timeout_leaves_its_reason(tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude) -> None:
    """No flag sets the attempt timeout, so the run is started in process with a 1 s one."""
    fake_claude.behave(mode="sleep", sleepSeconds=60)
    output = tmp_path / "ledger.json"
    summary = run_cli_study(CliRunRequest(
        loaded=load_manifest(study.manifest_path), mode="pilot", roots=study.roots, output=output,
        settings=CliSettings(binary=fake_claude.path, model=MODEL, mcp=DEFAULT_MCP_SERVER, containment="restricted",
                             timeout_s=1.0),
        cap_usd=Decimal("1"), attempt_budget_usd=Decimal("0.10"), expected_cli_version="2.1.296",
        parent_env=dict(os.environ),
    ))
    assert summary.status == "blocked"
    observation = _first_observation(output)
    assert observation["status"] == "timed-out"
    assert observation["statusReason"] == "the attempt timed out after 1 s and its process group was killed"
    assert "timed out after 1 s" in _report(output)


def test_a_completed_attempt_records_no_reason_and_old_ledgers_still_load(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude
) -> None:
    output = tmp_path / "ledger.json"
    assert _minimal(study, fake_claude, output).returncode == 0
    ledger = json.loads(output.read_text(encoding="utf-8"))
    assert all("statusReason" not in o for o in ledger["observations"]), "omitted when unset"
    # A ledger of a failed attempt written before statusReason existed: the field is simply absent.
    fake_claude.behave(mode="exit", exitCode=3)
    failed = tmp_path / "failed.json"
    assert _minimal(study, fake_claude, failed).returncode == 1
    old = json.loads(failed.read_text(encoding="utf-8"))
    assert old["observations"][0]["statusReason"] == "exit code 3"
    del old["observations"][0]["statusReason"]
    CliObservation.model_validate(old["observations"][0])
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps(old, indent=2) + "\n", encoding="utf-8")
    report = _report(legacy, "--allow-unverified")  # edited by hand, as an old ledger: read only with the flag
    assert "exit code 3" in report, "older ledgers are explained through their other fields"
    assert report.count("exit code 3") == _report(failed).count("exit code 3"), "never said twice"


def test_transcript_prints_the_reason_of_a_timed_out_input() -> None:
    result = run_agentstudy("transcript", str(CLEAN), "--scenario", "repository-only", "--model",
                            "claude-haiku-4-5", "--timed-out", "--exit-code", "-9", "--json")
    assert result.returncode == 1, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "timed-out"
    assert record["statusReason"] == "the attempt timed out and its process group was killed"
