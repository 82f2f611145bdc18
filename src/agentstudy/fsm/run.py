"""The run state machine: ``preflight -> running -> blocked | awaiting-adjudication``, or ``preflight -> refused``.

None of these states means approval. ``finish`` reaches ``awaiting-adjudication`` only when
every planned attempt was observed and every observation is ``completed``; otherwise the run
must be ``block``-ed.
"""

from __future__ import annotations

from typing import Any

from statemachine import State, StateMachine


class RunMachine(StateMachine):
    """Lifecycle of one study run (seed 000, "Run status is running, blocked, or awaiting-adjudication").

    Events: ``begin``, ``refuse``, ``block``, ``finish(all_completed=bool)``.
    """

    preflight = State(initial=True, value="preflight")
    refused = State(final=True, value="refused")
    running = State(value="running")
    blocked = State(final=True, value="blocked")
    awaiting_adjudication = State(final=True, value="awaiting-adjudication")

    begin = preflight.to(running)
    refuse = preflight.to(refused)
    block = running.to(blocked)
    finish = running.to(awaiting_adjudication, cond="every_attempt_completed")

    def every_attempt_completed(self, all_completed: bool = False) -> bool:
        """Guard of ``finish``: all planned attempts were observed and are ``completed``."""
        return all_completed

    @property
    def status(self) -> str:
        """The current state's value, e.g. ``running`` or ``awaiting-adjudication``."""
        value: Any = self.current_state_value
        return str(value)
