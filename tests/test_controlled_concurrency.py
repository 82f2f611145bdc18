"""``agentstudy run --concurrency N`` and ``adjudicate-controlled --concurrency N`` (issue 19, item 1).

Real parts: the example study, the scripted rehearsal provider and adjudicator as child processes,
paced with ``--latency-ms`` so executions overlap, and a ``--trace`` file each child appends its
start and end to (the count of children at once comes from it, never from a clock in the test).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.records import STUDY_LEDGER_VERSION
from agentstudy.rehearsal.controlled.example import ControlledExample, build_controlled_example
from test_controlled_run_support import cli, run_args

SRC = Path(__file__).resolve().parents[1] / "src"
LATENCY = ("--latency-ms", "300")
TIMING = frozenset({"observedAt", "durationMs", "firstEvidenceLatencyMs", "timeToFirstEvidenceMs", "stdoutHash",
                    "contentHash", "adjudicatorLatencyMs", "outputTokens", "responseBytes",
                    "adjudicatorInputTokens", "adjudicatorOutputTokens"})
"""Fields that depend on when and how fast a child ran: the provider's answer carries its latency in ms,
so its stdout hash, its size and its estimated output tokens (ceil(bytes / 4)) change with the digits; the
adjudicator reads that answer, so its estimated input and output tokens change with them too (seen in CI:
one item's adjudicatorInputTokens differed between two runs of the same plan)."""


def peak_at_once(trace: Path) -> int:
    """The most children between their ``start`` and ``end`` lines at one instant (an end frees first)."""
    events = sorted((int(stamp), kind == "start") for kind, stamp in
                    (line.split() for line in trace.read_text(encoding="utf-8").splitlines()))
    running = peak = 0
    for _, starts in events:
        running += 1 if starts else -1
        peak = max(peak, running)
    return peak


def untimed(value: Any) -> Any:
    """``value`` without the timing fields, recursively."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if key not in TIMING}
    if isinstance(value, list):
        return [untimed(item) for item in value]
    return value


def observations(path: Path) -> list[Any]:
    """The ledger's observations without their timing fields, in ledger order."""
    return [untimed(item) for item in json.loads(path.read_text(encoding="utf-8"))["observations"]]


@pytest.fixture(scope="module")
def paced(tmp_path_factory: pytest.TempPathFactory) -> tuple[ControlledExample, Path, Path]:
    """The example study whose provider and adjudicator answer after 300 ms, tracing into two files."""
    base = tmp_path_factory.mktemp("paced")
    runs, judges = base / "provider.trace", base / "adjudicator.trace"
    example = build_controlled_example(base / "study", provider_args=(*LATENCY, "--trace", str(runs)),
                                       adjudicator_args=(*LATENCY, "--trace", str(judges)))
    return example, runs, judges


def test_three_at_once_records_what_one_at_a_time_records(paced: tuple[ControlledExample, Path, Path],
                                                          tmp_path: Path) -> None:
    example, runs, judges = paced
    one, three = tmp_path / "one.json", tmp_path / "three.json"
    assert cli(*run_args(example, one)).exit_code == 0
    assert peak_at_once(runs) == 1
    runs.unlink()
    ran = cli(*run_args(example, three, "--concurrency", "3"))
    assert ran.exit_code == 0, ran.output
    assert peak_at_once(runs) == 3  # twelve 300 ms children, three slots: they overlap, never a fourth
    assert len(observations(one)) == 12
    assert observations(three) == observations(one)  # same observations, same (plan) order
    assert cli("ledger", str(three)).exit_code == 0

    judged_one, judged_three = tmp_path / "judged-one.json", tmp_path / "judged-three.json"
    base = ["adjudicate-controlled", str(one), str(example.suite), "--adjudicator", str(example.providers)]
    assert cli(*base, "--output", str(judged_one)).exit_code == 0
    assert peak_at_once(judges) == 1
    judges.unlink()
    judged = cli(*base, "--output", str(judged_three), "--concurrency", "3", "--json")
    assert judged.exit_code == 0, judged.output
    assert json.loads(judged.stdout)["summary"]["byAdjudication"] == {"automated": 12}
    assert peak_at_once(judges) == 3
    assert observations(judged_three) == observations(judged_one)
    assert cli("ledger", str(judged_three)).exit_code == 0


def _wait_for_starts(trace: Path, count: int, runner: subprocess.Popen[bytes]) -> None:
    for _ in range(1200):
        if trace.exists() and trace.read_text(encoding="utf-8").count("start") >= count:
            return
        assert runner.poll() is None, "the run ended before it was interrupted"
        time.sleep(0.05)
    pytest.fail(f"fewer than {count} children started")


def test_ctrl_c_leaves_a_verifying_ledger_and_a_rerun_completes_it(tmp_path: Path) -> None:
    trace = tmp_path / "provider.trace"
    example = build_controlled_example(tmp_path / "study", provider_args=("--latency-ms", "1500",
                                                                          "--trace", str(trace)))
    ledger = tmp_path / "ledger.json"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with (tmp_path / "stderr").open("wb") as stderr:
        command = [sys.executable, "-m", "agentstudy", *run_args(example, ledger, "--concurrency", "3")]
        runner = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        try:
            _wait_for_starts(trace, 4, runner)  # the first three are done or ending: a fourth runs now
            runner.send_signal(signal.SIGINT)
            assert runner.wait(timeout=60) == 130
        finally:
            if runner.poll() is None:
                runner.kill()
    assert "stopped by SIGINT" in (tmp_path / "stderr").read_text(encoding="utf-8")
    assert cli("ledger", str(ledger)).exit_code == 0
    kept = json.loads(ledger.read_text(encoding="utf-8"))["observations"]
    assert 1 <= len(kept) < 12
    assert {item["execution"]["status"] for item in kept} == {"completed"}  # an interrupted one is not recorded
    rerun = cli(*run_args(example, ledger, "--concurrency", "3", "--json"))
    assert rerun.exit_code == 0, rerun.output
    summary = json.loads(rerun.stdout)["summary"]
    assert summary["skipped"] == len(kept) and summary["executed"] == 12 - len(kept)
    assert len(json.loads(ledger.read_text(encoding="utf-8"))["observations"]) == 12


@pytest.mark.parametrize("command", ["run", "adjudicate-controlled", "adjudicate"])
def test_concurrency_is_offered_and_bounded(command: str, tmp_path: Path) -> None:
    assert "--concurrency" in cli(command, "--help").stdout
    refused = cli(command, str(tmp_path / "missing.json"), "--concurrency", "0")
    assert refused.exit_code == 2 and "--concurrency" in refused.stderr
    assert cli(command, str(tmp_path / "missing.json"), "--concurrency", "33").exit_code == 2


def test_the_adjudication_latency_needs_the_rehearsal(tmp_path: Path) -> None:
    manifest = Path(__file__).resolve().parents[1] / "src" / "agentstudy" / "rehearsal" / "example-manifest.json"
    minimal = tmp_path / "minimal.json"
    minimal.write_text(json.dumps({"version": STUDY_LEDGER_VERSION, "observations": []}), encoding="utf-8")
    result = cli("adjudicate", str(minimal), "--manifest", str(manifest), "--rehearsal-latency-ms", "10")
    assert result.exit_code == 2
    assert "--rehearsal-latency-ms needs --rehearsal" in result.stderr
