"""Mermaid state diagrams of the run and attempt machines, drawn by python-statemachine itself."""

from __future__ import annotations

from statemachine.contrib.diagram import formatter

from agentstudy.fsm.attempt import AttemptMachine
from agentstudy.fsm.controlled import ControlledAttemptMachine
from agentstudy.fsm.run import RunMachine

DIAGRAMS: dict[str, type] = {
    "attempt-machine": AttemptMachine,
    "run-machine": RunMachine,
    "controlled-attempt-machine": ControlledAttemptMachine,
}
"""File stem -> machine class; ``docs/<stem>.mmd`` holds each drawing."""


def mermaid(name: str) -> str:
    """The Mermaid ``stateDiagram-v2`` source of the machine named ``name`` (a ``DIAGRAMS`` key).

    Raises:
        KeyError: for an unknown name.
    """
    text: str = formatter.render(DIAGRAMS[name], "mermaid")
    return text.rstrip("\n") + "\n"
