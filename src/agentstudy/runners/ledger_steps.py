"""Ledger steps shared by the minimal runner's transports (seed 000 ledger; digest 4.1 and 4.3).

Timestamps, the ``budget`` block from the pricing state, the open-reservation marker, and the
two ways a run closes its ledger: normally (the run machine's final state) or on an error
(``blocked``, with a reason telling the operator to review the budget). The caller passes a
``save`` function that persists the ledger document (a checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

from agentstudy.fsm.run import RunMachine
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.tally import Tally
from agentstudy.protocol.records import BudgetRecord, MinimalLedger, OpenReservation
from agentstudy.protocol.schedule import ScheduleEntry

ERROR_STOP_REASON = "the runner stopped on an error; review the budget before any rerun"


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds and ``Z`` (``2026-10-10T12:00:00.000Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def budget_record(budget: Budget, tally: Tally) -> BudgetRecord:
    """The ledger's ``budget`` block: cap, spent (open reservations included), reserved and measured sums (USD)."""
    return BudgetRecord(
        cap=float(budget.cap),
        spent=float(budget.spent),
        reserved=float(tally.reserved),
        measured=float(tally.measured),
        cumulative_cap_exceeded=budget.cap_exceeded,
    )


def open_reservation(entry: ScheduleEntry, reserved_usd: Decimal, charged_usd: Decimal = Decimal(0)) -> OpenReservation:
    """The marker of an attempt whose reservation is on disk and not yet settled (USD): what is reserved
    now and what its settled calls already charged (http; 0 for cli)."""
    return OpenReservation(
        task_id=entry.task_id, scenario=entry.scenario, repetition=entry.repetition, reserved_usd=float(reserved_usd),
        charged_usd=float(charged_usd),
    )


def close_on_error(run: RunMachine, ledger: MinimalLedger, save: Callable[[MinimalLedger], None]) -> None:
    """After an unexpected error: block the run (if still running), record why, and save."""
    if run.status == "running":
        run.block()
    ledger.stop_reason = ledger.stop_reason or ERROR_STOP_REASON
    ledger.status = "blocked"
    ledger.finished_at = now_iso()
    save(ledger)


def close_normally(ledger: MinimalLedger, run: RunMachine, save: Callable[[MinimalLedger], None]) -> None:
    """After ``run.finish()``: copy the machine's final status into the ledger and save."""
    ledger.status = "awaiting-adjudication" if run.status == "awaiting-adjudication" else "blocked"
    ledger.finished_at = now_iso()
    save(ledger)
