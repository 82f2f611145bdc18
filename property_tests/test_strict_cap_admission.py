"""``--strict-cap`` under any interleaving (issue 19, item 1): charges never exceed reservations, so spent <= cap.

Claude Code checks its limit only after a turn, so an attempt's measured cost is at most its
limit plus one turn, and a turn costs at most the model's worst-case turn
(``pricing.strict_cap.worst_turn_usd``). The strict rule reserves exactly that much, so:

- ``StrictAdmissionMachine``: a hypothesis state machine over the real ``RunMachine`` and ``Budget``
  with the strict rule's reservation and admission amount; attempts finish in any order with any
  status and any measured cost up to limit + worst turn, and are recorded in admission order.
  At every step: every charge <= its reservation, and spent <= cap.
- ``test_the_strict_walk_never_passes_the_cap``: the real ``ConcurrentWalk`` (worker threads,
  random outcomes, costs and delays) with ``rule=`` the strict rule; at every checkpoint
  spent <= cap, and no observation is charged above its reservation.

The same charges under the seed's ``limit`` rule do pass the cap (``test_the_seed_rule_can_pass_it``),
so these properties can fail.
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
from agentstudy.pricing.budget import Budget, settle_attempt
from agentstudy.pricing.strict_cap import ReservationRule
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.cli_request import cli_port
from agentstudy.runners.concurrent_walk import ConcurrentWalk
from agentstudy.runners.progress import SilentProgress
from agentstudy.transports.cli import CliAttemptResult
from walk_fakes import bare_observation, empty_cli_ledger

STATUSES = ("completed", "failed", "timed-out", "budget-exceeded", "invalid-setup", "invalid-cost")
LIMIT = Decimal("0.100")
STRICT = ReservationRule.for_cli(LIMIT, "claude-haiku-4-5", strict=True)  # worst turn 0.56: reserves 0.66
SEED = ReservationRule.for_cli(LIMIT, "claude-haiku-4-5", strict=False)
# any measured cost from nothing to the limit plus a whole worst-case turn, in milli-USD steps
overshooting = st.integers(0, 660).map(lambda n: Decimal(n).scaleb(-3))


class StrictAdmissionMachine(RuleBasedStateMachine):
    """Admit / finish in any order / signal against one cap, up to 8 attempts in flight, under the strict rule."""

    def __init__(self) -> None:
        super().__init__()
        self.cap, self.width = Decimal("2.000"), 8
        self.run = RunMachine(30, "cli")
        self.run.begin()
        self.budget = Budget(cap=self.cap)
        self.flying: list[int] = []
        self.done: dict[int, tuple[str, Decimal]] = {}

    @precondition(lambda self: len(self.flying) - len(self.done) < self.width)
    @rule()
    def admit(self) -> None:
        if not (self.run.may_admit() and self.budget.fits(STRICT.admission_usd)):
            return
        self.budget = self.budget.reserve(STRICT.reservation_usd)
        self.run.admit()
        self.flying.append(self.run.admitted)

    @rule(pick=st.integers(0, 7), status=st.sampled_from(STATUSES), reported=st.none() | overshooting,
          computed=st.none() | overshooting)
    def finish(self, pick: int, status: str, reported: Decimal | None, computed: Decimal | None) -> None:
        waiting = [i for i in self.flying if i not in self.done]
        if not waiting:
            return
        if status == "completed" and reported is None and computed is None:
            status = "invalid-cost"  # a completed attempt has a valid cost; without one it is invalid-cost
        final, charged = settle_attempt(status, STRICT.reservation_usd, reported, computed,
                                        exceeded_above=STRICT.base_usd)
        assert charged <= STRICT.reservation_usd  # the strict rule's whole point
        index = waiting[pick % len(waiting)]
        self.done[index] = (final, charged)
        self.run.halt(index, final)
        while self.flying and self.flying[0] in self.done:
            final, charged = self.done.pop(self.flying.pop(0))
            self.budget = self.budget.settle(STRICT.reservation_usd, charged)
            self.run.observe(status=final)

    @rule()
    def signal(self) -> None:
        self.run.stop_admission()

    @invariant()
    def spent_never_passes_the_cap(self) -> None:
        assert self.budget.spent <= self.cap
        assert not self.budget.cap_exceeded


TestStrictAdmissionMachine = StrictAdmissionMachine.TestCase
TestStrictAdmissionMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)


class _CapStore:
    """A ``JournaledLedger`` stand-in: at every checkpoint spent <= cap and no charge above its reservation."""

    def __init__(self, cap: Decimal) -> None:
        self.cap, self.walk, self.checkpoints = cap, cast(ConcurrentWalk | None, None), 0

    def record(self, ledger: MinimalLedger) -> None:
        assert self.walk is not None
        self.checkpoints += 1
        assert self.walk.budget.spent <= self.cap
        assert all(Decimal(repr(o.charged_usd)) <= STRICT.reservation_usd for o in ledger.observations)
        assert ledger.budget.reservation_rule == "limit-plus-worst-turn"


def _walk(plan: list[tuple[str, Decimal, int]], width: int, cap: Decimal, chosen: ReservationRule,
          gate: threading.Barrier | None = None) -> ConcurrentWalk:
    schedule = tuple(ScheduleEntry(f"t{i}", "r", "baseline", 1) for i in range(len(plan)))

    def run_attempt(entry: ScheduleEntry) -> CliAttemptResult:
        status, cost, delay_ms = plan[int(entry.task_id[1:])]
        if gate is not None:
            gate.wait(timeout=30)  # every attempt is in flight before any finishes
        time.sleep(delay_ms / 1000)
        return CliAttemptResult(status=cast(Any, status), reported_cost_usd=cost, computed_cost=None,
                                setup_problems=(), cost_problem=None, exit_code=0, wall_time_ms=delay_ms, fields={})

    observe = bare_observation

    def unstarted(entry: ScheduleEntry, reason: str) -> CliAttemptResult:  # no body raises here
        return CliAttemptResult(status="failed", reported_cost_usd=None, computed_cost=None, setup_problems=(),
                                cost_problem=None, exit_code=None, wall_time_ms=0, fields={}, status_reason=reason)

    run = RunMachine(len(schedule), "cli")
    run.begin()
    ledger = empty_cli_ledger()
    store = _CapStore(cap) if chosen is STRICT else None
    with ThreadPoolExecutor(max_workers=width) as pool:
        walk = ConcurrentWalk(run=run, ledger=ledger, store=cast(JournaledLedger, store or _Null()),
                              concurrency=width, cap=cap, limit=chosen.admission_usd,
                              reservation=chosen.reservation_usd,
                              port=cli_port(lambda entry: pool.submit(run_attempt, entry), observe, chosen,
                                            unstarted),
                              progress=SilentProgress(), rule=chosen)
        if store is not None:
            store.walk = walk
        walk.walk(schedule)
    return walk


class _Null:
    def record(self, ledger: MinimalLedger) -> None:
        pass


outcomes = st.tuples(st.sampled_from(STATUSES), overshooting, st.integers(0, 4))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=st.lists(outcomes, min_size=1, max_size=12), width=st.integers(1, 6), cap_units=st.integers(2, 16))
def test_the_strict_walk_never_passes_the_cap(plan: list[tuple[str, Decimal, int]], width: int,
                                               cap_units: int) -> None:
    cap = STRICT.reservation_usd * cap_units / 2
    walk = _walk(plan, width, cap, STRICT)
    assert walk.budget.spent <= cap and not walk.budget.cap_exceeded
    largest = max((cost - LIMIT for _, cost, _ in plan[: len(walk.observations)] if cost > LIMIT), default=None)
    assert walk.tally.largest_overshoot == largest  # the recorded overshoot is what the attempts measured


def test_the_seed_rule_can_pass_it() -> None:
    """Four attempts in flight, each overshooting its limit by a turn: under the seed's rule spent passes the cap."""
    plan = [("completed", Decimal("0.660"), 3)] * 4
    walk = _walk(plan, 4, LIMIT * 4, SEED, threading.Barrier(4))
    assert walk.budget.cap_exceeded and walk.budget.spent == Decimal("2.640")
