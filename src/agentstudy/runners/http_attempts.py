"""The http runner's attempt pieces (seed 000 ``http``; issue 19): the observation, and the concurrent walk's port.

:func:`http_observation` builds an attempt's ledger observation for both walks. :func:`http_port`
is what ``runners.concurrent_walk`` needs to run http attempts N at once (``--concurrency``).

The rule chosen for a concurrent http run is the simple, honest one: each attempt is admitted
against its whole per-attempt limit (``--attempt-budget-usd``; its reservation stays open, whole,
in ``openReservations`` with ``chargedUsd`` 0 until the attempt is recorded), and its agent loop
reserves call by call against that limit only — an attempt-local ``Budget`` whose cap is the
reservation — never against the run's budget. So the worker thread never touches the ledger or
the run's budget, ``spent`` = the observations' charges + every open reservation at every
checkpoint, and an attempt's charge never exceeds its reservation (a call is sent only when its
worst-case cost fits what the attempt has left): spent <= cap holds at any concurrency. A call
that does not fit ends the attempt ``budget-exceeded`` (which stops an http run). After a stop
signal an attempt that did not complete is charged at least its whole reservation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from decimal import Decimal
from typing import cast

from agentstudy.io.containment import ContainmentMode
from agentstudy.io.signals import stop_signal
from agentstudy.io.transcripts import TranscriptStore
from agentstudy.pricing.budget import Budget, conservative_charge
from agentstudy.pricing.http import CallReservation, CallSettlement
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.late_errors import internal_error_reason
from agentstudy.protocol.records import HttpObservation
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.attempt_port import AttemptPort, ObservedThenFailed, kept_or_late
from agentstudy.runners.transcript_keeping import keep_transcript
from agentstudy.transports.http import HttpSettings, http_isolation
from agentstudy.transports.http_contract import CallLedger, HttpAttemptResult


def arm_notes(settings: HttpSettings, scenario: str) -> tuple[str, ...] | None:
    """The ``isolationNotAchieved`` sentences of ``scenario``'s arm's server (``HttpSettings.arm_mcp``; issue 44),
    ``None`` when the arm runs no server."""
    spec = settings.arm_mcp(scenario)
    return None if spec is None else spec.isolation_notes()


def http_observation(entry: ScheduleEntry, model: str, result: HttpAttemptResult, status: str,
                     containment: ContainmentMode, server_notes: Sequence[str] | None, *, charged: Decimal,
                     cap_exceeded: bool, transcript: dict[str, str] | None = None) -> HttpObservation:
    """The ledger observation of one http attempt settled ``status``, charged ``charged`` USD, with the run's
    ``cumulativeCapExceeded`` after it (``cap_exceeded``); ``server_notes``: the arm's MCP server's own
    ``isolationNotAchieved`` sentences (``McpServerSpec.isolation_notes``; ``None``: the arm runs no server,
    :func:`arm_notes`); ``transcript`` holds its kept
    transcript's ``transcript_file`` / ``transcript_sha256`` (issue 28)."""
    return HttpObservation.model_validate({
        "taskId": entry.task_id, "repository": entry.repository,
        "scenario": entry.scenario, "repetition": entry.repetition, "position": entry.position, "model": model,
        "tools": result.tools, "toolCallsByName": result.tool_calls_by_name,
        "toolErrorsByName": result.tool_errors_by_name, "toolCalls": result.tool_calls, "numTurns": result.turns,
        "inputTokens": result.input_tokens, "outputTokens": result.output_tokens,
        "usageComplete": result.usage_complete, "reservedUsd": usd_number(result.reserved_usd),
        "measuredUsd": usd_number(result.measured_usd), "chargedUsd": usd_number(charged),
        "cumulativeCapExceeded": cap_exceeded, "wallTimeMs": result.wall_time_ms, "status": status,
        "statusReason": result.status_reason, "answer": result.answer if status == "completed" else "",
        **http_isolation(containment, entry.scenario, server_notes or (), served=server_notes is not None),
        **({"workerNode": result.worker_node} if result.worker_node is not None else {}),
        "apiRetries": result.api_retries, "apiRetryWaitMs": result.api_retry_wait_ms,
        "apiRetryStatuses": list(result.api_retry_statuses),
        **({"failureKind": result.failure_kind} if status in ("failed", "timed-out")
           and result.failure_kind is not None else {}),
        **({"treatment": result.treatment.to_json()} if result.treatment is not None else {}),
        **({"transcriptFile": transcript["transcript_file"], "transcriptSha256": transcript["transcript_sha256"]}
           if transcript else {}),
    })


def observe_settled_http(entry: ScheduleEntry, model: str, result: HttpAttemptResult, containment: ContainmentMode,
                         server_notes: Sequence[str] | None,
                         transcripts: TranscriptStore | None) -> tuple[HttpObservation, ObservedThenFailed | None]:
    """The one-at-a-time http loop's observation of ``result`` (its calls already settled: charged
    ``result.charged_usd`` USD) with its transcript kept, and the internal error that came after its result, if any
    (issue 40): a transcript not kept leaves the observation without it; any other error gives the ``failed``
    observation of the same calls and charge, its ``statusReason`` naming the error. Either way it is recorded,
    then the run stops."""

    def build(of: HttpAttemptResult, kept: dict[str, str]) -> HttpObservation:
        return http_observation(entry, model, of, of.status, containment, server_notes, charged=of.charged_usd,
                                cap_exceeded=of.budget.cap_exceeded, transcript=kept)

    def keep(kept: dict[str, str]) -> None:
        kept.update(keep_transcript(transcripts, entry, result.exchange))

    try:
        return kept_or_late(lambda kept: build(result, kept), keep), None
    except ObservedThenFailed as failed:
        return cast(HttpObservation, failed.observation), failed
    except Exception as error:  # the transcript kept before it is named (the store keeps each file once)
        failed_result = dataclasses.replace(result, status="failed", status_reason=internal_error_reason(error),
                                            answer="", usage_complete=False)
        try:
            observation = kept_or_late(lambda kept: build(failed_result, kept), keep)
        except ObservedThenFailed as again:
            observation = cast(HttpObservation, again.observation)
        return observation, ObservedThenFailed(observation, error)


class _WithinTheAttempt:
    """The :class:`~agentstudy.transports.http_contract.CallLedger` of a concurrent attempt: nothing to persist.

    Its calls reserve against the attempt's own budget (its reservation, already on disk whole),
    so no call changes the run's ``spent`` and nothing needs writing before a request.
    """

    def reserved(self, budget: Budget, reservation: CallReservation) -> None:
        """Nothing: the attempt's whole reservation is already checkpointed."""

    def settled(self, budget: Budget, settlement: CallSettlement) -> None:
        """Nothing: the attempt is settled into the run's budget when the walk records it."""


WITHIN_THE_ATTEMPT = _WithinTheAttempt()
"""The call ledger of every concurrent attempt (its agent loop on a thread or on a Ray worker, issue 20)."""

AttemptLoop = Callable[[ScheduleEntry, Budget, CallLedger], HttpAttemptResult]
"""Runs one scheduled http attempt's agent loop with the given budget and call ledger."""

AttemptStart = Callable[[ScheduleEntry], Future[HttpAttemptResult]]
"""Starts one admitted attempt's agent loop and returns the future of its result."""


def local_start(loop: AttemptLoop, reservation: Decimal, pool: Executor) -> AttemptStart:
    """Each attempt's ``loop`` on a thread of ``pool``, with its own budget of ``reservation`` USD (issue 19)."""

    def run(entry: ScheduleEntry) -> HttpAttemptResult:
        return loop(entry, Budget(cap=reservation), WITHIN_THE_ATTEMPT)

    return lambda entry: pool.submit(run, entry)


def unstarted_result(reservation: Decimal, reason: str, node: str | None = None) -> HttpAttemptResult:
    """The result of an attempt that ended without a loop result (its body raised before its first request,
    issue 40: ``never started: …``; a dead worker, issue 20): ``failed`` with ``reason`` as its ``statusReason``,
    usage incomplete, nothing measured, the whole ``reservation`` (USD) charged."""
    return HttpAttemptResult(
        status="failed", status_reason=reason, budget=Budget(cap=reservation).reserve(reservation),
        input_tokens=0, output_tokens=0, usage_complete=False, turns=0, tool_calls=0, tool_calls_by_name={},
        tool_errors_by_name={}, tools=[], reserved_usd=reservation, measured_usd=Decimal(0),
        charged_usd=reservation, wall_time_ms=0, answer="", worker_node=node,
    )


def http_port(
    start: AttemptStart, reservation: Decimal,
    observe: Callable[[ScheduleEntry, HttpAttemptResult, str, Decimal, bool], HttpObservation],
) -> AttemptPort[HttpAttemptResult, HttpObservation]:
    """The concurrent walk's http port (issue 19; the rule in the module docstring).

    Args:
        start: starts an admitted attempt (``local_start``, or ``runners.http_remote.remote_start``
            on the run's executor, issue 20).
        reservation: each attempt's reservation, USD: the cap of its own budget.
        observe: ``(entry, result, status, charged, cap_exceeded)`` -> the observation.
    """

    def settle(result: HttpAttemptResult) -> tuple[str, Decimal]:
        if result.status != "completed" and stop_signal() is not None:
            return result.status, conservative_charge(reservation, (result.charged_usd,))
        return result.status, result.charged_usd

    def measure(tally: Tally, result: HttpAttemptResult) -> Tally:
        return tally.add_measured(result.measured_usd, None)

    def make(entry: ScheduleEntry, result: HttpAttemptResult, status: str, reserved: Decimal, charged: Decimal,
             cap_exceeded: bool) -> HttpObservation:
        return observe(entry, result, status, charged, cap_exceeded)

    def unstarted(entry: ScheduleEntry, reason: str) -> HttpAttemptResult:
        return unstarted_result(reservation, reason)

    return AttemptPort(submit=start, settle=settle, measure=measure, observe=make, unstarted=unstarted)


__all__ = ["WITHIN_THE_ATTEMPT", "AttemptLoop", "AttemptStart", "http_observation", "http_port", "local_start",
           "observe_settled_http", "unstarted_result"]
