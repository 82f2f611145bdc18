"""An internal error after an attempt settles never loses its observation (issue 40, break 8's second half).

The break: an attempt completed and was charged, then keeping its transcript failed; the run stopped with
"internal error", its observation gone and its reservation left open. Now a port's ``observe`` that built the
observation and then failed raises ``ObservedThenFailed``: the real ``ConcurrentWalk`` records the observation,
releases its reservation, checkpoints, names the error in ``stopReason`` and only then stops.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest

from agentstudy.fsm.run import RunMachine
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.pricing.budget import reservation_for
from agentstudy.pricing.strict_cap import ReservationRule
from agentstudy.protocol.records import CliObservation, MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.cli_request import cli_port
from agentstudy.runners.concurrent_walk import ConcurrentWalk, ObservedThenFailed
from agentstudy.runners.progress import SilentProgress
from agentstudy.transports.cli import CliAttemptResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "property_tests"))
from walk_fakes import bare_observation, empty_cli_ledger


class _Store:
    """Keeps every checkpointed ledger's observations and open reservations."""

    def __init__(self) -> None:
        self.saved: list[tuple[int, int, str | None]] = []

    def record(self, ledger: MinimalLedger) -> None:
        self.saved.append((len(ledger.observations), len(ledger.open_reservations or []), ledger.stop_reason))


@pytest.mark.parametrize("width", [1, 3])
def test_the_observation_is_checkpointed_before_the_run_stops(width: int) -> None:
    schedule = tuple(ScheduleEntry(task_id=f"t{i}", scenario="repository-only", repetition=1, repository="r")
                     for i in range(30))
    limit = Decimal("0.10")

    def run_attempt(entry: ScheduleEntry) -> CliAttemptResult:
        time.sleep(0.05)  # paced, so admission is visibly stopped mid-schedule
        return CliAttemptResult(status="completed", reported_cost_usd=Decimal("0.01"), computed_cost=None,
                                setup_problems=(), cost_problem=None, exit_code=0, wall_time_ms=1, fields={})

    def observe(entry: ScheduleEntry, result: CliAttemptResult, status: str, reserved: Decimal, charged: Decimal,
                cap_exceeded: bool) -> CliObservation:
        built = bare_observation(entry, result, status, reserved, charged, cap_exceeded)
        if entry.task_id == "t2":
            raise ObservedThenFailed(built, FileExistsError("the transcript t2.jsonl already exists"))
        return built

    def unstarted(entry: ScheduleEntry, reason: str) -> CliAttemptResult:
        raise AssertionError("no body raises here")

    run = RunMachine(len(schedule), "cli")
    run.begin()
    ledger, store = empty_cli_ledger(), _Store()
    with ThreadPoolExecutor(max_workers=width) as pool, pytest.raises(ObservedThenFailed):
        ConcurrentWalk(run=run, ledger=ledger, store=cast(JournaledLedger, store), concurrency=width,
                       cap=Decimal("10"), limit=limit, reservation=reservation_for(limit),
                       port=cli_port(lambda entry: pool.submit(run_attempt, entry), observe,
                                     ReservationRule.for_cli(limit, "", strict=False), unstarted),
                       progress=SilentProgress()).walk(schedule)
    recorded: list[Any] = [o.task_id for o in ledger.observations]
    assert "t2" in recorded, "the settled attempt's observation is kept"
    count, opened, reason = store.saved[-1]
    assert count == len(recorded) and "t2" in recorded[:count]
    assert reason is not None and "already exists" in reason and "attempt 3" in reason
    assert opened == len(ledger.open_reservations or []) == 0, "the attempts in flight finished and were recorded"
    assert len(recorded) < len(schedule), "nothing was admitted after the error"
