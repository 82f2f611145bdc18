"""The run state machine: the only authority over a study run's status.

``preflight -> running -> blocked | awaiting-adjudication``, or ``preflight -> refused``.
While running, every settled attempt is ``observe``-d; the machine keeps the statuses and
applies the stop rule of the transport. ``finish`` reaches ``awaiting-adjudication`` only
when every planned attempt was observed and every one is ``completed``; otherwise the run is
``blocked``. None of these states means approval (seed 000, "Run status is …; none is approval").
"""

from __future__ import annotations

from typing import Any, Literal

from statemachine import State, StateMachine

Transport = Literal["cli", "http"]
HTTP_STOPPING_STATUSES = frozenset({"failed", "budget-exceeded"})
"""HTTP stop rule (ARCHITECTURE decision 9): ``incomplete`` and ``timed-out`` let the run go on."""


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
    finish = running.to(awaiting_adjudication, cond="every_attempt_completed") | running.to(
        blocked, unless="every_attempt_completed"
    )
    block = running.to(blocked)

    def __init__(self, planned: int, transport: Transport = "cli") -> None:
        self.planned = planned
        self.transport: Transport = transport
        self.statuses: list[str] = []
        super().__init__()

    def has_planned_room(self) -> bool:
        """Guard of ``observe``: fewer attempts observed than planned."""
        return len(self.statuses) < self.planned

    def record(self, status: str) -> None:
        """Action of ``observe``: keep the settled attempt's status."""
        self.statuses.append(status)

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
