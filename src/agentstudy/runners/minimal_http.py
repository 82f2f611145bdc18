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
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Literal

from agentstudy.fsm.attempt import AttemptMachine
from agentstudy.fsm.run import HTTP_STOPPING_STATUSES, RunMachine
from agentstudy.io.containment import ContainmentMode
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.io.ledger_store import OutputPathError, resolve_output
from agentstudy.io.messages_api import (
    ANTHROPIC_VERSION,
    ApiKeyError,
    BaseUrlError,
    MessagesClient,
    check_api_key,
    check_base_url,
)
from agentstudy.io.provenance import engine_revision, runner_hash
from agentstudy.io.signals import StopRequested, raise_if_stopped, stop_reason, stop_signal
from agentstudy.io.transcripts import environment_secrets
from agentstudy.pricing.budget import Budget, reservation_for
from agentstudy.pricing.http import DEFAULT_MAX_TOKENS, CallReservation, CallSettlement, UpperPrices
from agentstudy.pricing.money import exact
from agentstudy.pricing.strict_cap import HTTP_RULE
from agentstudy.pricing.sums import usd_from_json
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.continuation import Predecessor
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.ledger_invariants import is_loopback_http
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, LoadedManifest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.prepare_steps import prepare_outcomes
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.records import BackoffPause, HttpObservation, MinimalLedger
from agentstudy.protocol.redaction import redact
from agentstudy.protocol.run_records import AdjudicationDeclaration, HttpPrices, HttpRunSettings, McpServerRecord
from agentstudy.protocol.schedule import Mode, PilotSize, ScheduleEntry
from agentstudy.protocol.sequential_plan import SequentialPlan
from agentstudy.runners.concurrent_walk import ConcurrentWalk
from agentstudy.runners.continuation_steps import continued_schedule, start_ledger
from agentstudy.runners.executor_choice import ray_ledger_fields
from agentstudy.runners.http_attempts import http_observation, http_port, local_start
from agentstudy.runners.http_remote import HttpJob, open_http_executor, remote_start
from agentstudy.runners.ledger_steps import (
    budget_record,
    close_normally,
    close_on_error,
    now_iso,
    open_reservation,
    stopped_detail,
    study_arms,
    summary_names,
)
from agentstudy.runners.preflight import NOTHING_WRITTEN, McpPreflight, PreflightError, prepare_study, refusal
from agentstudy.runners.progress import AttemptProgress, RunProgress, SilentProgress, finish_progress
from agentstudy.runners.sequential_runs import start_sequential, study_schedule
from agentstudy.runners.summary import RunSummary, summarize
from agentstudy.runners.transcript_keeping import keep_transcript, transcript_store
from agentstudy.transports.api_retry import DEFAULT_RETRY, BackoffGate, RetryPolicy
from agentstudy.transports.http import (
    ATTEMPT_DEADLINE_MS,
    MAX_TOOL_CALLS_PER_TURN,
    MAX_TURNS,
    TEMPERATURE,
    TOOL_RESULT_LIMIT,
    CallLedger,
    HttpAttemptResult,
    HttpSettings,
    http_isolation,
    run_http_attempt,
)

REHEARSAL_KEY = "rehearsal-dummy-key"
"""The key sent to the local rehearsal server (``--rehearsal``, ``demo``): never a real credential."""


@dataclass(frozen=True)
class HttpRunRequest:
    """Everything an HTTP run needs; built by the command line or by ``demo``.

    ``api_key`` is sent only as ``x-api-key`` to ``base_url`` and never stored (every saved
    ledger is redacted). Money is ``Decimal`` USD; ``prices`` are the upper prices per million
    tokens. ``rehearsal`` marks a run against the local scripted server (ledger
    ``"rehearsal": true``); ``nominal_prices`` records ``prices`` as nominal (a rehearsal given
    no prices runs at ``pricing.http.REHEARSAL_PRICES``). ``clock`` gives the agent loop's
    monotonic seconds (its deadline and wall time; tests move time with it); each request's own
    timeout always runs on the real clock.
    """

    loaded: LoadedManifest
    mode: Mode
    roots: Mapping[str, Path]
    output: Path
    model: str
    prices: UpperPrices
    cap_usd: Decimal
    api_key: str
    base_url: str
    mcp: McpServerSpec
    rehearsal: bool = False
    nominal_prices: bool = False
    forbidden_output_roots: tuple[Path, ...] = ()
    progress: RunProgress = field(default_factory=SilentProgress)
    clock: Callable[[], float] = time.monotonic
    containment: ContainmentMode = "bwrap"
    parent_env: Mapping[str, str] = field(default_factory=dict)
    pilot: PilotSize = field(default_factory=PilotSize)
    concurrency: int = 1
    """Attempts in flight at most (issue 19); 1 is the seed's sequential walk and ledger, byte for byte."""
    attempt_budget_usd: Decimal | None = None
    """The per-attempt limit (USD) of a concurrent run (required when ``concurrency`` is above 1, else unused)."""
    executor: Literal["local", "ray"] = "local"
    """Where a concurrent run's agent loops run (issue 20; ``runners.http_remote``): threads here, or Ray tasks."""
    ray_address: str | None = None
    """The Ray cluster's address (``--ray-address``); required with ``executor="ray"``."""
    continuation: Predecessor | None = None
    """``--continue-from``'s verified old ledger (issue 33 item 7): plan only what it did not complete."""
    sequential: SequentialPlan | None = None
    """A sequential design's plan (issue 35): task blocks in its order, stopped by its looks."""
    retry: RetryPolicy = DEFAULT_RETRY
    """How often a refused request is sent again (``--api-max-retries``; issue 33)."""
    keep_transcripts: bool = True
    """Keep every attempt's requests and responses in ``LEDGER.transcripts/`` (issue 28; ``--no-transcripts``)."""


class _Checkpoints:
    """The loop's :class:`~agentstudy.transports.http.CallLedger`: keeps the ledger's budget and open marker on disk."""

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


def _settle_interrupted(ledger: MinimalLedger, request: HttpRunRequest) -> None:
    """After a stop signal, settle an attempt whose reservation is on disk but whose result never came
    back (an error raised while its tools were torn down, say): it becomes a ``failed`` observation
    charged what its open reservation holds in full (the reservation now plus its settled calls, USD),
    usage incomplete, so no reservation stays open in the stopped run's ledger. ``spent`` is unchanged:
    it already counts both amounts. Nothing happens when no reservation is open.
    """
    marker = ledger.open_reservation
    if marker is None:
        return
    reserved, charged = usd_from_json(marker.reserved_usd), usd_from_json(marker.charged_usd)
    entry = ScheduleEntry(marker.task_id, request.loaded.manifest.task(marker.task_id).repository,
                          marker.scenario, marker.repetition)
    ledger.observations.append(HttpObservation.model_validate({
        "taskId": entry.task_id, "scenario": entry.scenario, "repetition": entry.repetition,
        "model": request.model, "tools": [], "toolCallsByName": {}, "toolErrorsByName": {}, "toolCalls": 0,
        "numTurns": 0, "inputTokens": 0, "outputTokens": 0, "usageComplete": False,
        "reservedUsd": usd_number(reserved + charged), "measuredUsd": usd_number(charged),
        "chargedUsd": usd_number(reserved + charged),
        "cumulativeCapExceeded": ledger.budget.cumulative_cap_exceeded, "wallTimeMs": 0, "status": "failed",
        "statusReason": f"{stop_reason()} before the attempt's result was recorded", "answer": "",
        **http_isolation(request.containment, entry.scenario, request.mcp.isolation_notes()),
    }))
    ledger.open_reservation = None


def _ledger(request: HttpRunRequest, base_url: str, mcp: McpPreflight, planned: int) -> MinimalLedger:
    manifest = request.loaded.manifest
    return MinimalLedger(
        version=manifest.version,
        protocol_hash=request.loaded.protocol_hash,
        manifest_sha256=request.loaded.manifest_sha256,
        runner_hash=runner_hash(),
        engine_revision=engine_revision(),
        engine_bundle_hash=None,
        repositories=dict(manifest.repositories),
        transport="http",
        model=request.model,
        prices=HttpPrices(input=usd_number(request.prices.input_usd_per_million),
                          output=usd_number(request.prices.output_usd_per_million),
                          nominal=True if request.nominal_prices else None),
        http=HttpRunSettings(
            api_base_url=base_url, anthropic_version=ANTHROPIC_VERSION, max_tokens=DEFAULT_MAX_TOKENS,
            temperature=TEMPERATURE, max_turns=MAX_TURNS, max_tool_calls_per_turn=MAX_TOOL_CALLS_PER_TURN,
            attempt_deadline_ms=ATTEMPT_DEADLINE_MS, tool_result_chars=TOOL_RESULT_LIMIT,
            attempt_budget_usd=_concurrent_limit(request),
        ),
        mcp_server=McpServerRecord(
            name=request.mcp.name,
            command=list(request.mcp.command),
            listed_tools=list(mcp.listed_tools),
            denied_tools=[t for t in mcp.listed_tools if t not in request.mcp.read_only_tools],
            read_only_evidence=dict(mcp.read_only_evidence),
            prepared=prepare_outcomes(mcp.prepared),
        ),
        arms=study_arms(request.loaded, request.mcp.name),
        full_attempts=request.loaded.full_attempts if request.loaded.arms is not None else None,
        analysis=request.loaded.analysis,
        rehearsal=request.rehearsal,
        adjudication=AdjudicationDeclaration(),
        mode=request.mode,
        planned_attempts=planned,
        budget=budget_record(Budget(cap=request.cap_usd), Tally(), HTTP_RULE),
        observations=[],
        concurrency=request.concurrency if request.concurrency > 1 else None,
        open_reservations=[] if request.concurrency > 1 else None,
        started_at=now_iso(),
        status="running",
    )


def _concurrent_limit(request: HttpRunRequest) -> float | None:
    """The ledger's ``http.attemptBudgetUsd``: the reservation of a concurrent run's attempts (USD), else ``None``."""
    if request.concurrency <= 1 or request.attempt_budget_usd is None:
        return None
    return usd_number(reservation_for(request.attempt_budget_usd))


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
        checked = prepare_study(stack, request.mcp, manifest, schedule, request.roots, request.containment,
                                request.parent_env, request.concurrency)
        raise_if_stopped(NOTHING_WRITTEN)
        mcp = checked.mcp
        try:
            api_key, base_url = check_api_key(request.api_key), check_base_url(request.base_url)
        except (ApiKeyError, BaseUrlError) as error:
            raise PreflightError(str(error)) from None
        if request.rehearsal and not is_loopback_http(base_url):
            raise PreflightError("a rehearsal talks only to the local rehearsal server (an http loopback URL)")
        output = resolve_output(request.output, (*request.roots.values(), *request.forbidden_output_roots))
        remote = open_http_executor(stack, request, schedule) if request.executor == "ray" else None
        transcripts = transcript_store(request.keep_transcripts, output,
                                       environment_secrets({**os.environ, **request.parent_env}, [api_key]))
        ledger = _ledger(request, base_url, mcp, len(schedule))
        ledger.transcripts = request.keep_transcripts
        ledger.containment = checked.containment
        start_ledger(ledger, request.continuation)
        looked = start_sequential(ledger, request.sequential)
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
                            containment=request.containment, parent_env=request.parent_env)
    budget, tally = Budget(cap=request.cap_usd), Tally()
    observations: list[HttpObservation] = []
    run.begin()

    def attempt_loop(entry: ScheduleEntry, within: Budget, calls: CallLedger) -> HttpAttemptResult:
        return run_http_attempt(
            settings, sender=client, scenario=entry.scenario, root=request.roots[entry.repository],
            pin=manifest.repositories[entry.repository], prompt=study_prompt(manifest.task(entry.task_id).question),
            budget=within, ledger=calls,
            server=checked.corpora.paths(entry.repository) if entry.scenario == DOC_BRIDGE_MCP else None, gate=gate,
        )

    def job_for(entry: ScheduleEntry, reservation: Decimal) -> HttpJob:
        return HttpJob(settings, base_url, api_key if request.rehearsal else None, entry.scenario, entry.repository,
                       manifest.repositories[entry.repository], study_prompt(manifest.task(entry.task_id).question),
                       reservation, checked.corpora.paths(entry.repository) if entry.scenario == DOC_BRIDGE_MCP
                       else None, api_key=api_key)

    try:
        with client:
            if request.concurrency > 1:
                assert request.attempt_budget_usd is not None  # checked before the ledger was created
                reservation = reservation_for(request.attempt_budget_usd)

                def observe(entry: ScheduleEntry, result: HttpAttemptResult, status: str, charged: Decimal,
                            cap_exceeded: bool) -> HttpObservation:
                    return http_observation(entry, request.model, result, status, request.containment,
                                            request.mcp.isolation_notes(), charged=charged,
                                            cap_exceeded=cap_exceeded,
                                            transcript=keep_transcript(transcripts, entry, result.exchange))

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
                    attempt.settle(status=result.status)
                    observation = http_observation(entry, request.model, result, attempt.status,
                                                   request.containment, request.mcp.isolation_notes(),
                                                   charged=result.charged_usd, cap_exceeded=result.budget.cap_exceeded,
                                                   transcript=keep_transcript(transcripts, entry, result.exchange))
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
            _settle_interrupted(ledger, request)
        close_on_error(run, ledger, lambda _: save(), store=store, error=error)
        signum = stop_signal()
        if signum is None:
            raise
        raise StopRequested(signum, stopped_detail(output)) from error
    return summarize(run.status, request.mode, len(schedule), observations, budget, output, transport="http",
                     rehearsal=request.rehearsal, recorded=ledger.budget, backoff_pauses=len(gate.pauses),
                     **summary_names(request.loaded, request.mcp.name))
