"""The run state machine: the only authority over a study run's status.

``preflight -> running -> blocked | awaiting-adjudication``, or ``preflight -> refused``.
While running, every settled attempt is ``observe``-d; the machine keeps the statuses and
applies the stop rule of the transport. ``finish`` reaches ``awaiting-adjudication`` only
when every planned attempt was observed and every one is ``completed``; otherwise the run is
``blocked``. None of these states means approval (seed 000, "Run status is …; none is approval").

Concurrency (issue 19, item 3): ``admit`` counts an attempt whose reservation is checkpointed and
whose child may start; ``observe`` ends one in flight. ``may_admit`` is the admission side of
the stop rule: nothing is admitted once an observed (or ``halt``-ed, e.g. seen settling out of
order) outcome stops the run or a stop was asked (``stop_admission``); attempts already in flight
are still observed. With one attempt at a time (the seed's walk) nobody calls ``admit`` and the
machine behaves as before.
"""

from __future__ import annotations

from typing import Any, Literal

from statemachine import State, StateMachine

Transport = Literal["cli", "http"]
HTTP_STOPPING_STATUSES = frozenset({"failed", "budget-exceeded", "invalid-setup"})
"""HTTP stop rule (ARCHITECTURE decision 9): ``incomplete`` and ``timed-out`` let the run go on; ``invalid-setup``
(a treatment lost, issue 28) stops it as on the cli."""


class RunMachine(StateMachine):
    """Lifecycle of one study run.

    Args:
        planned: number of scheduled attempts.
        transport: ``cli`` (anything but ``completed`` stops the run) or ``http``
            (``failed`` and ``budget-exceeded`` stop it).

    Events: ``begin``, ``refuse``, ``observe(status=str)``, ``finish``, ``block``. An illegal
    event raises ``TransitionNotAllowed``; observing more attempts than planned is illegal.
    """

    preflight = State(initial=True, value="preflight")
    refused = State(final=True, value="refused")
    running = State(value="running")
    blocked = State(final=True, value="blocked")
    awaiting_adjudication = State(final=True, value="awaiting-adjudication")

    begin = preflight.to(running)
    refuse = preflight.to(refused)
    observe = running.to.itself(internal=True, cond="has_planned_room", on="record")  # type: ignore[no-untyped-call]
    admit = running.to.itself(internal=True, cond="may_admit", on="count_admission")  # type: ignore[no-untyped-call]
    finish = running.to(awaiting_adjudication, cond="every_attempt_completed") | running.to(
        blocked, unless="every_attempt_completed"
    )
    block = running.to(blocked)

    def __init__(self, planned: int, transport: Transport = "cli") -> None:
        self.planned = planned
        self.transport: Transport = transport
        self.statuses: list[str] = []
        self.admitted = 0
        self.first_stop: int | None = None
        """1-based admission index of the first attempt whose outcome stopped admission (``halt``/``observe``)."""
        self.admission_stopped = False
        super().__init__()

    def stops(self, status: str) -> bool:
        """Whether an attempt ending ``status`` stops the run under this transport's rule (decision 9)."""
        if self.transport == "cli":
            return status != "completed"
        return status in HTTP_STOPPING_STATUSES

    def may_admit(self) -> bool:
        """Guard of ``admit``: admission not stopped, and fewer attempts admitted than planned."""
        return not self.admission_stopped and self.admitted < self.planned

    def count_admission(self) -> None:
        """Action of ``admit``: one more attempt in flight."""
        self.admitted += 1

    @property
    def in_flight(self) -> int:
        """Attempts admitted and not yet observed (0 in the sequential walk, which never calls ``admit``)."""
        return max(self.admitted - len(self.statuses), 0)

    def halt(self, index: int, status: str) -> bool:
        """Attempt ``index`` (1-based, admission order) ended ``status``: stop admission if that stops the run.

        Called as soon as an outcome is known, even before earlier attempts are observed; returns
        whether admission is (now) stopped. The first stopping index is kept (the smallest seen).
        """
        if self.stops(status):
            self.admission_stopped = True
            self.first_stop = index if self.first_stop is None else min(self.first_stop, index)
        return self.admission_stopped

    def stop_admission(self) -> None:
        """Stop admitting (a stop signal, the cap, an error); attempts in flight are still observed."""
        self.admission_stopped = True

    def end_schedule(self) -> None:
        """A sequential study stopped (issue 35): the schedule ends with the attempts already admitted (in the
        one-at-a-time walk, the ones observed), so nothing more is admitted and ``finish`` reaches
        ``awaiting-adjudication`` once those are observed and every one is ``completed``."""
        self.planned = max(self.admitted, len(self.statuses))

    def has_planned_room(self) -> bool:
        """Guard of ``observe``: fewer attempts observed than planned."""
        return len(self.statuses) < self.planned

    def record(self, status: str) -> None:
        """Action of ``observe``: keep the settled attempt's status (a stopping one stops admission)."""
        self.statuses.append(status)
        if self.admitted:
            self.halt(len(self.statuses), status)

    def every_attempt_completed(self) -> bool:
        """Guard of ``finish``: all planned attempts observed and every one ``completed``."""
        return len(self.statuses) == self.planned and all(s == "completed" for s in self.statuses)

    def should_stop(self) -> bool:
        """The stop rule after the last observation (decision 9), or when nothing is left to run."""
        if len(self.statuses) >= self.planned:
            return True
        if not self.statuses:
            return False
        last = self.statuses[-1]
        if self.transport == "cli":
            return last != "completed"
        return last in HTTP_STOPPING_STATUSES

    @property
    def status(self) -> str:
        """The current state's value, e.g. ``running`` or ``awaiting-adjudication``."""
        value: Any = self.current_state_value
        return str(value)
