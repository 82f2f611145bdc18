"""Outcome of a CLI attempt before settlement (seed 000, "Outcomes"; ARCHITECTURE decision 2).

Precedence: the child could not start -> ``failed``; timeout -> ``timed-out``; stdout over
its bound -> ``failed``; any setup problem -> ``invalid-setup``; a cost problem ->
``invalid-cost``; ``error_max_budget_usd`` -> ``budget-exceeded``; any other error,
non-``success`` subtype or non-zero exit -> ``failed``; else ``completed``. The rule "a
success charged above its reservation is ``budget-exceeded``" is applied by settlement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

CliStatus = Literal[
    "completed", "failed", "timed-out", "budget-exceeded", "invalid-setup", "invalid-cost"
]


@dataclass(frozen=True)
class ProcessFacts:
    """How the child ended: ``started``, ``timed_out``, ``truncated`` (stdout bound hit), ``exit_code``."""

    started: bool
    timed_out: bool
    truncated: bool
    exit_code: int | None


def classify(
    process: ProcessFacts,
    setup_problems: Sequence[str],
    cost_problem: str | None,
    result: dict[str, Any] | None,
) -> CliStatus:
    """The attempt's status by the precedence above (pure)."""
    if not process.started:
        return "failed"
    if process.timed_out:
        return "timed-out"
    if process.truncated:
        return "failed"
    if setup_problems:
        return "invalid-setup"
    if cost_problem is not None:
        return "invalid-cost"
    if result is None:
        return "failed"
    if result.get("subtype") == "error_max_budget_usd":
        return "budget-exceeded"
    if result.get("is_error") is not False or result.get("subtype") != "success" or process.exit_code != 0:
        return "failed"
    return "completed"
