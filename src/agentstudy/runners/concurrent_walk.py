"""The minimal runners' concurrent walk (issue 19, items 1-2): up to N attempts in flight, one budget authority.

One walk for both transports: it is generic over the attempt result ``R`` and the observation
``O``, and a transport hands it an :class:`AttemptPort` (start one attempt on an executor, settle
it purely, count its measured cost, build its observation). The coordinator (the calling thread)
alone admits, reserves, settles and checkpoints; an executor only runs the attempts' bodies
(``port.submit``: threads of this process, or Ray tasks for cli — ``runners.executor``, issue 20 —
running a Claude Code child or a Messages API agent loop), and each outcome is computed with the
pure ``port.settle`` when its result is in. An attempt is admitted, in schedule order, only when the run machine allows
it (``RunMachine.may_admit``: no stopping outcome seen, no stop asked) and its full limit fits
under the cap with every open reservation counted (``Budget.fits``: ``spent`` holds them); its
reservation is journaled (fsync'd, ``openReservations``) before its child starts. Outcomes are
recorded in admission order: an attempt that finishes early gives its slot to the next
admission at once (at most N children run), but its outcome waits, its reservation still open
and counted against the cap, until every earlier one is recorded — so a slow attempt never
idles the other slots, and the cap check stays conservative (a finished attempt's money is
released only when it is recorded). The first stopping outcome (cli: anything but
``completed``) stops admission as soon as it is known; attempts already running finish and are
recorded, and the run ends ``blocked`` naming that attempt (the stop rule is the run machine's,
per transport: cli anything but ``completed``; http ``failed``, ``budget-exceeded``). When the limit does not fit, the
walk waits for running attempts to settle (their charges may free room) and ends when nothing
is running and it still does not fit.

An attempt whose body raised (the export, a private directory or the sandbox could not be made: a full
TMPDIR) stops admission at once, the same stop rule as a stopping outcome (issue 29, break 6): its slot
is not refilled, the attempts already running finish and are recorded, and the walk raises
:class:`AttemptBodyError` naming the attempt and the error, which is also the ledger's ``stopReason``.
A body raises only before its agent process is spawned, so the attempt itself is recorded too (issue 40,
break 11: no open reservation is left): ``port.unstarted`` gives its ``failed`` result with the
``statusReason`` ``never started: <error>``, settled by the seed's conservative rule (a failure keeps
its whole reservation: charged, not spent; :func:`never_started_usd`). A body that raised after its agent
ended (``protocol.late_errors.AgentEndedThenFailed``) is recorded the same way with the reason ``internal error
after the agent ended: …`` (it spent money the run cannot know, so it is not counted as charged-not-spent).
Once an attempt has its result, settling, counting and observing it go through
``runners.attempt_port.observe_result``: an internal error there still writes its observation (``failed``,
the error named, charged its whole reservation at least), checkpoints it, and the walk raises
:class:`ObservedThenFailed` when what was running has been recorded.

A stop signal stops admission; the handler has already terminated every child (an http attempt
stops at its next safe point: before a request or a tool call, or when its request in flight
returns), so each running attempt ends as a non-completed one and ``port.settle`` charges it at
least its whole reservation, then
``StopRequested`` is raised for the caller's ``close_on_error``. Any other error terminates the
children and leaves the unsettled reservations open (charged in full) in the ledger.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Generic

from agentstudy.fsm.attempt import AttemptMachine
from agentstudy.fsm.run import RunMachine
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.io.signals import raise_if_stopped, run_stop_hooks, stop_signal, terminate_children
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.money import exact
from agentstudy.pricing.strict_cap import ReservationRule
from agentstudy.pricing.tally import Tally
from agentstudy.protocol.late_errors import AgentEndedThenFailed, error_text, internal_error_reason
from agentstudy.protocol.records import NEVER_STARTED, CliObservation, HttpObservation, MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.attempt_port import AttemptPort, O, ObservedThenFailed, R, observe_result
from agentstudy.runners.executor import then
from agentstudy.runners.ledger_steps import budget_record, now_iso, open_reservation
from agentstudy.runners.progress import AttemptProgress, RunProgress
from agentstudy.transports.api_retry import BackoffGate

WAIT_SLICE_S = 0.5
"""Seconds the coordinator waits for a result before it looks at the stop flag again."""



def never_started_reason(error: BaseException) -> str:
    """The ``statusReason`` of an attempt whose body raised ``error`` before its agent process started:
    ``never started: <message>`` (control characters removed, at most ``REASON_CHARS`` characters)."""
    return NEVER_STARTED + error_text(error, with_kind=False)


def body_status_reason(error: BaseException) -> str:
    """The ``statusReason`` of an attempt whose body raised ``error``: ``internal error after the agent ended: …``
    when its agent had ended (``AgentEndedThenFailed``; it spent money), else ``never started: …``."""
    if isinstance(error, AgentEndedThenFailed):
        return internal_error_reason(error)
    return never_started_reason(error)


def never_started_usd(observations: Sequence[CliObservation] | Sequence[HttpObservation]) -> Decimal:
    """What the attempts that never started were charged (USD): charged by the seed's conservative rule,
    never spent on any provider (issue 40, break 11)."""
    with exact():
        return sum((Decimal(str(o.charged_usd)) for o in observations
                    if (o.status_reason or "").startswith(NEVER_STARTED)), Decimal(0))


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """A finished attempt: its result, settled ``status`` and ``charged`` USD, and when it ran (ISO 8601 ms);
    ``settle_error`` when settling raised (then ``status`` is ``failed`` until the walk records it, issue 40)."""

    result: R
    status: str
    charged: Decimal
    started_at: str
    ended_at: str
    settle_error: BaseException | None = None


@dataclass
class _Flight(Generic[R]):
    index: int
    entry: ScheduleEntry
    where: AttemptProgress
    attempt: AttemptMachine
    future: Future[Outcome[R]]
    started: str


@dataclass
class WalkResult(Generic[O]):
    """The walk's end state: the budget and tally (USD) and the observations in admission order."""

    budget: Budget
    tally: Tally
    observations: list[O]




class AttemptBodyError(RuntimeError):
    """An attempt's body raised: the walk stopped admission, recorded what was running, and ends with this.

    ``str(error)`` is one line, ``attempt N (task, scenario, repetition R) could not run: Kind: message``
    (also the ledger's ``stopReason``). ``charged_not_spent_usd`` is what the attempts that never started
    were charged (USD; :func:`never_started_usd`, issue 40).
    """

    def __init__(self, reason: str, charged_not_spent_usd: Decimal = Decimal(0)) -> None:
        super().__init__(reason)
        self.charged_not_spent_usd = charged_not_spent_usd


def body_error_reason(index: int, entry: ScheduleEntry, error: BaseException) -> str:
    """The one-line stop reason of attempt ``index`` whose body raised ``error`` (control characters removed)."""
    where = f"attempt {index} ({entry.task_id}, {entry.scenario}, repetition {entry.repetition})"
    if isinstance(error, AgentEndedThenFailed):
        return f"{where} was recorded after an internal error once its agent ended: {error_text(error.cause)}"
    return f"{where} could not run: {error_text(error)}"


class ConcurrentWalk(Generic[R, O]):
    """Walk ``schedule`` with at most ``concurrency`` attempts in flight (see the module docstring).

    Args:
        run: the run machine (``running``); its ``admit``/``observe`` are the only admission record,
            its ``stops`` the transport's stop rule.
        ledger, store: the in-memory ledger (``concurrency`` and ``openReservations`` set here) and
            its journaled file; every reservation and settlement is ``store.record``-ed.
        limit, reservation: the per-attempt limit and its reservation (USD); the reservation stays
            whole in ``openReservations`` (``chargedUsd`` 0) until the attempt is recorded.
        port: the transport's attempt callables (:class:`AttemptPort`).
        rule: the reservation rule (``pricing.strict_cap``; issue 19), recorded in the budget block
            (the port settles and measures against it).
        on_recorded: called with each observation before its checkpoint (a sequential study's looks,
            ``runners.sequential_runs``; issue 35); ``True`` ends the schedule: nothing more is admitted,
            attempts in flight finish and are recorded.
        gate: the run's one back-off (issue 33): no attempt is admitted while it is paused.

    Raises:
        ValueError: ``concurrency`` below 1.
    """

    def __init__(self, *, run: RunMachine, ledger: MinimalLedger, store: JournaledLedger, concurrency: int,
                 cap: Decimal, limit: Decimal, reservation: Decimal, port: AttemptPort[R, O],
                 progress: RunProgress, rule: ReservationRule | None = None,
                 on_recorded: Callable[[O], bool] | None = None, gate: BackoffGate | None = None) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.run, self.ledger, self.store, self.concurrency = run, ledger, store, concurrency
        self.limit, self.reservation, self.rule = limit, reservation, rule
        self.port: AttemptPort[R, O] = port
        self.progress = progress
        self.on_recorded: Callable[[O], bool] | None = on_recorded
        self._pending: deque[tuple[int, ScheduleEntry]] = deque()
        self.gate = gate
        self.budget, self.tally = Budget(cap=cap), Tally()
        self.observations: list[O] = []
        self.flights: deque[_Flight[R]] = deque()
        self.peak_in_flight = 0
        """The most children ever running at once (never above ``concurrency``)."""
        ledger.concurrency, ledger.open_reservations = concurrency, []
        self._clock = threading.Lock()
        self._stopping_outcome_ended = False
        """Set by a worker, under ``_clock``, when its attempt ended with an outcome that stops the run."""
        self._body_raised = False
        """Set by a worker, under ``_clock``, when its attempt's body raised (no admission after it)."""
        self._late: ObservedThenFailed | None = None
        """The first error after an attempt's observation was built (raised once the walk has drained)."""
        self._body_error: str | None = None
        """The stop reason of the first attempt (in admission order) whose body raised."""

    def walk(self, schedule: tuple[ScheduleEntry, ...]) -> WalkResult[O]:
        """Run the walk to its end; the ledger's ``stopReason`` names why it ended early.

        Raises:
            StopRequested: a stop signal arrived (every running attempt was recorded first).
            CheckpointError: a checkpoint failed (children terminated, reservations left open).
            ObservedThenFailed: an attempt's observation was built, then keeping it failed (it was recorded, and
                every attempt already running, first).
            AttemptBodyError: an attempt's body raised (what was running was recorded first, and the
                attempt itself as never started, charged its whole reservation).
        """
        pending = self._pending = deque(enumerate(schedule, start=1))
        try:
            while True:
                self._admit(pending)
                if not self.flights:
                    break
                self._wait_and_record()
        except BaseException:
            self.run.stop_admission()
            if stop_signal() is None:
                terminate_children()
            raise
        raise_if_stopped()
        if self._late is not None:
            raise self._late
        if self._body_error is not None:
            self.ledger.stop_reason = self._body_error
            raise AttemptBodyError(self._body_error, never_started_usd(self.observations))
        self._stop_reason(pending)
        return WalkResult(self.budget, self.tally, self.observations)

    def _admit(self, pending: deque[tuple[int, ScheduleEntry]]) -> None:
        run_stop_hooks()  # after a stop, the remote attempts (Ray) are cancelled here, never in the handler
        while pending and self._running() < self.concurrency:
            if stop_signal() is not None or self._body_error is not None or self._late is not None:
                self.run.stop_admission()
            if not self.run.may_admit():
                return
            if not self.budget.fits(self.limit):
                if not self.flights:
                    self.run.stop_admission()
                return
            if self.gate is not None and self.gate.paused():  # the run's one back-off (issue 33)
                if self.flights:
                    return
                self.gate.wait()
            with self._clock:  # no attempt starts after a stopping outcome has ended (ledger_integrity checks it)
                if self._stopping_outcome_ended or self._body_raised:
                    self.run.stop_admission()
                    return
                started = now_iso()
            index, entry = pending.popleft()
            attempt = AttemptMachine()
            attempt.reserve()
            self.budget = self.budget.reserve(self.reservation)
            self.tally = self.tally.add_reservation(self.reservation)
            self.ledger.open_reservations = [*(self.ledger.open_reservations or []),
                                             open_reservation(entry, self.reservation)]
            self.ledger.budget = budget_record(self.budget, self.tally, self.rule)
            self.store.record(self.ledger)
            self.run.admit()
            attempt.start(checkpointed=True)
            where = AttemptProgress(index, self.run.planned, entry.task_id, entry.scenario, entry.repetition)
            self.progress.attempt_started(where)
            future = then(self.port.submit(entry), partial(self._settled, started=started))
            self.flights.append(_Flight(index, entry, where, attempt, future, started))
            self.peak_in_flight = max(self.peak_in_flight, self._running())

    def _settled(self, done: Future[R], started: str) -> Outcome[R]:
        """When an attempt's result is in: settle it (pure), then stamp its end under ``_clock``."""
        try:
            result = done.result()
        except BaseException:
            with self._clock:  # before this future is done: no slot is refilled after it (issue 29)
                self._body_raised = True
            raise
        settle_error: Exception | None = None
        try:
            status, charged = self.port.settle(result)
        except Exception as error:
            status, charged, settle_error = "failed", Decimal(0), error
        with self._clock:
            ended = now_iso()
            if settle_error is not None or self.run.stops(status):
                self._stopping_outcome_ended = True
        return Outcome(result, status, charged, started, ended, settle_error)

    def _running(self) -> int:
        return sum(not flight.future.done() for flight in self.flights)

    def _wait_and_record(self) -> None:
        running = [flight.future for flight in self.flights if not flight.future.done()]
        if running and not self.flights[0].future.done():
            wait(running, timeout=WAIT_SLICE_S, return_when=FIRST_COMPLETED)  # a freed slot admits the next
        for flight in self.flights:
            if flight.future.done() and flight.future.exception() is None:
                self.run.halt(flight.index, flight.future.result().status)
            elif flight.future.done():
                self.run.stop_admission()
        while self.flights and self.flights[0].future.done():
            flight = self.flights.popleft()
            error = flight.future.exception()
            if error is None:
                self._record(flight, flight.future.result())
                continue
            if self._body_error is None:
                self._body_error = body_error_reason(flight.index, flight.entry, error)
            result = self.port.unstarted(flight.entry, body_status_reason(error))  # recorded, never left open
            status, charged = self.port.settle(result)
            self._record(flight, Outcome(result, status, charged, flight.started, now_iso()))

    def _record(self, flight: _Flight[R], outcome: Outcome[R]) -> None:
        observed = observe_result(self.port, flight.entry, outcome.result, reservation=self.reservation,
                                  budget=self.budget, tally=self.tally, settled=(outcome.status, outcome.charged),
                                  settle_error=outcome.settle_error)  # recorded first, then the run stops (issue 40)
        flight.attempt.settle(status=observed.observation.status)
        self.budget, self.tally, late = observed.budget, observed.tally, observed.late
        observation = observed.observation.model_copy(update={"started_at": outcome.started_at,
                                                     "ended_at": outcome.ended_at})
        self.observations.append(observation)
        self.ledger.observations.append(observation)
        opened = self.ledger.open_reservations or []
        mine = open_reservation(flight.entry, Decimal(0))  # the same agent's attempt only (issue 21)
        self.ledger.open_reservations = [r for r in opened if (r.task_id, r.scenario, r.repetition, r.agent) != (
            mine.task_id, mine.scenario, mine.repetition, mine.agent)]
        self.ledger.budget = budget_record(self.budget, self.tally, self.rule)
        self.run.observe(status=flight.attempt.status)
        if self.budget.cap_exceeded:
            self.run.stop_admission()
        if self.on_recorded is not None and self.on_recorded(observation):
            self._end_schedule()
        if late is not None:
            self.ledger.stop_reason = self.ledger.stop_reason or f"attempt {flight.index} {late}"
        self.store.record(self.ledger)
        if late is not None and self._late is None:  # no admission after it; what runs finishes and is recorded
            self._late = late
            self.run.stop_admission()
        # What the settled attempts cost, not the seed's spent: the reservations of the attempts still running
        # would make the number rise and fall from line to line (the ledger's budget keeps the seed's spent).
        self.progress.attempt_settled(flight.where, flight.attempt.status, observation.tool_calls, observed.charged,
                                      self.budget.settled_usd, self.budget.cap)

    def _end_schedule(self) -> None:
        """A sequential stop (issue 35): drop every attempt not yet admitted; the ones in flight are recorded."""
        self._pending.clear()
        self.run.end_schedule()

    def _stop_reason(self, pending: deque[tuple[int, ScheduleEntry]]) -> None:
        first = self.run.first_stop
        if first is not None:
            self.ledger.stop_reason = f"attempt {first} ended {self.run.statuses[first - 1]}"
        elif self.budget.cap_exceeded:
            self.ledger.stop_reason = "the cumulative spend passed the cap"
        elif pending:
            self.ledger.stop_reason = "the per-attempt limit does not fit under the remaining cap"


__all__ = [
    "AttemptBodyError",
    "AttemptPort",
    "ConcurrentWalk",
    "ObservedThenFailed",
    "Outcome",
    "WalkResult",
    "body_error_reason",
    "body_status_reason",
    "never_started_reason",
    "never_started_usd",
]
