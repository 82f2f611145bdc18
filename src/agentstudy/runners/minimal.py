"""The minimal study runner with the CLI transport (seed 000): preflight, walk, settle, checkpoint.

For each scheduled attempt: admit it only if the full per-attempt limit fits under the
remaining cap; reserve and checkpoint; run the child; settle (``max`` rules); checkpoint the
observation. Anything but ``completed`` stops the run (``blocked``); nothing is retried or
resumed. With ``concurrency`` above 1 the walk is ``runners.concurrent_walk`` (issue 19): up to N
attempts in flight, admitted against spent plus every open reservation. State changes go
through ``fsm``; money through ``pricing``.

A stop signal (``io.signals``) stops admission: before the ledger exists the run raises
``StopRequested`` and nothing is written; afterwards the running attempt's child is terminated,
the attempt is settled as it ended (not completed: charged at least its whole reservation,
usage incomplete), the ledger is checkpointed ``blocked`` with ``stopped by SIG…`` as its stop
reason, and ``StopRequested`` is raised.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Literal

from agentstudy.agents.registry import DEFAULT_AGENT, agent_cli
from agentstudy.fsm.attempt import AttemptMachine
from agentstudy.fsm.run import RunMachine
from agentstudy.io.agent_binary import AgentBinaryError
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.io.ledger_store import OutputPathError, resolve_output
from agentstudy.io.provenance import engine_revision, file_sha256, runner_hash
from agentstudy.io.signals import StopRequested, raise_if_stopped, stop_signal
from agentstudy.io.transcripts import environment_secrets
from agentstudy.pricing.budget import Budget, settle_attempt
from agentstudy.pricing.strict_cap import NoWorstTurn, ReservationRule
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import optional_usd_number, usd_number
from agentstudy.protocol.continuation import Predecessor
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.ledger_invariants import is_loopback_http
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, LoadedManifest
from agentstudy.protocol.prepare_steps import prepare_outcomes
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.records import CliObservation, MinimalLedger
from agentstudy.protocol.run_records import AdjudicationDeclaration, CliRunSettings, McpServerRecord
from agentstudy.protocol.schedule import Mode, PilotSize, ScheduleEntry
from agentstudy.protocol.sequential_plan import SequentialPlan
from agentstudy.runners.agent_runs import AgentRun, check_other_agents, expected_for, schedule_for, settings_for
from agentstudy.runners.concurrent_walk import AttemptBodyError, AttemptPort, ConcurrentWalk, body_error_reason
from agentstudy.runners.continuation_steps import continued_schedule, start_ledger
from agentstudy.runners.executor import AttemptExecutor, submit_cli_attempt
from agentstudy.runners.executor_choice import open_executor
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
from agentstudy.runners.preflight import (
    NOTHING_WRITTEN,
    McpPreflight,
    PreflightError,
    check_cli_version,
    prepare_study,
    refusal,
)
from agentstudy.runners.progress import (
    AttemptProgress,
    RunProgress,
    SilentProgress,
    finish_progress,
    report_excluded,
)
from agentstudy.runners.sequential_runs import start_sequential, study_schedule
from agentstudy.runners.summary import RunSummary, summarize
from agentstudy.runners.transcript_keeping import keep_transcript, transcript_store
from agentstudy.transports.cli import CliAttemptBody, CliAttemptResult, CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools
from agentstudy.transports.cli_evaluation import cli_failure_kind, settled_reason


@dataclass(frozen=True)
class CliRunRequest:
    """Everything a CLI run needs; built by the command line or by ``demo``.

    Money is ``Decimal`` USD. ``forbidden_output_roots`` are extra directories the ledger
    must stay out of (agentstudy's own checkout); corpus roots are always forbidden.
    """

    loaded: LoadedManifest
    mode: Mode
    roots: Mapping[str, Path]
    output: Path
    settings: CliSettings
    cap_usd: Decimal
    attempt_budget_usd: Decimal
    expected_cli_version: str
    parent_env: Mapping[str, str]
    forbidden_output_roots: tuple[Path, ...] = ()
    progress: RunProgress = field(default_factory=SilentProgress)
    pilot: PilotSize = field(default_factory=PilotSize)
    concurrency: int = 1
    """Attempts in flight at most (issue 19); 1 is the seed's sequential walk."""
    executor: Literal["local", "ray"] = "local"
    """Where a concurrent walk runs the attempts' bodies (issue 20): threads here, or Ray tasks."""
    ray_address: str | None = None
    """The Ray cluster's address (``--ray-address``); required with ``executor="ray"``."""
    strict_cap: bool = False
    keep_transcripts: bool = True
    """Keep every attempt's raw stream in ``LEDGER.transcripts/`` (issue 28; ``--no-transcripts`` turns it off)."""
    """``--strict-cap`` (issue 19): reserve the limit plus one worst-case turn (``pricing.strict_cap``)."""
    other_agents: Mapping[str, AgentRun] = field(default_factory=dict)
    """A several-agent study's agents besides ``settings.agent`` (issue 21 item 6; ``runners.agent_runs``)."""
    sequential: SequentialPlan | None = None
    """A sequential design's plan (issue 35): task blocks in its order, stopped by its looks."""
    continuation: Predecessor | None = None
    """``--continue-from``'s verified old ledger (issue 33 item 7): plan only what it did not complete."""


def cli_port(
    submit: Callable[[ScheduleEntry], Future[CliAttemptResult]],
    observe: Callable[[ScheduleEntry, CliAttemptResult, str, Decimal, Decimal, bool], CliObservation],
    rule: ReservationRule,
) -> AttemptPort[CliAttemptResult, CliObservation]:
    """The cli port (issue 19; its settle, measure and observe serve the sequential walk too): ``submit`` a
    child on the run's executor (issue 20), settle it with ``settle_attempt`` against the
    rule's reservation (USD; the ``max`` rules; a completed attempt charged above the limit Claude Code was
    given is ``budget-exceeded``), count ``max(reported, computed)`` as measured with its overshoot above
    the per-attempt limit, ``observe``."""

    def computed(result: CliAttemptResult) -> Decimal | None:
        return result.computed_cost.usd if result.computed_cost else None

    def settle(result: CliAttemptResult) -> tuple[str, Decimal]:
        return settle_attempt(result.status, rule.reservation_usd, result.reported_cost_usd, computed(result),
                              exceeded_above=rule.base_usd)

    def measure(tally: Tally, result: CliAttemptResult) -> Tally:
        return tally.add_measured(result.reported_cost_usd, computed(result), rule.limit_usd)

    return AttemptPort(submit=submit, settle=settle, measure=measure, observe=observe)


def _observation(
    entry: ScheduleEntry,
    request: CliRunRequest,
    cli_version: str,
    result: CliAttemptResult,
    status: str,
    reservation: Decimal,
    charged: Decimal,
    cap_exceeded: bool,
    exceeded_above: Decimal,
    transcript: dict[str, str] | None = None,
) -> CliObservation:
    fields = {**result.fields, **(transcript or {})}
    answer = str(fields.pop("answer_text"))
    failure = cli_failure_kind(status, fields.pop("api_error_status", None))
    return CliObservation(
        task_id=entry.task_id,
        scenario=entry.scenario,
        repetition=entry.repetition,
        agent=entry.agent if entry.agent != DEFAULT_AGENT or request.other_agents else None,  # issue 21
        cli_version=cli_version,
        expected_cli_version=expected_for(request.expected_cli_version, request.settings, request.other_agents,
                                          entry.agent),
        attempt_budget_usd=usd_number(request.attempt_budget_usd),
        **fields,
        cli_reported_cost_usd=optional_usd_number(result.reported_cost_usd),
        computed_cost_usd=optional_usd_number(result.computed_cost.usd if result.computed_cost else None),
        cost_basis=result.computed_cost.basis if result.computed_cost is not None else None,
        setup_problem="; ".join(result.setup_problems) or None,
        cost_problem=result.cost_problem,
        reserved_usd=usd_number(reservation),
        charged_usd=usd_number(charged),
        cumulative_cap_exceeded=cap_exceeded,
        exit_code=result.exit_code,
        wall_time_ms=result.wall_time_ms,
        status=status,
        status_reason=settled_reason(result.status, result.status_reason, status, charged, exceeded_above),
        answer=answer if status == "completed" else "",
        failure_kind=failure,
    )


def _ledger(
    request: CliRunRequest, cli_version: str, mcp: McpPreflight, planned: int, started_at: str, rule: ReservationRule
) -> MinimalLedger:
    manifest = request.loaded.manifest
    return MinimalLedger(
        version=manifest.version,
        protocol_hash=request.loaded.protocol_hash,
        manifest_sha256=request.loaded.manifest_sha256,
        runner_hash=runner_hash(),
        engine_revision=engine_revision(),
        engine_bundle_hash=file_sha256(request.settings.binary),
        repositories=dict(manifest.repositories),
        transport="cli",
        model=request.settings.model,
        cli=CliRunSettings(
            cli_version=cli_version,
            expected_cli_version=request.expected_cli_version,
            attempt_budget_usd=usd_number(request.attempt_budget_usd),
            prices=agent_cli(request.settings.agent).price_entry(request.settings.model),
            base_url=request.settings.base_url,
        ),
        mcp_server=McpServerRecord(
            name=request.settings.mcp.name,
            command=list(request.settings.mcp.command),
            listed_tools=list(mcp.listed_tools),
            denied_tools=list(mcp.extra_denied),
            read_only_evidence=dict(mcp.read_only_evidence),
            prepared=prepare_outcomes(mcp.prepared),
        ),
        arms=study_arms(request.loaded, request.settings.mcp.name),
        full_attempts=request.loaded.full_attempts if request.loaded.arms is not None else None,
        analysis=request.loaded.analysis,
        transcripts=request.keep_transcripts,
        rehearsal=request.settings.rehearsal_base_url is not None,
        adjudication=AdjudicationDeclaration(),
        mode=request.mode,
        planned_attempts=planned,
        budget=budget_record(Budget(cap=request.cap_usd), Tally(), rule),
        observations=[],
        concurrency=request.concurrency if request.concurrency > 1 else None,
        open_reservations=[] if request.concurrency > 1 else None,
        started_at=started_at,
        status="running",
    )


def run_cli_study(request: CliRunRequest) -> RunSummary:
    """Run the pilot or full schedule with the CLI transport and return the summary.

    Raises:
        PreflightError: the run was refused before any reservation; no ledger was written.
        OutputPathError: the ledger path exists, lies inside a checkout or cannot be created;
            nothing was written.
        CheckpointError: a checkpoint failed mid-run; the run stopped and the ledger on disk is
            the last good one (closed ``blocked`` with the reason where a later write succeeded).
        StopRequested: a stop signal arrived; the ledger, if one was created, is ``blocked`` and
            names the signal (see the module docstring).
    """
    with ExitStack() as stack:
        return _run_cli_study(request, stack)


def _run_cli_study(request: CliRunRequest, stack: ExitStack) -> RunSummary:
    manifest = request.loaded.manifest
    settings = request.settings
    schedule = continued_schedule(schedule_for(request.loaded, study_schedule(
        request.loaded, request.mode, request.pilot, request.sequential), settings.agent), request.continuation)
    run = RunMachine(len(schedule), "cli")
    try:
        if settings.rehearsal_base_url is not None and not is_loopback_http(settings.rehearsal_base_url):
            raise PreflightError("a rehearsal talks only to the local rehearsal server (an http loopback URL)")
        try:
            rule = ReservationRule.for_cli(request.attempt_budget_usd, settings.model, strict=request.strict_cap)
        except NoWorstTurn as problem:
            raise PreflightError(str(problem)) from None
        probed: list[str] = []

        def probe_agent_version() -> None:  # runs while the MCP servers are probed (prepare_study)
            probed.append(check_cli_version(settings.binary, request.expected_cli_version, request.parent_env,
                                            settings.containment, settings.agent))

        checked = prepare_study(stack, settings.mcp, manifest, schedule, request.roots, settings.containment,
                                request.parent_env, request.concurrency, during_probes=probe_agent_version)
        raise_if_stopped(NOTHING_WRITTEN)
        cli_version = probed[0]
        try:
            agent_record = agent_cli(settings.agent).agent_record(settings, cli_version, request.parent_env)
        except AgentBinaryError as error:
            raise PreflightError(str(error)) from None
        raise_if_stopped(NOTHING_WRITTEN)
        others = check_other_agents(request.other_agents, request.parent_env)
        versions = {settings.agent: cli_version, **{name: agent.version_line for name, agent in others.items()}}
        raise_if_stopped(NOTHING_WRITTEN)
        mcp = checked.mcp
        executor: AttemptExecutor | None = None
        if request.concurrency > 1:
            executor = open_executor(stack, request, schedule)
            raise_if_stopped(NOTHING_WRITTEN)
        output = resolve_output(request.output, (*request.roots.values(), *request.forbidden_output_roots))
        secrets = environment_secrets({**os.environ, **(request.parent_env or {})})
        transcripts = transcript_store(request.keep_transcripts, output, secrets)
        ledger = _ledger(request, cli_version, mcp, len(schedule), now_iso(), rule)
        assert ledger.cli is not None
        ledger.cli.agent = agent_record
        ledger.cli.other_agents = [agent.record for agent in others.values()] or None
        ledger.containment = checked.containment
        start_ledger(ledger, request.continuation)
        looked = start_sequential(ledger, request.sequential)
        if request.executor == "ray" and executor is not None:
            ledger.executor, ledger.excluded_workers = "ray", list(executor.excluded)
            for worker in executor.excluded:
                report_excluded(request.progress, worker.node, worker.reason)
        store = JournaledLedger(output, ledger)
        stack.callback(store.close)
        stack.callback(finish_progress, request.progress)
    except BaseException as error:
        run.refuse()
        failure = refusal(error, (OutputPathError,))
        if failure is error:
            raise
        raise failure from error
    reservation, admission, base = rule.reservation_usd, rule.admission_usd, rule.base_usd
    budget, tally = Budget(cap=request.cap_usd), Tally()
    run.begin()
    observations: list[CliObservation] = []

    def run_attempt(entry: ScheduleEntry) -> CliAttemptResult:
        return run_cli_attempt(
            settings_for(settings, request.other_agents, entry.agent),
            scenario=entry.scenario,
            tools=arm_tools(entry.scenario, request.settings.mcp, mcp.extra_denied),
            root=request.roots[entry.repository],
            pin=manifest.repositories[entry.repository],
            prompt=study_prompt(manifest.task(entry.task_id).question),
            reservation_usd=base,
            parent_env=request.parent_env,
            server=checked.corpora.paths(entry.repository) if entry.scenario == DOC_BRIDGE_MCP else None,
        )

    def body_for(entry: ScheduleEntry) -> CliAttemptBody:
        return CliAttemptBody(
            settings_for(settings, request.other_agents, entry.agent),
            entry.scenario,
            arm_tools(entry.scenario, request.settings.mcp, mcp.extra_denied),
            study_prompt(manifest.task(entry.task_id).question),
            base,  # Claude Code's --max-budget-usd is the limit, also under --strict-cap
            checked.corpora.paths(entry.repository) if entry.scenario == DOC_BRIDGE_MCP else None,
            request.parent_env,
        )

    def observe(entry: ScheduleEntry, result: CliAttemptResult, status: str, reserved: Decimal, charged: Decimal,
                cap_exceeded: bool) -> CliObservation:
        kept = keep_transcript(transcripts, entry, result.raw_output,
                               entry.agent if entry.agent != DEFAULT_AGENT or request.other_agents else None)
        return _observation(entry, request, versions[entry.agent], result, status, reserved, charged, cap_exceeded,
                            base, kept)

    def submit(entry: ScheduleEntry) -> Future[CliAttemptResult]:
        assert executor is not None  # only the concurrent walk submits
        return submit_cli_attempt(executor, body_for(entry), entry.repository)

    port = cli_port(submit, observe, rule)
    try:
        if executor is not None:
            walked = ConcurrentWalk(
                run=run, ledger=ledger, store=store, concurrency=request.concurrency, cap=request.cap_usd,
                limit=admission, reservation=reservation, port=port, progress=request.progress, rule=rule,
                on_recorded=looked,
            )
            done = walked.walk(schedule)
            observations, budget = done.observations, done.budget
            close_normally(ledger, run, lambda finished: store.checkpoint(seal_ledger(finished.to_json())))
            return summarize(run.status, request.mode, len(schedule), observations, budget, output,
                             rehearsal=request.settings.rehearsal_base_url is not None, recorded=ledger.budget,
                             **summary_names(request.loaded, request.settings.mcp.name))
        for index, entry in enumerate(schedule, start=1):
            raise_if_stopped()
            where = AttemptProgress(index, len(schedule), entry.task_id, entry.scenario, entry.repetition)
            attempt = AttemptMachine()
            if not budget.fits(admission):
                attempt.refuse()
                ledger.stop_reason = "the per-attempt limit does not fit under the remaining cap"
                break
            attempt.reserve()
            budget, tally = budget.reserve(reservation), tally.add_reservation(reservation)
            ledger.budget = budget_record(budget, tally, rule)
            ledger.open_reservation = open_reservation(entry, reservation)
            store.record(ledger)
            attempt.start(checkpointed=True)
            request.progress.attempt_started(where)
            try:
                result = run_attempt(entry)
            except Exception as error:  # the same stop as the concurrent walk's (issue 29, break 6)
                ledger.stop_reason = body_error_reason(index, entry, error)
                raise AttemptBodyError(ledger.stop_reason) from error
            status, charged = port.settle(result)
            attempt.settle(status=status)
            budget = budget.settle(reservation, charged)
            tally = port.measure(tally, result)
            observation = port.observe(entry, result, attempt.status, reservation, charged, budget.cap_exceeded)
            observations.append(observation)
            ledger.observations.append(observation)
            ledger.open_reservation = None
            ledger.budget = budget_record(budget, tally, rule)
            run.observe(status=attempt.status)
            if looked is not None and looked(observation):
                run.end_schedule()  # a sequential stop (issue 35): nothing more is reserved
            store.record(ledger)
            request.progress.attempt_settled(
                where, attempt.status, observation.tool_calls, charged, budget.spent, budget.cap
            )
            raise_if_stopped()
            if budget.cap_exceeded:
                ledger.stop_reason = "the cumulative spend passed the cap"
                break
            if run.should_stop():
                if attempt.status != "completed":
                    ledger.stop_reason = f"attempt {index} ended {attempt.status}"
                break
        close_normally(ledger, run, lambda done: store.checkpoint(seal_ledger(done.to_json())))
    except BaseException as error:
        close_on_error(run, ledger, lambda done: store.checkpoint(seal_ledger(done.to_json())), store=store,
                       error=error)
        signum = stop_signal()
        if signum is None:
            raise
        raise StopRequested(signum, stopped_detail(output)) from error
    return summarize(run.status, request.mode, len(schedule), observations, budget, output,
                     rehearsal=request.settings.rehearsal_base_url is not None, recorded=ledger.budget,
                     **summary_names(request.loaded, request.settings.mcp.name))
