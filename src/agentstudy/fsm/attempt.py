"""The attempt state machine: the only authority over an attempt's status.

``pending -> reserved -> running -> <final status>``, or ``pending -> refused`` when the
per-attempt limit does not fit under the cap. Guards: an attempt cannot start before its
reservation is checkpointed; it settles exactly once (final states have no way out).
"""

from __future__ import annotations

from typing import Any

from statemachine import State, StateMachine

from agentstudy.fsm.guards import status_is

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
        running.to(completed, cond=status_is("completed"), on="count_settlement")
        | running.to(failed, cond=status_is("failed"), on="count_settlement")
        | running.to(timed_out, cond=status_is("timed-out"), on="count_settlement")
        | running.to(budget_exceeded, cond=status_is("budget-exceeded"), on="count_settlement")
        | running.to(invalid_setup, cond=status_is("invalid-setup"), on="count_settlement")
        | running.to(invalid_cost, cond=status_is("invalid-cost"), on="count_settlement")
        | running.to(incomplete, cond=status_is("incomplete"), on="count_settlement")
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








    @property
    def status(self) -> str:
        """The current state's value, e.g. ``running`` or ``timed-out``."""
        value: Any = self.current_state_value
        return str(value)
