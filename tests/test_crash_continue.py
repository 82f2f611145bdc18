"""A crashed run can be continued (issue 40 break 5): a real study-file run (http rehearsal, a subprocess) is
SIGKILLed after its second observation; ``--continue-from`` refuses it while it is still ``running``;
``agentstudy ledger --close`` seals it as crashed without changing any observation (its open reservation
counted as spent in full, its journal kept); then the continuation runs only the cells it did not complete, and
the two ledgers report as one chain."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.ledger_journal import read_ledger
from agentstudy.io.ledger_store import journal_path
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.rehearsal.example_study import build_example_study
from concurrent_ledgers import live_state

from checkout_run import SRC
from one_corpus import one_corpus


def _args(manifest: Path, roots: dict[str, Path], output: Path, *extra: str) -> list[str]:
    return ["study", "--manifest", str(manifest), "--run", "--transport", "http", "--rehearsal",
            *(f"--root={name}={path}" for name, path in roots.items()), "--output", str(output),
            "--model", "claude-haiku-5-5", "--budget-usd", "1", "--containment", "restricted", *extra]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path], Path]:
    dest = tmp_path_factory.mktemp("crash")
    # one corpus, its two tasks, one repetition: 4 attempts, enough for a kill after two with the third open, and
    # each run's preflight starts one MCP server (issue 42 item 7)
    study = one_corpus(build_example_study(dest / "study"))
    document = json.loads(study.manifest_path.read_text())
    document["repetitions"] = 1
    manifest = dest / "study.json"
    manifest.write_text(json.dumps(document))
    ledger = dest / "r1.json"
    command = [sys.executable, "-m", "agentstudy", *_args(manifest, study.roots, ledger,
                                                           "--rehearsal-latency-ms", "400")]
    runner = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(SRC)},
                              start_new_session=True)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            assert runner.poll() is None, "the run ended before it was killed"
            rebuilt = live_state(ledger) if journal_path(ledger).exists() else None
            if rebuilt is not None and len(rebuilt["observations"]) >= 2 and rebuilt.get("openReservation") is not None:
                break
            time.sleep(0.02)
    finally:
        os.killpg(runner.pid, signal.SIGKILL)
        runner.wait()
    return manifest, study.roots, ledger


def test_a_crashed_run_is_closed_and_continued_without_paying_twice(
        crashed: tuple[Path, dict[str, Path], Path], tmp_path: Path) -> None:
    manifest, roots, ledger = crashed
    before = json.loads(read_ledger(ledger, ledger.read_bytes()).data)
    assert before["status"] == "running" and before["openReservation"] is not None
    refused = CliRunner().invoke(main, _args(manifest, roots, tmp_path / "early.json", "--continue-from", str(ledger)))
    assert refused.exit_code == 2 and "agentstudy ledger --close" in refused.output
    closing = CliRunner().invoke(main, ["ledger", str(ledger), "--close"])
    assert closing.exit_code == 0, closing.output
    assert "counted as spent in full" in closing.output
    closed = json.loads(ledger.read_bytes())
    assert verify_ledger_bytes(ledger.read_bytes()).problems == ()
    assert closed["status"] == "blocked" and closed["stopReason"].startswith("crashed:")
    assert closed["observations"] == before["observations"]
    assert closed["budget"] == before["budget"] and closed["openReservation"] == before["openReservation"]
    assert not journal_path(ledger).exists() and journal_path(ledger).with_name("r1.json.journal.closed").exists()
    again = CliRunner().invoke(main, ["ledger", str(ledger), "--close"])
    assert again.exit_code == 2 and "not running" in again.output
    second = tmp_path / "r2.json"
    result = CliRunner().invoke(main, _args(manifest, roots, second, "--continue-from", str(ledger)))
    assert result.exit_code == 0, result.output
    r2 = json.loads(second.read_bytes())
    done = {(o["taskId"], o["scenario"]) for o in closed["observations"] if o["status"] == "completed"}
    again_run = {(o["taskId"], o["scenario"]) for o in r2["observations"]}
    assert not done & again_run and len(done | again_run) == 4
    assert r2["continues"]["completedBefore"] == len(done)
    report = CliRunner().invoke(main, ["report", str(ledger), str(second), "--format", "json"])
    assert report.exit_code == 0, report.output
    assert json.loads(report.stdout)["chain"] == {"complete": True, "missing": []}
