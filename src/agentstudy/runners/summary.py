"""The run's stdout summary (digest section 4.4): counts, tokens and spend, never answers or credentials."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.pricing.budget import Budget
from agentstudy.pricing.sums import exact_factor, scaled
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.arm_fidelity import arm_not_delivered_sentence, arms_fidelity
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.protocol.records import CliObservation, HttpObservation
from agentstudy.protocol.run_records import BudgetRecord
from agentstudy.protocol.sequential_record import SequentialRecord
from agentstudy.protocol.treatment import DEFAULT_MINIMUM_USE, not_delivered_sentence

SEED_FULL_ATTEMPTS = 36
"""The seed's full schedule; a pilot of ``n`` attempts extrapolates by ``full attempts / n`` (18 for 2)."""
REHEARSAL_NOTE = "rehearsal: no real money"
"""What every rehearsal's summary says (issue 18, item 6); its JSON line says ``"rehearsal": true``."""


@dataclass(frozen=True)
class RunSummary:
    """The final summary: ``status`` of the run, the ledger path, and ``line`` (the JSON summary object)."""

    status: str
    ledger: Path
    line: dict[str, Any]


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _cache_tokens(observations: Sequence[CliObservation] | Sequence[HttpObservation]) -> dict[str, int | None]:
    cli = [o for o in observations if isinstance(o, CliObservation)]
    return {
        "cacheCreationInputTokens": _sum([o.cache_creation_input_tokens for o in cli]),
        "cacheReadInputTokens": _sum([o.cache_read_input_tokens for o in cli]),
    }


def treatment_line(observations: Sequence[CliObservation] | Sequence[HttpObservation], server_name: str | None,
                   minimum_use: float = DEFAULT_MINIMUM_USE, control_server: str | None = None) -> dict[str, Any]:
    """The summary's ``treatment``: ``{"delivered", "treatmentAttempts", "attemptsUsingServer", "serverCalls"}``
    from the treatment attempts' records (an attempt without one used no server), plus ``warning`` (the
    report's not-delivered sentence) when the treatment was not delivered (issue 28). When the control arm runs
    a server of its own (``control_server``, issue 44), ``control`` is its fidelity
    (``protocol.arm_fidelity.ArmFidelity.to_json``), judged by the same rule: ``delivered`` is false, with the
    report's sentence as ``warning``, when either arm's server was not delivered (``notDeliveredArm``:
    ``"control"`` when the treatment's was and the control's was not)."""
    control, treated = arms_fidelity([(o.scenario, o.treatment) for o in observations],
                                     {DOC_BRIDGE_MCP: server_name or "the server", REPOSITORY_ONLY: control_server},
                                     minimum_use)
    line: dict[str, Any] = {"delivered": bool(treated.delivered) and control.delivered is not False,
                            "treatmentAttempts": treated.attempts, "attemptsUsingServer": treated.using,
                            "serverCalls": treated.calls}
    if control_server is not None:
        line["control"] = control.to_json()
    if not treated.delivered and treated.attempts:
        line["warning"] = not_delivered_sentence(server_name or "the server", treated.using, treated.attempts,
                                                 minimum_use)
    elif control.delivered is False:
        line["warning"] = arm_not_delivered_sentence(control, server_name or "the server")
        line["notDeliveredArm"] = "control"
    return line


STOP_REASON_CHARS = 400
"""How much of the stopping attempt's ``statusReason`` the summary carries (one line)."""


def _stopped_by(
    status: str, observations: Sequence[CliObservation] | Sequence[HttpObservation]
) -> dict[str, Any] | None:
    """The first attempt that did not complete, when the run did not end ``awaiting-adjudication``:
    ``{taskId, scenario, repetition, status, reason}`` (``reason``: its ``setupProblem`` — the
    setup checks' problems, first first, with a failed server call's own words — else its
    ``statusReason``, on one line, at most :data:`STOP_REASON_CHARS` characters); ``None``
    otherwise (issue 32)."""
    if status == "awaiting-adjudication":
        return None
    for o in observations:
        if o.status != "completed":
            problem = o.setup_problem if isinstance(o, CliObservation) else None
            reason = " ".join((problem or o.status_reason or "no reason recorded").split())
            if len(reason) > STOP_REASON_CHARS:
                reason = reason[: STOP_REASON_CHARS - 1] + "…"
            return {"taskId": o.task_id, "scenario": o.scenario, "repetition": o.repetition, "status": o.status,
                    "reason": reason}
    return None


def sequential_line(record: SequentialRecord) -> dict[str, Any]:
    """A sequential run's stop for the summary line: why it stopped (``efficacy``, ``futility``, ``maxTasks`` or
    ``None``), after how many of ``maxTasks`` tasks, the last look's e-value and the efficacy bound ``1/alpha``."""
    last = record.looks[-1].e_value if record.looks else None
    return {"stopReason": record.stop_reason, "tasksCompleted": record.tasks_completed, "maxTasks": record.max_tasks,
            "eValue": last, "threshold": 1.0 / record.alpha, "direction": record.direction}


def summarize(
    status: str,
    mode: str,
    planned: int,
    observations: Sequence[CliObservation] | Sequence[HttpObservation],
    budget: Budget,
    ledger: Path,
    transport: str = "cli",
    rehearsal: bool = False,
    full_attempts: int = SEED_FULL_ATTEMPTS,
    arm_labels: Mapping[str, str] | None = None,
    server_name: str | None = None,
    recorded: BudgetRecord | None = None,
    backoff_pauses: int = 0,
    minimum_use: float = DEFAULT_MINIMUM_USE,
    sequential: SequentialRecord | None = None,
    control_server: str | None = None,
) -> RunSummary:
    """Build the summary of a finished run (``transport`` ``cli`` or ``http``; HTTP has no cache tokens).

    ``rehearsal``: the run talked to the local scripted server; the line says ``"rehearsal": true``
    and its ``note`` is :data:`REHEARSAL_NOTE` (a paid run says ``"rehearsal": false``, no note).

    The pilot extrapolation (spend x ``full_attempts / planned``, exactly: charged spend for CLI,
    upper-price spend for HTTP; x 18 for the seed's 2-attempt pilot, x 4.5 for an 8-attempt one) is given
    only for a pilot that ended ``awaiting-adjudication`` with complete usage and a factor that is an exact
    decimal (``fullRunFactor``, decimal text such as "4.5"); it is
    not an upper bound. A study file's run also names its arms (``armLabels``: scenario →
    label; issue 18); a seed manifest's line has none. ``mcpServer`` is the server's name when known.
    ``recorded`` is the ledger's budget block: its ``reservationRule``, ``worstTurnUsd`` (strict) and
    ``largestOvershootUsd`` (USD, ``None`` when nothing overshot) go on the line (issue 19).
    A run that did not end ``awaiting-adjudication`` names the first attempt that did not
    complete and why (``stoppedBy``; issue 32). When any attempt had a request refused, or the run
    paused (``backoff_pauses``, the ledger's
    ``backoffPauses``), the line adds ``apiRetries``, ``apiRetryWaitMs`` and ``backoffPauses`` (a count;
    issue 33).
    ``treatment`` (issue 28) says whether the server was delivered (:func:`treatment_line`; ``control_server``,
    the control arm's own server's name, issue 44).
    ``sequential`` (the ledger's block of a sequential run) puts its stop on the line (issue 42):
    ``{"stopReason", "tasksCompleted", "maxTasks", "eValue", "threshold", "direction"}``, ``stopReason`` ``None``
    while no look decided (a run blocked or stopped before one).
    """
    usage_complete = all(o.usage_complete for o in observations)
    factor = exact_factor(full_attempts, planned)
    extrapolate = mode == "pilot" and status == "awaiting-adjudication" and usage_complete and factor is not None
    line: dict[str, Any] = {
        "transport": transport,
        "rehearsal": rehearsal,
        **({"note": REHEARSAL_NOTE} if rehearsal else {}),
        "status": status,
        "mode": mode,
        "plannedAttempts": planned,
        "attempts": len(observations),
        "byStatus": dict(Counter(o.status for o in observations)),
        "byScenario": dict(Counter(o.scenario for o in observations)),
        "toolCalls": sum(o.tool_calls for o in observations),
        "inputTokens": _sum([o.input_tokens for o in observations]),
        "outputTokens": _sum([o.output_tokens for o in observations]),
        **(_cache_tokens(observations) if transport == "cli" else {}),
        "spentUsd": usd_number(budget.spent),
        "capUsd": usd_number(budget.cap),
        "usageComplete": usage_complete,
        "extrapolatedFullRunUsd": usd_number(scaled(budget.spent, full_attempts, planned)) if extrapolate else None,
        "extrapolation": f"{full_attempts} attempts / {planned} pilot attempts; not an upper bound" if extrapolate
        else "not applicable",
        "fullRunFactor": format(factor.normalize(), "f") if mode == "pilot" and factor is not None else None,
        "ledger": str(ledger),
    }
    if recorded is not None and recorded.reservation_rule is not None:
        line["reservationRule"] = recorded.reservation_rule
        if recorded.worst_turn_usd is not None:
            line["worstTurnUsd"] = recorded.worst_turn_usd
        line["largestOvershootUsd"] = recorded.largest_overshoot_usd
    retries = sum(o.api_retries or 0 for o in observations)
    if retries or backoff_pauses:
        line["apiRetries"] = retries
        line["apiRetryWaitMs"] = sum(o.api_retry_wait_ms or 0 for o in observations)
        line["backoffPauses"] = backoff_pauses
    line["treatment"] = treatment_line(observations, server_name, minimum_use, control_server)
    stopped = _stopped_by(status, observations)
    if stopped is not None:
        line["stoppedBy"] = stopped
    if sequential is not None:
        line["sequential"] = sequential_line(sequential)
    if arm_labels is not None:
        line["armLabels"] = dict(arm_labels)
    if arm_labels is not None or server_name is not None:
        line["mcpServer"] = server_name
    return RunSummary(status=status, ledger=ledger, line=line)
