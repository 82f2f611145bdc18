"""The attempt state machine: the only authority over an attempt's status.

``pending -> reserved -> running -> <final status>``, or ``pending -> refused`` when the
per-attempt limit does not fit under the cap. Guards: an attempt cannot start before its
reservation is checkpointed; it settles exactly once (final states have no way out).
"""

from __future__ import annotations

from typing import Any

from statemachine import State, StateMachine

FINAL_STATUSES: tuple[str, ...] = (
    "completed",
    "failed",
    "timed-out",
    "budget-exceeded",
    "invalid-setup",
    "invalid-cost",
    "incomplete",
)


class AttemptMachine(StateMachine):
    """Lifecycle of one attempt (seed 000, "Budget" and the status enum).

    Events: ``reserve``, ``refuse``, ``start(checkpointed=bool)``, ``settle(status=str)``.
    Raises ``TransitionNotAllowed`` on an illegal event (for example a second ``settle``).
    """

    pending = State(initial=True, value="pending")
    reserved = State(value="reserved")
    running = State(value="running")
    refused = State(final=True, value="refused")
    completed = State(final=True, value="completed")
    failed = State(final=True, value="failed")
    timed_out = State(final=True, value="timed-out")
    budget_exceeded = State(final=True, value="budget-exceeded")
    invalid_setup = State(final=True, value="invalid-setup")
    invalid_cost = State(final=True, value="invalid-cost")
    incomplete = State(final=True, value="incomplete")

    reserve = pending.to(reserved)
    refuse = pending.to(refused)
    start = reserved.to(running, cond="reservation_checkpointed")
    settle = (
        running.to(completed, cond="is_completed", on="count_settlement")
        | running.to(failed, cond="is_failed", on="count_settlement")
        | running.to(timed_out, cond="is_timed_out", on="count_settlement")
        | running.to(budget_exceeded, cond="is_budget_exceeded", on="count_settlement")
        | running.to(invalid_setup, cond="is_invalid_setup", on="count_settlement")
        | running.to(invalid_cost, cond="is_invalid_cost", on="count_settlement")
        | running.to(incomplete, cond="is_incomplete", on="count_settlement")
    )

    def __init__(self) -> None:
        self.settlements = 0
        """How many times the attempt was settled (exactly once for a settled attempt)."""
        super().__init__()

    def count_settlement(self) -> None:
        """Action of ``settle``: count it (the guards make a second one impossible)."""
        self.settlements += 1

    def reservation_checkpointed(self, checkpointed: bool = False) -> bool:
        """Guard of ``start``: the reservation is already persisted in the ledger."""
        return checkpointed

    def is_completed(self, status: str = "") -> bool:
        return status == "completed"

    def is_failed(self, status: str = "") -> bool:
        return status == "failed"

    def is_timed_out(self, status: str = "") -> bool:
        return status == "timed-out"

    def is_budget_exceeded(self, status: str = "") -> bool:
        return status == "budget-exceeded"

    def is_invalid_setup(self, status: str = "") -> bool:
        return status == "invalid-setup"

    def is_invalid_cost(self, status: str = "") -> bool:
        return status == "invalid-cost"

    def is_incomplete(self, status: str = "") -> bool:
        return status == "incomplete"

    @property
    def status(self) -> str:
        """The current state's value, e.g. ``running`` or ``timed-out``."""
        value: Any = self.current_state_value
        return str(value)
