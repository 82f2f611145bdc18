"""The minimal study runner with the http transport (seed 000 ``http``; digest 2.1, 2.4, 4).

Preflight as for the CLI minus the version probe: every root clean at its pin with its task
sources, and the MCP server of every checkout a ``doc-bridge-mcp`` attempt uses starts,
answers its probe and lists the same tools. Then, per scheduled attempt: mark it open on disk,
run the agent loop (which reserves and persists before every request and settles after), and
checkpoint the observation. With ``concurrency`` above 1 the walk is ``runners.concurrent_walk``
through ``runners.http_attempts.http_port`` (issue 19): up to N attempts in flight, each admitted
against its whole per-attempt limit, its calls reserving within that limit; their agent loops
run on threads here or, with ``executor="ray"``, as Ray tasks (``runners.http_remote``, issue 20).
``failed`` and ``budget-exceeded`` stop the run; ``incomplete`` and
``timed-out`` are observations and the run goes on (the run machine's HTTP stop rule); the
run ends ``blocked`` unless every attempt completed. Every saved document has each occurrence
of the API key replaced by ``[redacted]``, then sealed with its hashes (``protocol.ledger_integrity``).
State changes go through ``fsm``; money through ``pricing``.

A stop signal (``io.signals``) stops admission: before the ledger exists the run raises
``StopRequested`` and nothing is written; afterwards the running attempt ends ``failed`` with
the signal as its reason (an interrupted request keeps its whole reservation charged,
``usageComplete: false``), the ledger is checkpointed ``blocked`` with ``stopped by SIG…`` as
its stop reason, and ``StopRequested`` is raised.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from decimal import Decimal

from agentstudy.fsm.attempt import AttemptMachine
from agentstudy.fsm.run import HTTP_STOPPING_STATUSES, RunMachine
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.io.ledger_store import OutputPathError, resolve_output
from agentstudy.io.messages_api import (
    ApiKeyError,
    BaseUrlError,
    MessagesClient,
    check_api_key,
    check_base_url,
)
from agentstudy.io.signals import StopRequested, raise_if_stopped, stop_signal
from agentstudy.io.transcripts import environment_secrets
from agentstudy.pricing.budget import Budget, reservation_for
from agentstudy.pricing.http import CallReservation, CallSettlement
from agentstudy.pricing.money import exact
from agentstudy.pricing.strict_cap import HTTP_RULE
from agentstudy.pricing.tally import Tally
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.ledger_invariants import is_loopback_http
from agentstudy.protocol.manifest import REPOSITORY_ONLY
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.records import BackoffPause, HttpObservation, MinimalLedger
from agentstudy.protocol.redaction import redact
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.attempt_port import kept_or_late
from agentstudy.runners.concurrent_walk import ConcurrentWalk
from agentstudy.runners.continuation_steps import continued_schedule, start_ledger
from agentstudy.runners.executor_choice import ray_ledger_fields
from agentstudy.runners.http_attempts import arm_notes, http_observation, http_port, local_start, observe_settled_http
from agentstudy.runners.http_remote import HttpJob, open_http_executor, remote_start
from agentstudy.runners.http_request import (
    HttpRunRequest,
    http_ledger,
    settle_interrupted,
)
from agentstudy.runners.ledger_steps import (
    budget_record,
    close_normally,
    close_on_error,
    open_reservation,
    stopped_detail,
    summary_names,
)
from agentstudy.runners.preflight import NOTHING_WRITTEN, PreflightError, prepare_study, refusal
from agentstudy.runners.progress import AttemptProgress, finish_progress
from agentstudy.runners.sequential_runs import start_sequential, study_schedule
from agentstudy.runners.summary import RunSummary, summarize
from agentstudy.runners.transcript_keeping import keep_transcript, transcript_store
from agentstudy.transports.api_retry import BackoffGate
from agentstudy.transports.http import HttpSettings, run_http_attempt
from agentstudy.transports.http_contract import CallLedger, HttpAttemptResult


class _Checkpoints:
    """The loop's :class:`~agentstudy.transports.http_contract.CallLedger`: keeps the budget and open marker on disk."""

    def __init__(self, ledger: MinimalLedger, save: Callable[[], None], entry: ScheduleEntry, tally: Tally) -> None:
        self.ledger, self.save, self.entry, self.tally = ledger, save, entry, tally
        self.charged = Decimal(0)  # what the attempt's settled calls charged (part of spent, in no observation)

    def reserved(self, budget: Budget, reservation: CallReservation) -> None:
        """Persist a call's reservation before its request is sent."""
        self.tally = self.tally.add_reservation(reservation.usd)
        self.ledger.budget = budget_record(budget, self.tally, HTTP_RULE)
        self.ledger.open_reservation = open_reservation(self.entry, reservation.usd, self.charged)
        self.save()

    def settled(self, budget: Budget, settlement: CallSettlement) -> None:
        """Persist a call's settlement (the attempt stays open with nothing reserved, its charges so far recorded)."""
        if settlement.usage is not None:
            self.tally = self.tally.add_measured(settlement.charged_usd, None)
        with exact():
            self.charged += settlement.charged_usd
        self.ledger.budget = budget_record(budget, self.tally, HTTP_RULE)
        self.ledger.open_reservation = open_reservation(self.entry, Decimal(0), self.charged)
        self.save()


def run_http_study(request: HttpRunRequest) -> RunSummary:
    """Run the pilot or full schedule with the http transport and return the summary.

    Raises:
        PreflightError: the run was refused before any reservation (bad key or base URL
            included); no ledger was written and no request sent.
        OutputPathError: the ledger path exists, lies inside a checkout or cannot be created;
            nothing was written.
        CheckpointError: a checkpoint failed mid-run; the run stopped and the ledger on disk is
            the last good one (closed ``blocked`` with the reason where a later write succeeded).
        StopRequested: a stop signal arrived; the ledger, if one was created, is ``blocked`` and
            names the signal (see the module docstring).
    """
    with ExitStack() as stack:
        return _run_http_study(request, stack)


def _run_http_study(request: HttpRunRequest, stack: ExitStack) -> RunSummary:
    manifest = request.loaded.manifest
    schedule = continued_schedule(study_schedule(request.loaded, request.mode, request.pilot, request.sequential),
                                  request.continuation)
    run = RunMachine(len(schedule), "http")
    try:
        if request.concurrency > 1 and (request.attempt_budget_usd is None
                                        or not Decimal(0) < request.attempt_budget_usd <= request.cap_usd):
            raise PreflightError("a concurrent http run needs a per-attempt limit above zero and at most the cap")
        try:  # the key and the URL first: a bad one is refused before any server or checkout is started
            api_key, base_url = check_api_key(request.api_key), check_base_url(request.base_url)
        except (ApiKeyError, BaseUrlError) as error:
            raise PreflightError(str(error)) from None
        if request.rehearsal and not is_loopback_http(base_url):
            raise PreflightError("a rehearsal talks only to the local rehearsal server (an http loopback URL)")
        checked = prepare_study(stack, request.mcp, manifest, schedule, request.roots, request.containment,
                                request.parent_env, request.concurrency, control=request.control_mcp)
        raise_if_stopped(NOTHING_WRITTEN)
        mcp = checked.mcp
        output = resolve_output(request.output, (*request.roots.values(), *request.forbidden_output_roots))
        remote = open_http_executor(stack, request, schedule) if request.executor == "ray" else None
        transcripts = transcript_store(request.keep_transcripts, output,
                                       environment_secrets({**os.environ, **request.parent_env}, [api_key]))
        ledger = http_ledger(request, base_url, mcp, len(schedule), checked.arm_preflight(REPOSITORY_ONLY))
        ledger.transcripts = request.keep_transcripts
        ledger.containment = checked.containment
        start_ledger(ledger, request.continuation)
        looked = start_sequential(ledger, request.sequential, request.continuation)
        if remote is not None:
            ray_ledger_fields(ledger, remote, request.progress)
        store = JournaledLedger(output, ledger, transform=lambda value: redact(value, api_key))
        stack.callback(store.close)
        stack.callback(finish_progress, request.progress)
    except BaseException as error:
        run.refuse()
        failure = refusal(error, (OutputPathError,))
        if failure is error:
            raise
        raise failure from error
    client = MessagesClient(api_key, base_url)
    gate = BackoffGate()

    def note_pauses() -> None:
        pauses = gate.pauses
        ledger.backoff_pauses = [BackoffPause.model_validate(p) for p in pauses] if pauses else None

    def record() -> None:
        note_pauses()
        store.record(ledger)

    def save() -> None:
        note_pauses()
        store.checkpoint(seal_ledger(redact(ledger.to_json(), api_key)))

    settings = HttpSettings(model=request.model, prices=request.prices, mcp=request.mcp, clock=request.clock,
                            retry=request.retry,
                            containment=request.containment, parent_env=request.parent_env,
                            control_mcp=request.control_mcp)
    budget, tally = Budget(cap=request.cap_usd), Tally()
    observations: list[HttpObservation] = []
    run.begin()

    def attempt_loop(entry: ScheduleEntry, within: Budget, calls: CallLedger) -> HttpAttemptResult:
        return run_http_attempt(
            settings, sender=client, scenario=entry.scenario, root=request.roots[entry.repository],
            pin=manifest.repositories[entry.repository], prompt=study_prompt(manifest.task(entry.task_id).question),
            budget=within, ledger=calls,
            server=checked.server_paths(entry), gate=gate,
        )

    def job_for(entry: ScheduleEntry, reservation: Decimal) -> HttpJob:
        return HttpJob(settings, base_url, api_key if request.rehearsal else None, entry.scenario, entry.repository,
                       manifest.repositories[entry.repository], study_prompt(manifest.task(entry.task_id).question),
                       reservation, checked.server_paths(entry), api_key=api_key)

    try:
        with client:
            if request.concurrency > 1:
                assert request.attempt_budget_usd is not None  # checked before the ledger was created
                reservation = reservation_for(request.attempt_budget_usd)

                def observe(entry: ScheduleEntry, result: HttpAttemptResult, status: str, charged: Decimal,
                            cap_exceeded: bool) -> HttpObservation:
                    return kept_or_late(lambda kept: http_observation(
                        entry, request.model, result, status, request.containment, arm_notes(settings, entry.scenario),
                        charged=charged, cap_exceeded=cap_exceeded, transcript=kept,
                    ), lambda kept: kept.update(keep_transcript(transcripts, entry, result.exchange)))

                with ThreadPoolExecutor(max_workers=request.concurrency, thread_name_prefix="attempt") as pool:
                    start = (local_start(attempt_loop, reservation, pool) if remote is None
                             else remote_start(remote, lambda entry: job_for(entry, reservation), reservation))
                    walked = ConcurrentWalk(
                        run=run, ledger=ledger, store=store, concurrency=request.concurrency, cap=request.cap_usd,
                        limit=request.attempt_budget_usd, reservation=reservation,
                        port=http_port(start, reservation, observe), progress=request.progress, rule=HTTP_RULE,
                        on_recorded=looked,
                        gate=gate,
                    ).walk(schedule)
                observations, budget = walked.observations, walked.budget
            else:
                for index, entry in enumerate(schedule, start=1):
                    raise_if_stopped()
                    where = AttemptProgress(index, len(schedule), entry.task_id, entry.scenario, entry.repetition)
                    attempt = AttemptMachine()
                    attempt.reserve()
                    ledger.open_reservation = open_reservation(entry, Decimal(0))
                    record()
                    attempt.start(checkpointed=True)
                    request.progress.attempt_started(where)
                    checkpoints = _Checkpoints(ledger, record, entry, tally)
                    result = attempt_loop(entry, budget, checkpoints)
                    budget, tally = result.budget, checkpoints.tally
                    observation, late = observe_settled_http(entry, request.model, result, request.containment,
                                                             arm_notes(settings, entry.scenario), transcripts)
                    attempt.settle(status=observation.status)
                    if late is not None:  # recorded first, then the run stops (issue 40)
                        ledger.stop_reason = ledger.stop_reason or f"attempt {index} {late}"
                    observations.append(observation)
                    ledger.observations.append(observation)
                    ledger.open_reservation = None
                    ledger.budget = budget_record(budget, tally, HTTP_RULE)
                    run.observe(status=attempt.status)
                    if looked is not None and looked(observation):
                        run.end_schedule()  # a sequential stop (issue 35): nothing more is reserved
                    record()
                    request.progress.attempt_settled(
                        where, attempt.status, result.tool_calls, result.charged_usd, budget.spent, budget.cap
                    )
                    if late is not None:
                        raise late
                    raise_if_stopped()
                    if run.should_stop():
                        if attempt.status in HTTP_STOPPING_STATUSES:
                            ledger.stop_reason = f"attempt {index} ended {attempt.status}"
                        break
        if not run.every_attempt_completed() and ledger.stop_reason is None:
            ledger.stop_reason = "not every attempt completed"
        close_normally(ledger, run, lambda _: save())
    except BaseException as error:
        if stop_signal() is not None:
            settle_interrupted(ledger, request)
        close_on_error(run, ledger, lambda _: save(), store=store, error=error)
        signum = stop_signal()
        if signum is None:
            raise
        raise StopRequested(signum, stopped_detail(output)) from error
    return summarize(run.status, request.mode, len(schedule), observations, budget, output, transport="http",
                     rehearsal=request.rehearsal, recorded=ledger.budget, backoff_pauses=len(gate.pauses),
                     sequential=ledger.sequential, **summary_names(
                         request.loaded, request.mcp.name, request.control_mcp.name if request.control_mcp else None))
