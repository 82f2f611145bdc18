"""``agentstudy minimal --concurrency N`` with the CLI transport (issue 19, items 1-2), against the fake ``claude``.

The LiteLLM #34732 race reproduced against us: a cap that fits exactly three reservations, eight
attempts allowed in flight, each holding its reservation for two seconds. Exactly three are
admitted at once, never a fourth, and the run ends when the cap is spent with spent <= cap. And
the stop rule: the first stopping outcome stops admission, running attempts finish and are
recorded, and the run ends blocked naming that attempt.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.ledger_journal import read_ledger
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger_bytes
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.schedule import PilotSize, build_schedule
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from concurrent_ledgers import peak_overlap, verified

from fakes import FakeClaude


def _run(study: ExampleStudy, fake: FakeClaude, ledger: Path, *flags: str) -> Any:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    args = ["minimal", "--manifest", str(study.manifest_path), "--transport", "cli", "--approve-budget", *roots,
            "--output", str(ledger), "--claude-bin", str(fake.path), "--model", "claude-haiku-5-5", *flags]
    return CliRunner().invoke(main, args, catch_exceptions=False)


def _pilot(repetitions: int) -> list[str]:
    """The first task's pilot with ``repetitions`` repetitions (2 x ``repetitions`` attempts): one corpus, so the
    preflight starts one MCP server and one probe, where the full schedule's three corpora start three of each."""
    return ["--pilot", "--pilot-repetitions", str(repetitions)]


def _pilot_schedule(study: ExampleStudy, repetitions: int) -> list[tuple[str, str, int]]:
    """The (task, arm, repetition) order of :func:`_pilot`'s schedule."""
    schedule = build_schedule(load_manifest(study.manifest_path).manifest, "pilot", PilotSize(1, repetitions))
    return [(e.task_id, e.scenario, e.repetition) for e in schedule]


def _attempt_calls(fake: FakeClaude) -> int:
    """How many attempts the fake was started for (``--version`` probes left out; append-only, so race-free)."""
    return sum(call != ["--version"] for call in fake.calls)


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def test_a_cap_that_fits_three_admits_exactly_three_at_concurrency_eight(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path
) -> None:
    fake_claude.behave(mode="sleep", sleepSeconds=2, reportedCost=0.1)  # each attempt spends its whole limit
    ledger_path = tmp_path / "ledger.json"
    result = _run(study, fake_claude, ledger_path, *_pilot(2), "--concurrency", "8",  # 4 attempts, 8 allowed
                  "--attempt-budget-usd", "0.1", "--budget-usd", "0.3")
    assert result.exit_code != 0, result.output  # blocked: the cap was spent before the schedule ended
    ledger = verified(ledger_path)
    assert ledger.concurrency == 8 and ledger.open_reservations == []
    assert _attempt_calls(fake_claude) == 3  # never a fourth child
    assert [o.status for o in ledger.observations] == ["completed"] * 3
    assert peak_overlap(ledger) == 3  # all three held their reservation at the same time
    assert ledger.status == "blocked"
    assert ledger.stop_reason == "the per-attempt limit does not fit under the remaining cap"
    assert Decimal(str(ledger.budget.spent)) == Decimal("0.3") <= Decimal(str(ledger.budget.cap))
    assert not ledger.budget.cumulative_cap_exceeded
    assert [(o.task_id, o.scenario, o.repetition) for o in ledger.observations] == _pilot_schedule(
        study, 2)[:3]  # admission follows the schedule


@dataclass(frozen=True)
class StoppedRun:
    """One six-attempt pilot at ``--concurrency 3`` whose first MCP-arm attempt fails (``first_mcp``, 1-based),
    shared by the tests that read its ledger (they never write it): the fake that ran it and the ledger path."""

    study: ExampleStudy
    fake: FakeClaude
    ledger: Path
    first_mcp: int


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> StoppedRun:
    """Run once per module: the stop-rule test and the width-verification test read the same ledger."""
    root = tmp_path_factory.mktemp("stopped-run")
    study = build_example_study(root / "study")
    fake = FakeClaude(root / "fake-claude")
    first_mcp = next(i for i, (_, arm, _) in enumerate(_pilot_schedule(study, 3), start=1) if arm == "doc-bridge-mcp")
    fake.behave(mode="sleep", sleepSeconds=1.5, failWhenArgContains='"command"')
    ledger_path = root / "ledger.json"
    with pytest.MonkeyPatch.context() as patch:  # as the ``fake_claude`` fixture: its records live beside it
        patch.setenv("AGENTSTUDY_CONTAINMENT", "restricted")
        result = _run(study, fake, ledger_path, *_pilot(3), "--concurrency", "3", "--budget-usd", "5")
    assert result.exit_code != 0, result.output
    return StoppedRun(study, fake, ledger_path, first_mcp)


def test_the_first_stopping_outcome_stops_admission_and_running_attempts_are_recorded(
    stopped_run: StoppedRun,
) -> None:
    first_mcp = stopped_run.first_mcp
    ledger = verified(stopped_run.ledger)
    statuses = [o.status for o in ledger.observations]
    assert statuses[first_mcp - 1] != "completed"
    assert statuses[: first_mcp - 1] == ["completed"] * (first_mcp - 1)
    after = len(statuses) - first_mcp
    assert 0 <= after <= 2  # only attempts already in flight when it failed
    assert _attempt_calls(stopped_run.fake) == len(statuses)
    assert ledger.stop_reason == f"attempt {first_mcp} ended {statuses[first_mcp - 1]}"
    assert ledger.status == "blocked"


class _SpentRecorder:
    def __init__(self) -> None:
        self.spent: list[Decimal] = []

    def attempt_started(self, attempt: object) -> None:
        pass

    def attempt_settled(self, attempt: object, status: str, tool_calls: int, charged_usd: Decimal,
                        spent_usd: Decimal, cap_usd: Decimal) -> None:
        self.spent.append(spent_usd)


def test_the_progress_spend_never_falls_while_other_attempts_hold_reservations(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh user's 36-attempt run at --concurrency 4 printed "spent 0.50", "0.41", ... "0.04": the settled
    line counted the other attempts' open reservations. It shows what the settled attempts cost."""
    from agentstudy.commands import view as terminal_view

    recorder = _SpentRecorder()
    monkeypatch.setattr(terminal_view, "progress_for_terminal", lambda *_: recorder)
    fake_claude.behave(mode="sleep", sleepSeconds=0.5, reportedCost=0.001)
    ledger_path = tmp_path / "ledger.json"
    result = _run(study, fake_claude, ledger_path, *_pilot(3), "--concurrency", "4", "--budget-usd", "1")
    assert result.exit_code == 0, result.output
    assert len(recorder.spent) == 6 and recorder.spent == sorted(recorder.spent)
    assert all(s <= Decimal("0.006") + Decimal("0.01") for s in recorder.spent)  # never a 0.10 reservation
    assert recorder.spent[-1] == Decimal(str(verified(ledger_path).budget.spent))


def test_concurrency_one_writes_the_sequential_ledger(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path
) -> None:
    ledger_path = tmp_path / "ledger.json"
    result = _run(study, fake_claude, ledger_path, "--pilot", "--budget-usd", "1", "--concurrency", "1")
    assert result.exit_code == 0, result.output
    document = json.loads(ledger_path.read_bytes())
    assert "concurrency" not in document and "openReservations" not in document
    assert all("startedAt" not in o and "endedAt" not in o for o in document["observations"])


def test_verification_holds_a_concurrent_ledger_to_its_width(stopped_run: StoppedRun) -> None:
    ledger_path = stopped_run.ledger
    document = json.loads(ledger_path.read_bytes())
    assert verify_ledger_bytes(ledger_path.read_bytes()).problems == ()

    def problems(**changes: Any) -> tuple[str, ...]:
        changed = {k: v for k, v in {**document, **changes}.items() if k not in ("hashAlgo", "ledgerHash")}
        return verify_ledger_bytes(json.dumps(seal_ledger(changed)).encode()).problems

    observations = document["observations"]
    stopped = next(i for i, o in enumerate(observations) if o["status"] != "completed")
    assert all(o["startedAt"] <= observations[stopped]["endedAt"] for o in observations)
    late = [dict(o, startedAt="2999-01-01T00:00:00.000Z", endedAt="2999-01-01T00:00:01.000Z")
            if i == len(observations) - 1 and i != stopped else o for i, o in enumerate(observations)]
    if len(observations) - 1 != stopped:
        assert any("which stops the run" in p for p in problems(observations=late))
    together = [dict(o, startedAt="2026-01-01T00:00:00.000Z", endedAt="2026-01-01T00:00:09.000Z")
                for o in observations]
    assert len(observations) >= 2
    assert any(f"{len(observations)} attempts ran at once at concurrency {len(observations) - 1}" in p
               for p in problems(observations=together, concurrency=len(observations) - 1))
    untimed = [{k: v for k, v in o.items() if k != "endedAt"} for o in observations]
    assert any("records startedAt and endedAt" in p for p in problems(observations=untimed))
    extra = {"taskId": "nope", "scenario": "baseline", "repetition": 1, "reservedUsd": 0.1, "chargedUsd": 0.0}
    assert any("budget.spent" in p for p in problems(openReservations=[extra]))
    assert any("without concurrency" in p for p in problems(concurrency=None))


def _one_corpus_study(study: ExampleStudy, dest: Path) -> tuple[Path, dict[str, Path]]:
    """A study file of 36 attempts on one corpus (the example's two ``lantern-cache`` tasks cycled to six, ids
    ``…-2``, ``…-3`` for the copies; three repetitions) and its one root: the seed manifest's 36-attempt walk, with
    one MCP server and one probe in its preflight where the seed's three corpora start three of each."""
    document = json.loads((Path(__file__).resolve().parents[1] / "src/agentstudy/rehearsal/example-study.json")
                          .read_text(encoding="utf-8"))
    repository = "lantern-cache"
    base = [task for task in document["tasks"] if task["repository"] == repository]
    document["repositories"] = {repository: document["repositories"][repository]}
    document["tasks"] = [{**base[i % len(base)], "id": base[i % len(base)]["id"] + (
        f"-{i // len(base) + 1}" if i >= len(base) else "")} for i in range(6)]
    path = dest / "one-corpus-study.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path, {repository: study.roots[repository]}


KILL_MOMENTS_S = (0.3, 0.8, 1.3, 1.8, 2.4, 3.0)
"""The moments (s after the ledger appeared: its walk has begun) at which a concurrent run is killed: 0.3-3 s at
steps of at most 0.6 s. Each kill is a whole run; the nine distinct seeded draws of before spanned 0.44-2.99 s with
gaps of up to 0.64 s, so this grid covers the same span with no wider gap. (Measured: a kill at 0.0 s can land
after the running snapshot, which names its journal, and before the journal exists; that window is not this
test's subject.)"""


@pytest.mark.parametrize("delay_s", KILL_MOMENTS_S)
def test_sigkill_of_a_concurrent_run_leaves_a_ledger_that_verifies(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path, delay_s: float
) -> None:
    fake_claude.behave(mode="sleep", sleepSeconds=0.3)
    ledger_path = tmp_path / "out" / "ledger.json"
    ledger_path.parent.mkdir()
    scratch = tmp_path / "runner-tmp"
    scratch.mkdir()
    manifest, one_root = _one_corpus_study(study, tmp_path)
    roots = [f"--root={name}={path}" for name, path in one_root.items()]
    command = [sys.executable, "-m", "agentstudy", "minimal", "--manifest", str(manifest), "--run",
               "--transport", "cli", "--approve-budget", *roots, "--output", str(ledger_path), "--claude-bin",
               str(fake_claude.path), "--model", "claude-haiku-5-5", "--budget-usd", "1", "--concurrency", "4"]
    runner = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "TMPDIR": str(scratch)})
    deadline = time.monotonic() + 120
    while not ledger_path.exists() and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ledger_path.exists(), "the run never created its ledger"
    with contextlib.suppress(subprocess.TimeoutExpired):
        runner.wait(timeout=delay_s)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    data = read_ledger(ledger_path, ledger_path.read_bytes()).data
    assert verify_ledger_bytes(data).problems == ()
    ledger = MinimalLedger.model_validate(json.loads(data))
    opened = ledger.open_reservations or []
    charged = sum((Decimal(str(o.charged_usd)) for o in ledger.observations), Decimal(0))
    held = sum((Decimal(str(r.reserved_usd)) for r in opened), Decimal(0))
    assert Decimal(str(ledger.budget.spent)) == charged + held <= Decimal(str(ledger.budget.cap))
