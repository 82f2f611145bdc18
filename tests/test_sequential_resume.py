"""A sequential study killed before its stop goes on sequentially (issue 40, the chain of a sequential study; issue
41 item 7's one-sided construction): the 20-task rehearsal study is SIGKILLed (a real signal, one attempt at a time,
real HTTP on 127.0.0.1) after some looks and before the stop, its crashed ledger is sealed with
``agentstudy ledger --close``, and ``--continue-from`` it runs on under the chain's plan: the e-process is carried
over (never restarted) and the study stops at the same task with the same decision and e-values as an uninterrupted
run with the same seed. Both ledgers verify alone; no cell runs twice."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.ledger_journal import LedgerJournalError, read_ledger
from agentstudy.protocol.continuation import chain_problems
from concurrent_ledgers import verified
from sequential_study import study_command


def _command(study: Any, manifest: Path, output: Path, *extra: str) -> list[str]:
    return study_command(study, manifest, output, *extra)


def _killed_after(study: Any, manifest: Path, output: Path, looks: int) -> list[dict[str, Any]]:
    """Run the study in a child process and SIGKILL it once its ledger shows ``looks`` looks; the looks then."""
    runner = subprocess.Popen([sys.executable, "-m", "agentstudy", *_command(
        study, manifest, output, "--rehearsal-latency-ms", "300")], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 240
    try:
        while runner.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
            try:  # the snapshot may be caught between its write and its journal's
                seen = json.loads(read_ledger(output, output.read_bytes()).data)["sequential"]["looks"]
            except (OSError, ValueError, KeyError, LedgerJournalError):
                continue
            if len(seen) >= looks:
                break
        runner.send_signal(signal.SIGKILL)
    finally:
        runner.wait(timeout=60)
    assert runner.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    return seen


@pytest.fixture(scope="module")
def chain(sequential_stopped: tuple[Any, Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The uninterrupted run (shared), a run of the same study SIGKILLed after three looks and sealed with
    ``ledger --close``, and its continuation: the paths and the looks seen before the kill. Read only."""
    study, manifest, whole = sequential_stopped
    dest = tmp_path_factory.mktemp("resume")
    first = dest / "first.json"
    before_kill = _killed_after(study, manifest, first, 3)
    closed = CliRunner().invoke(main, ["ledger", "--close", str(first)], catch_exceptions=False)
    assert closed.exit_code == 0, closed.output
    second = dest / "second.json"  # no --sequential: the chain's block says how it goes on
    result = CliRunner().invoke(main, _command(study, manifest, second, "--continue-from", str(first)),
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return {"study": study, "manifest": manifest, "whole": whole, "first": first, "second": second,
            "beforeKill": before_kill}


def test_a_killed_sequential_study_continues_to_the_same_decision(chain: dict[str, Any], tmp_path: Path) -> None:
    study, manifest, first, second = chain["study"], chain["manifest"], chain["first"], chain["second"]
    uninterrupted = verified(chain["whole"]).sequential
    assert uninterrupted is not None and uninterrupted.stop_reason == "efficacy"
    assert uninterrupted.tasks_completed >= 5  # room to kill it before its stop

    before_kill = chain["beforeKill"]
    assert 3 <= len(before_kill) < uninterrupted.tasks_completed
    assert all(look["decision"] == "continue" for look in before_kill)
    crashed = verified(first)
    assert crashed.sequential is not None and crashed.sequential.stop_reason is None

    continued = verified(second)  # verifies alone: the carried observations replay the chain's looks
    record = continued.sequential
    assert record is not None and record.carried is not None
    assert len(record.carried) == sum(o.status == "completed" for o in crashed.observations)
    assert record.seed == uninterrupted.seed and record.task_order == uninterrupted.task_order
    assert record.construction == uninterrupted.construction == "magnitudeBet"
    assert crashed.sequential is not None and record.bet_size == crashed.sequential.bet_size == 0.648  # the chain's
    # The same decision at the same task, with the e-process carried over: every look equals the uninterrupted's.
    assert (record.stop_reason, record.tasks_completed, record.direction) == (
        uninterrupted.stop_reason, uninterrupted.tasks_completed, uninterrupted.direction)
    assert [(look.tasks, look.decision) for look in record.looks] == [
        (look.tasks, look.decision) for look in uninterrupted.looks]
    assert all(math.isclose(a.e_value, b.e_value, rel_tol=1e-12)
               for a, b in zip(record.looks, uninterrupted.looks, strict=True))
    # The continuation ran only the cells the crashed run did not complete; the chain is one study.
    own = {o.task_id for o in continued.observations}
    assert own.isdisjoint({o.task_id for o in crashed.observations if o.status == "completed"} - own)
    documents = [(path.name, "", json.loads(path.read_bytes())) for path in (first, second)]
    assert not [p for p in chain_problems(documents) if "completed in both" in p]
    assert len(crashed.observations) + len(continued.observations) >= 2 * uninterrupted.tasks_completed

    # The chain's report answers with the confidence sequence over every task of the study (carried ones first).
    machine = json.loads(CliRunner().invoke(main, ["report", str(first), str(second), "--format", "json"],
                                            catch_exceptions=False).output)
    assert machine["sequential"]["stopReason"] == "efficacy"
    sequence = machine["sequential"]["confidenceSequence"]
    assert sequence["low"] is not None and sequence["low"] > 0 and sequence["high"] is None
    charges = [o.charged_usd for o in (*crashed.observations, *continued.observations)]
    planned = Decimal(str(sum(Decimal(str(c)) for c in charges) / len(charges) * 40))  # 20 tasks x 2 arms, once
    assert abs(Decimal(str(machine["sequential"]["plannedUsd"])) - planned) < Decimal("1e-9")

    # Stopped now: a further continuation of the chain is refused with the stop's reason, nothing written.
    third = tmp_path / "third.json"
    refused = CliRunner().invoke(main, _command(study, manifest, third, "--continue-from", str(first),
                                                "--continue-from", str(second)), catch_exceptions=False)
    assert refused.exit_code == 2 and f"stopped for efficacy after {record.tasks_completed} tasks" in refused.output
    assert not third.exists()


def test_a_carried_observation_changed_is_refused_by_the_verifier(chain: dict[str, Any]) -> None:
    """The carried values are what the continuation's looks replay from: changing one changes the looks."""
    from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger

    document = json.loads(chain["second"].read_bytes())  # a copy in memory: the file stays as it is
    carried = document["sequential"]["carried"]
    carried[0]["value"] = carried[0]["value"] * 10
    problems = verify_ledger(seal_ledger(document)).problems
    assert any("looks" in p for p in problems), problems
    del document["continues"]
    document["sequential"]["carried"] = carried
    assert any("carried" in p or "plannedAttempts" in p for p in verify_ledger(seal_ledger(document)).problems)
