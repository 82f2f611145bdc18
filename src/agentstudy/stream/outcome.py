"""Outcome of a CLI attempt before settlement (seed 000, "Outcomes"; ARCHITECTURE decision 2).

Precedence: a stop signal ended the child (or kept it from starting) -> ``failed``; the child
could not start -> ``failed``; timeout -> ``timed-out``; stdout over
its bound -> ``failed``; any setup problem -> ``invalid-setup``; a cost problem ->
``invalid-cost``; no ``result`` event -> ``failed``; ``error_max_budget_usd`` ->
``budget-exceeded``; any other error, non-``success`` subtype or non-zero exit -> ``failed``;
else ``completed``. The rule "a success charged above its reservation is ``budget-exceeded``"
is applied by settlement (``pricing.budget.settle_attempt``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

CliStatus = Literal[
    "completed", "failed", "timed-out", "budget-exceeded", "invalid-setup", "invalid-cost"
]
CLI_STATUSES: tuple[CliStatus, ...] = (
    "completed",
    "failed",
    "timed-out",
    "budget-exceeded",
    "invalid-setup",
    "invalid-cost",
)
"""Every status a CLI attempt can end with (seed 000, "`status` is ...")."""


@dataclass(frozen=True)
class ProcessFacts:
    """How the child ended: ``started``, ``timed_out``, ``truncated`` (stdout bound hit), ``exit_code``, and
    ``stopped``: a stop signal (``io.signals``) ended it or kept it from starting."""

    started: bool
    timed_out: bool
    truncated: bool
    exit_code: int | None
    stopped: bool = False


@dataclass(frozen=True)
class Outcome:
    """A pre-settlement status and why it is not ``completed``.

    Attributes:
        status: one of the six CLI statuses.
        problem: one line naming the rule that decided ``status`` (the setup or cost problems
            themselves for ``invalid-setup`` / ``invalid-cost``); ``None`` for ``completed``.
    """

    status: CliStatus
    problem: str | None


def _failures(process: ProcessFacts, result: Mapping[str, Any]) -> list[str]:
    reasons: list[str] = []
    is_error = result.get("is_error", "missing")
    if is_error is True:
        reasons.append("result is_error is true")
    elif is_error is not False:
        reasons.append(f"result is_error is {is_error!r}, not false")
    if result.get("subtype") != "success":
        reasons.append(f"result subtype {result.get('subtype')!r} is not 'success'")
    if process.exit_code != 0:
        reasons.append(f"exit code {process.exit_code}")
    return reasons


def outcome(
    process: ProcessFacts,
    setup_problems: Sequence[str],
    cost_problem: str | None,
    result: Mapping[str, Any] | None,
) -> Outcome:
    """The attempt's status and the reason for it, by the precedence above (pure, never raises).

    Args:
        process: how the child ended.
        setup_problems: every setup problem (``stream.setup.check_setup``), shape problems first.
        cost_problem: pricing's verdict: ``None`` when both costs are valid, else the reason.
        result: the last ``result`` event read, or ``None``.
    """
    if process.stopped:
        return Outcome("failed", "a stop signal ended the attempt")
    if not process.started:
        return Outcome("failed", "the executable could not be started")
    if process.timed_out:
        return Outcome("timed-out", "the attempt timed out and its process group was killed")
    if process.truncated:
        return Outcome("failed", "stdout went past its bound and was truncated")
    if setup_problems:
        return Outcome("invalid-setup", "; ".join(setup_problems))
    if cost_problem is not None:
        return Outcome("invalid-cost", cost_problem)
    if result is None:
        return Outcome("failed", "no result event")
    if result.get("subtype") == "error_max_budget_usd":
        return Outcome("budget-exceeded", "result subtype 'error_max_budget_usd'")
    failures = _failures(process, result)
    if failures:
        return Outcome("failed", "; ".join(failures))
    return Outcome("completed", None)


def classify(
    process: ProcessFacts,
    setup_problems: Sequence[str],
    cost_problem: str | None,
    result: Mapping[str, Any] | None,
) -> CliStatus:
    """The attempt's status alone (``outcome(...).status``; pure)."""
    return outcome(process, setup_problems, cost_problem, result).status
