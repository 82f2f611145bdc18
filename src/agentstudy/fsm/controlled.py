"""The controlled-study attempt machine and its retry rule (seed 004, ``runControlledCommand``).

One machine per attempt: ``pending -> running -> <final status>``, one final state per outcome
(``completed``, ``failed``, ``timed-out``, ``unavailable``, ``invalid-output``,
``budget-exceeded``). A retry is never a transition of a settled machine: it is a new attempt
with a new machine (and a new session id). ``may_retry`` is the only place that decides
whether another attempt is allowed (ARCHITECTURE decision 11; digest section 7 item 31).
"""

from __future__ import annotations

from typing import Any

from statemachine import State, StateMachine

from agentstudy.fsm.guards import status_is

CONTROLLED_FINAL_STATUSES: tuple[str, ...] = (
    "completed", "failed", "timed-out", "unavailable", "invalid-output", "budget-exceeded",
)
NOT_RETRIED_ERROR_CODES = frozenset({"invalid-metrics", "token-budget"})
"""Outcomes decided from a finished child's answer, never retried (the original decided them
after its retry loop; a retry would spend again on an answer that already arrived)."""


class ControlledAttemptMachine(StateMachine):
    """Lifecycle of one provider attempt.

    Events: ``start`` (the child is about to be spawned), ``settle(status=str, error_code=str|None)``.
    Raises ``TransitionNotAllowed`` on an illegal event: settling twice, settling an attempt
    that never started, or an unknown status.
    """

    pending = State(initial=True, value="pending")
    running = State(value="running")
    completed = State(final=True, value="completed")
    failed = State(final=True, value="failed")
    timed_out = State(final=True, value="timed-out")
    unavailable = State(final=True, value="unavailable")
    invalid_output = State(final=True, value="invalid-output")
    budget_exceeded = State(final=True, value="budget-exceeded")

    start = pending.to(running)
    settle = (
        running.to(completed, cond=status_is("completed"), on="keep_error_code")
        | running.to(failed, cond=status_is("failed"), on="keep_error_code")
        | running.to(timed_out, cond=status_is("timed-out"), on="keep_error_code")
        | running.to(unavailable, cond=status_is("unavailable"), on="keep_error_code")
        | running.to(invalid_output, cond=status_is("invalid-output"), on="keep_error_code")
        | running.to(budget_exceeded, cond=status_is("budget-exceeded"), on="keep_error_code")
    )

    def __init__(self) -> None:
        self.error_code: str | None = None
        """The settled attempt's ``errorCode`` (``None`` for ``completed``)."""
        super().__init__()

    def keep_error_code(self, error_code: str | None = None) -> None:
        """Action of ``settle``: remember why the attempt ended as it did."""
        self.error_code = error_code







    @property
    def status(self) -> str:
        """The current state's value, e.g. ``running`` or ``timed-out``."""
        value: Any = self.current_state_value
        return str(value)

    @property
    def settled(self) -> bool:
        """True once the attempt reached one of its final states."""
        return self.status in CONTROLLED_FINAL_STATUSES


def may_retry(last: ControlledAttemptMachine | None, attempts_made: int, max_attempts: int) -> bool:
    """Whether another attempt may start (the plan's explicit retry limit, ``budget.maxAttempts``).

    The first attempt always may (``last`` is ``None``, ``attempts_made`` 0). After that, only
    when the previous attempt is settled, did not complete, did not end with an error code of
    ``NOT_RETRIED_ERROR_CODES``, and fewer than ``max_attempts`` attempts were made.

    Raises:
        ValueError: when ``max_attempts`` is below 1 or ``attempts_made`` is negative, or when
            ``last`` is not settled.
    """
    if max_attempts < 1 or attempts_made < 0:
        raise ValueError("max_attempts must be at least 1 and attempts_made at least 0")
    if last is None:
        return attempts_made == 0
    if not last.settled:
        raise ValueError("the previous attempt has not settled")
    if attempts_made >= max_attempts or last.status == "completed":
        return False
    return last.error_code not in NOT_RETRIED_ERROR_CODES
