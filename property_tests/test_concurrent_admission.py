"""Concurrent admission properties (issue 19, item 3): the run machine and the budget under any interleaving.

``AdmissionMachine`` is a hypothesis state machine over the real authorities, ``RunMachine`` (admit /
halt / observe / stop_admission) and ``Budget`` (fits / reserve / settle), with rules admit, settle,
fail, crash (a checkpoint is read back) and signal, in any order and with any attempt finishing
first. It checks: spent + open reservations + the limit <= cap at every admission; nothing is
admitted after a stop; spent = settled charges + open reservations at every checkpoint.

``test_the_walk_keeps_its_invariants_at_every_checkpoint`` runs the real ``ConcurrentWalk``
(real worker threads, random outcomes, charges and small delays) with a store that checks, at
every checkpoint, the same invariants, that no child starts before its reservation is on disk,
that at most N children run at once, and that observations come in admission order.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from agentstudy.fsm.run import RunMachine
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.pricing.budget import Budget, reservation_for, settle_attempt
from agentstudy.pricing.strict_cap import ReservationRule
from agentstudy.protocol.ledger_concurrency import concurrency_problems
from agentstudy.protocol.records import CliObservation, MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.cli_request import cli_port
from agentstudy.runners.concurrent_walk import ConcurrentWalk
from agentstudy.runners.progress import SilentProgress
from agentstudy.transports.cli import CliAttemptResult
from walk_fakes import bare_observation, empty_cli_ledger

STATUSES = ("completed", "failed", "timed-out", "budget-exceeded", "invalid-setup", "invalid-cost")
micro = st.integers(0, 400).map(lambda n: Decimal(n).scaleb(-3))


class AdmissionMachine(RuleBasedStateMachine):
    """Admit / settle / fail / crash / signal against one cap, with up to 8 attempts in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.cap, self.limit, self.width, self.planned = Decimal("1.000"), Decimal("0.300"), 8, 20
        self.run = RunMachine(self.planned, "cli")
        self.run.begin()
        self.budget = Budget(cap=self.cap)
        self.flying: list[int] = []  # admission indexes still open, in admission order
        self.done: dict[int, tuple[str, Decimal]] = {}  # finished out of order, waiting for earlier ones
        self.charges = Decimal(0)
        self.stopped = False

    @precondition(lambda self: len(self.flying) - len(self.done) < self.width)  # a finished attempt frees its slot
    @rule()
    def admit(self) -> None:
        if not (self.run.may_admit() and self.budget.fits(self.limit)):
            return
        assert self.budget.spent + self.limit <= self.cap  # spent holds every open reservation
        self.budget = self.budget.reserve(reservation_for(self.limit))
        self.run.admit()
        self.flying.append(self.run.admitted)

    def _finish(self, pick: int, status: str, charged: Decimal) -> None:
        waiting = [i for i in self.flying if i not in self.done]
        if not waiting:
            return
        index = waiting[pick % len(waiting)]
        final, charge = settle_attempt(status, reservation_for(self.limit), charged, None)
        self.done[index] = (final, charge)
        if self.run.halt(index, final):
            self.stopped = True
        while self.flying and self.flying[0] in self.done:  # recorded in admission order
            head = self.flying.pop(0)
            final, charge = self.done.pop(head)
            self.budget = self.budget.settle(reservation_for(self.limit), charge)
            self.charges += charge
            self.run.observe(status=final)
            if self.budget.cap_exceeded:
                self.run.stop_admission()
                self.stopped = True

    @rule(pick=st.integers(0, 7), charged=micro)
    def settle(self, pick: int, charged: Decimal) -> None:
        self._finish(pick, "completed", charged)

    @rule(pick=st.integers(0, 7), status=st.sampled_from(STATUSES[1:]), charged=st.none() | micro)
    def fail(self, pick: int, status: str, charged: Decimal | None) -> None:
        self._finish(pick, status, charged if charged is not None else Decimal(0))

    @rule()
    def signal(self) -> None:
        self.run.stop_admission()
        self.stopped = True

    @rule()
    def crash(self) -> None:
        """What a checkpoint holds now must verify: spent = charges + every open reservation."""
        assert self.budget.spent == self.charges + reservation_for(self.limit) * len(self.flying)

    @invariant()
    def open_reservations_are_counted(self) -> None:
        assert self.budget.open_usd == reservation_for(self.limit) * len(self.flying)
        assert self.run.in_flight == len(self.flying)
        if self.stopped:
            assert not self.run.may_admit()


TestAdmissionMachine = AdmissionMachine.TestCase
TestAdmissionMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)


class _CheckingStore:
    """A ``JournaledLedger`` stand-in that checks the walk's invariants at every checkpoint."""

    def __init__(self, reservation: Decimal, width: int, cap: Decimal, limit: Decimal) -> None:
        self.reservation, self.width, self.cap, self.limit = reservation, width, cap, limit
        self.walk: ConcurrentWalk[CliAttemptResult, CliObservation] | None = None
        self.on_disk: set[tuple[str, str, int]] = set()
        self.running, self.peak_running = 0, 0
        self.lock = threading.Lock()
        self.admissions, self.admissions_at_stop = 0, None
        self.checkpoints = 0

    def record(self, ledger: MinimalLedger) -> None:
        assert self.walk is not None
        self.checkpoints += 1
        opened = ledger.open_reservations or []
        charged = sum((Decimal(str(o.charged_usd)) for o in ledger.observations), Decimal(0))
        budget = self.walk.budget
        assert budget.spent == charged + self.reservation * len(opened)
        admitted = len(ledger.observations) + len(opened)
        if admitted > self.admissions:  # this checkpoint is an admission
            assert self.admissions_at_stop is None, "admitted after a recorded stop"
            assert budget.spent - self.reservation + self.limit <= self.cap
        self.admissions = admitted
        if self.admissions_at_stop is None and (
            budget.cap_exceeded or any(o.status != "completed" for o in ledger.observations)
        ):
            self.admissions_at_stop = admitted
        self.on_disk = {(r.task_id, r.scenario, r.repetition) for r in opened}


outcomes = st.tuples(st.sampled_from(STATUSES), micro, st.integers(0, 4))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=st.lists(outcomes, min_size=1, max_size=12), width=st.integers(1, 6), cap_units=st.integers(1, 12))
def test_the_walk_keeps_its_invariants_at_every_checkpoint(
    plan: list[tuple[str, Decimal, int]], width: int, cap_units: int
) -> None:
    limit = Decimal("0.250")
    cap = limit * cap_units / 2
    schedule = tuple(ScheduleEntry(f"t{i}", "r", "baseline", 1) for i in range(len(plan)))
    store = _CheckingStore(reservation_for(limit), width, cap, limit)

    def run_attempt(entry: ScheduleEntry) -> CliAttemptResult:
        key = (entry.task_id, entry.scenario, entry.repetition)
        assert key in store.on_disk, "a child started before its reservation was on disk"
        status, cost, delay_ms = plan[int(entry.task_id[1:])]
        with store.lock:
            store.running += 1
            store.peak_running = max(store.peak_running, store.running)
        time.sleep(delay_ms / 1000)
        with store.lock:
            store.running -= 1
        return CliAttemptResult(status=cast(Any, status), reported_cost_usd=cost, computed_cost=None,
                                setup_problems=(), cost_problem=None, exit_code=0, wall_time_ms=delay_ms, fields={})

    observe = bare_observation

    def unstarted(entry: ScheduleEntry, reason: str) -> CliAttemptResult:  # no body raises here
        return CliAttemptResult(status="failed", reported_cost_usd=None, computed_cost=None, setup_problems=(),
                                cost_problem=None, exit_code=None, wall_time_ms=0, fields={}, status_reason=reason)

    run = RunMachine(len(schedule), "cli")
    run.begin()
    ledger = empty_cli_ledger()
    with ThreadPoolExecutor(max_workers=width) as pool:  # the local executor's shape (issue 20)
        walk = ConcurrentWalk(run=run, ledger=ledger, store=cast(JournaledLedger, store), concurrency=width, cap=cap,
                              limit=limit, reservation=reservation_for(limit),
                              port=cli_port(lambda entry: pool.submit(run_attempt, entry), observe,
                                            ReservationRule.for_cli(limit, "", strict=False), unstarted),
                              progress=SilentProgress())
        store.walk = walk
        result = walk.walk(schedule)
    assert ledger.open_reservations == []
    order = [int(o.task_id[1:]) for o in result.observations]
    assert order == list(range(len(order)))  # admission (= schedule) order
    assert walk.peak_in_flight <= width
    assert store.peak_running <= width  # at most N children at once, counted inside the children
    assert list(concurrency_problems(ledger)) == []  # none started after a stopping one ended; <= N at once
    statuses = [o.status for o in result.observations]
    first = next((i for i, s in enumerate(statuses) if s != "completed"), None)
    if first is not None:
        assert store.admissions_at_stop is not None
        assert ledger.stop_reason == f"attempt {first + 1} ended {statuses[first]}"
    elif len(statuses) < len(schedule):
        assert ledger.stop_reason is not None
    else:
        assert ledger.stop_reason is None
