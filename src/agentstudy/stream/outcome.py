"""Outcome of a CLI attempt before settlement (seed 000, "Outcomes"; ARCHITECTURE decision 2).

Precedence: a stop signal ended the child (or kept it from starting) -> ``failed``; the child
could not start -> ``failed``; timeout -> ``timed-out``; stdout over
its bound -> ``failed``; any setup problem -> ``invalid-setup``; a cost problem ->
``invalid-cost``; no ``result`` event -> ``failed``; ``error_max_budget_usd`` ->
``budget-exceeded``; any other error, non-``success`` subtype or non-zero exit -> ``failed``;
else ``completed``. The rule "a success charged above its reservation is ``budget-exceeded``"
is applied by settlement (``pricing.budget.settle_attempt``).

Every status but ``completed`` carries two explanations: ``problem``, the rule in detail (the
setup or cost problems themselves, the result's subtype), and ``reason``, the rule in our own
short words with no text taken from the transcript (the ledger's ``statusReason``). A child
stopped by a signal (negative exit code) is named by its signal in both.
"""

from __future__ import annotations

import signal
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
    ``stopped``: a stop signal (``io.signals``) ended it or kept it from starting.

    ``timeout_s`` (seconds) and ``stdout_limit`` (bytes) are the bounds the child ran under,
    when known; they only make the reasons more precise.
    """

    started: bool
    timed_out: bool
    truncated: bool
    exit_code: int | None
    timeout_s: float | None = None
    stdout_limit: int | None = None
    stopped: bool = False


@dataclass(frozen=True)
class Outcome:
    """A pre-settlement status and why it is not ``completed``.

    Attributes:
        status: one of the six CLI statuses.
        problem: one line naming the rule that decided ``status`` (the setup or cost problems
            themselves for ``invalid-setup`` / ``invalid-cost``); ``None`` for ``completed``.
        reason: the same rule in our own short words, never text from the transcript (what the
            ledger records as ``statusReason``); ``None`` for ``completed``.
    """

    status: CliStatus
    problem: str | None
    reason: str | None = None


def size_text(limit: int) -> str:
    """A byte count as the bound is usually written: ``4 MiB``, ``64 KiB`` or ``1000 bytes``."""
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


def exit_text(exit_code: int | None) -> str:
    """``exit code 3`` (``exit code None`` when unknown) or ``stopped by signal SIGTERM`` (a negative code)."""
    if exit_code is not None and exit_code < 0:
        try:
            return f"stopped by signal {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"stopped by signal {-exit_code}"
    return f"exit code {exit_code}"


def _failures(process: ProcessFacts, result: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The failed result's problems in detail, and the same in our own words."""
    problems: list[str] = []
    reasons: list[str] = []
    is_error = result.get("is_error", "missing")
    if is_error is True:
        problems.append("result is_error is true")
        reasons.append("the CLI reported an error")
    elif is_error is not False:
        problems.append(f"result is_error is {is_error!r}, not false")
        reasons.append("the result's is_error is not false")
    if result.get("subtype") != "success":
        problems.append(f"result subtype {result.get('subtype')!r} is not 'success'")
        reasons.append("the result subtype is not 'success'")
    if process.exit_code != 0:
        problems.append(exit_text(process.exit_code))
        reasons.append(exit_text(process.exit_code))
    return problems, reasons


def _stopped(process: ProcessFacts) -> str:
    """``; the child was stopped by signal SIGKILL`` for a child a signal ended, else empty."""
    code = process.exit_code
    return f"; the child was {exit_text(code)}" if code is not None and code < 0 else ""


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
        return _same("failed", "a stop signal ended the attempt")
    if not process.started:
        return _same("failed", "the executable could not be started")
    if process.timed_out:
        after = f" after {process.timeout_s:g} s" if process.timeout_s is not None else ""
        return _same("timed-out", f"the attempt timed out{after} and its process group was killed")
    if process.truncated:
        bound = f" {size_text(process.stdout_limit)}" if process.stdout_limit is not None else ""
        return _same("failed", f"stdout went past its{bound} bound and was truncated")
    stopped = _stopped(process)
    if setup_problems:
        return Outcome("invalid-setup", "; ".join(setup_problems), f"the setup checks failed (setupProblem){stopped}")
    if cost_problem is not None:
        return Outcome("invalid-cost", cost_problem, f"a cost is invalid (costProblem){stopped}")
    if result is None:
        return _same("failed", f"no result event{stopped}")
    if result.get("subtype") == "error_max_budget_usd":
        return _same("budget-exceeded", "result subtype 'error_max_budget_usd'")
    problems, reasons = _failures(process, result)
    if problems:
        return Outcome("failed", "; ".join(problems), "; ".join(reasons))
    return Outcome("completed", None)


def _same(status: CliStatus, text: str) -> Outcome:
    """An outcome whose detailed problem is already our own words (nothing from the transcript)."""
    return Outcome(status, text, text)


def classify(
    process: ProcessFacts,
    setup_problems: Sequence[str],
    cost_problem: str | None,
    result: Mapping[str, Any] | None,
) -> CliStatus:
    """The attempt's status alone (``outcome(...).status``; pure)."""
    return outcome(process, setup_problems, cost_problem, result).status


STOPPED_FACTS = ProcessFacts(started=False, timed_out=False, truncated=False, exit_code=None, stopped=True)
"""The facts of a child a stop signal kept from starting (``transports.cli``)."""
