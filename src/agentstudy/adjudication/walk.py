"""The adjudication's item walk: one budget authority, up to N adjudicator attempts at once (issue 19, item 1).

``ItemWalk.walk`` drives the items with ``runners.ordered_flights.drive_in_order``. The calling
thread alone admits, reserves, settles and checkpoints; worker threads only run the adjudicator
child (``run_cli_attempt``) and the pure ``settle_attempt`` for its status.

- Admission, in blind-item order: nothing after a stop (a signal, the cap, an attempt that did not
  complete) and only when the full per-item limit fits under the cap with every open reservation
  counted (``open_attempt``: ``spent`` holds them). The reservation is checkpointed before the
  child starts: ``openReservation`` at concurrency 1 (the companion as before, byte for byte in
  its fields), the ``openReservations`` list and ``concurrency`` above 1.
- Settlement, in admission order (an early finisher frees its slot; its reservation stays open and
  counted until it is recorded): ``close_attempt``, the judgement, the item record, checkpoint.
  Above 1 each item records ``startedAt`` / ``endedAt`` (ISO 8601 UTC ms), stamped under one lock
  that also sees a stopping outcome, so no item starts after one that stops the run ended.
- Stop rule: the first attempt that does not complete stops admission as soon as it is known
  (``seen``); items already running finish and are recorded; the stop reason names the first one
  in admission order. A passed cap stops admission too. A stop signal: the handler terminated
  every child, each running item ends non-completed and is charged at least its reservation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from agentstudy.adjudication.companion import finished_item
from agentstudy.adjudication.items import PreparedItem
from agentstudy.adjudication.prompt import InvalidAdjudication, Judgement, parse_adjudication
from agentstudy.fsm.attempt import AttemptMachine
from agentstudy.io.ledger_store import LedgerFile
from agentstudy.io.signals import stop_signal, terminate_children
from agentstudy.pricing.budget import Budget, close_attempt, open_attempt, settle_attempt
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.adjudication import MinimalAdjudication, OpenItemReservation
from agentstudy.runners.ledger_steps import budget_record, now_iso
from agentstudy.runners.ordered_flights import Flight, drive_in_order
from agentstudy.transports.cli import CliAttemptResult

ItemRunner = Callable[[PreparedItem, Decimal], CliAttemptResult]
"""Runs one item's adjudicator attempt with its reservation (USD) as the CLI's budget."""


@dataclass(frozen=True)
class _Admitted:
    position: int
    item: PreparedItem
    reservation: Decimal
    attempt: AttemptMachine


@dataclass(frozen=True)
class _Ended:
    admitted: _Admitted
    result: CliAttemptResult
    status: str
    started_at: str
    ended_at: str


class ItemWalk:
    """Adjudicate ``items`` (their positions in the companion) with at most ``concurrency`` at once.

    Args:
        companion, store: the companion (updated in place) and its file; every reservation and
            settlement is ``store.checkpoint``-ed.
        cap, limit: the adjudication cap and the per-item limit (USD).
        concurrency: attempts in flight at once (1 keeps the companion's sequential form).
        run_item: runs one item's attempt (called in a worker thread).
        started: ``(1-based position, item id)`` after the item's reservation is on disk.
        settled: ``(position, item id, item status, charged, spent, cap)`` (USD) after its
            settlement is on disk.
    """

    def __init__(self, *, companion: MinimalAdjudication, store: LedgerFile, concurrency: int, cap: Decimal,
                 limit: Decimal, run_item: ItemRunner, started: Callable[[int, str], None],
                 settled: Callable[[int, str, str, Decimal, Decimal, Decimal], None]) -> None:
        self.companion, self.store, self.concurrency, self.limit = companion, store, concurrency, limit
        self.run_item, self.started, self.settled = run_item, started, settled
        self.budget, self.tally = Budget(cap=cap), Tally()
        self.total = len(companion.items)
        self.stopped = False
        """Admission stopped: an attempt did not complete, or the cap was passed."""
        self.peak_running = 0
        self._clock = threading.Lock()
        self._stopping_ended = False
        if concurrency > 1:
            companion.concurrency, companion.open_reservations = concurrency, []

    def walk(self, items: list[tuple[int, PreparedItem]]) -> None:
        """Run the walk; ``companion.stop_reason`` names why it ended early (a signal is the caller's).

        Raises:
            CheckpointError: a checkpoint failed (children terminated, reservations left open).
        """
        def abort() -> None:
            if stop_signal() is None:
                terminate_children()

        done = drive_in_order(items, concurrency=self.concurrency, admit=self._admit, record=self._record,
                              seen=self._seen, abort=abort, thread_name_prefix="adjudicator")
        self.peak_running = done.peak_running
        if done.left and self.companion.stop_reason is None and stop_signal() is None:
            self.companion.stop_reason = "the per-item limit does not fit under the remaining adjudication cap"

    def _admit(self, _: int, entry: tuple[int, PreparedItem]) -> Callable[[], _Ended] | None:
        if self.stopped or stop_signal() is not None:
            return None
        admitted = open_attempt(self.budget, self.limit)
        if admitted is None:
            return None
        with self._clock:
            if self._stopping_ended:
                return None
            started_at = now_iso()
        position, item = entry
        attempt = AttemptMachine()
        attempt.reserve()
        reservation = admitted.reservation_usd
        self.budget, self.tally = admitted.budget, self.tally.add_reservation(reservation)
        self.companion.budget = budget_record(self.budget, self.tally)
        opened = OpenItemReservation(item_id=item.blind.item_id, reserved_usd=usd_number(reservation))
        if self.companion.open_reservations is None:
            self.companion.open_reservation = opened
        else:
            self.companion.open_reservations = [*self.companion.open_reservations, opened]
        self.store.checkpoint(self.companion.to_json())
        attempt.start(checkpointed=True)
        self.started(position + 1, item.blind.item_id)
        admitted_item = _Admitted(position, item, reservation, attempt)
        return lambda: self._run_one(admitted_item, started_at)

    def _run_one(self, admitted: _Admitted, started_at: str) -> _Ended:
        result = self.run_item(admitted.item, admitted.reservation)
        computed = result.computed_cost.usd if result.computed_cost is not None else None
        status, _ = settle_attempt(result.status, admitted.reservation, result.reported_cost_usd, computed)
        with self._clock:
            ended_at = now_iso()
            if status != "completed":
                self._stopping_ended = True
        return _Ended(admitted, result, status, started_at, ended_at)

    def _seen(self, flight: Flight[tuple[int, PreparedItem], _Ended]) -> None:
        if flight.future.result().status != "completed":
            self.stopped = True

    def _record(self, flight: Flight[tuple[int, PreparedItem], _Ended]) -> None:
        ended = flight.future.result()
        admitted = ended.admitted
        position, item, reservation, attempt = admitted.position, admitted.item, admitted.reservation, admitted.attempt
        result = ended.result
        computed = result.computed_cost.usd if result.computed_cost is not None else None
        settled = close_attempt(self.budget, result.status, reservation, result.reported_cost_usd, computed)
        attempt.settle(status=settled.status)
        self.budget, self.tally = settled.budget, self.tally.add_measured(result.reported_cost_usd, computed)
        judgement, problem = _judgement(attempt.status, result, item)
        record = finished_item(self.companion.items[position], item, result, attempt.status, reservation,
                               settled.charged_usd, judgement, problem)
        if self.companion.open_reservations is None:
            self.companion.open_reservation = None
        else:
            record = record.model_copy(update={"started_at": ended.started_at, "ended_at": ended.ended_at})
            kept = [r for r in self.companion.open_reservations if r.item_id != item.blind.item_id]
            self.companion.open_reservations = kept
        self.companion.items[position] = record
        self.companion.budget = budget_record(self.budget, self.tally)
        self.store.checkpoint(self.companion.to_json())
        self.settled(position + 1, item.blind.item_id, record.status, settled.charged_usd, self.budget.spent,
                     self.budget.cap)
        if stop_signal() is not None:
            self.stopped = True
        elif self.companion.stop_reason is None and self.budget.cap_exceeded:
            self.companion.stop_reason = "the cumulative adjudication spend passed the cap"
        elif self.companion.stop_reason is None and attempt.status != "completed":
            self.companion.stop_reason = (f"item {position + 1} of {self.total}: the adjudicator attempt ended "
                                          f"{attempt.status}")
        if self.budget.cap_exceeded or attempt.status != "completed":
            self.stopped = True


def _judgement(status: str, result: CliAttemptResult, item: PreparedItem) -> tuple[Judgement | None, str | None]:
    """The parsed judgement of a completed attempt, or the problem that leaves the item pending."""
    if status != "completed":
        return None, f"the adjudicator attempt ended {status}"
    try:
        return parse_adjudication(str(result.fields.get("answer_text", "")), len(item.task.expected)), None
    except InvalidAdjudication as error:
        return None, f"invalid adjudicator output: {error}"


__all__ = ["ItemRunner", "ItemWalk"]
