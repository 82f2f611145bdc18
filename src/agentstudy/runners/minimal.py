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
from concurrent.futures import Future
from contextlib import ExitStack
from decimal import Decimal
from typing import Any

from agentstudy.agents.registry import DEFAULT_AGENT, agent_cli
from agentstudy.fsm.attempt import AttemptMachine
from agentstudy.fsm.run import RunMachine
from agentstudy.io.agent_binary import AgentBinaryError
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.io.ledger_store import OutputPathError, resolve_output
from agentstudy.io.signals import StopRequested, raise_if_stopped, stop_signal
from agentstudy.io.transcripts import environment_secrets
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.strict_cap import NoWorstTurn, ReservationRule
from agentstudy.pricing.tally import Tally
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.ledger_invariants import is_loopback_http
from agentstudy.protocol.manifest import REPOSITORY_ONLY
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.records import CliObservation
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.agent_runs import check_other_agents, schedule_for, settings_for
from agentstudy.runners.attempt_port import kept_or_late, observe_result
from agentstudy.runners.cli_request import CliRunRequest, cli_ledger, cli_observation, cli_port
from agentstudy.runners.concurrent_walk import (
    AttemptBodyError,
    ConcurrentWalk,
    ObservedThenFailed,
    body_error_reason,
    body_status_reason,
    never_started_usd,
)
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
    summary_names,
)
from agentstudy.runners.preflight import (
    NOTHING_WRITTEN,
    PreflightError,
    check_cli_version,
    prepare_study,
    refusal,
)
from agentstudy.runners.progress import (
    AttemptProgress,
    finish_progress,
    report_excluded,
)
from agentstudy.runners.sequential_runs import start_sequential, study_schedule
from agentstudy.runners.summary import RunSummary, summarize
from agentstudy.runners.transcript_keeping import (
    SERVER_STDERR_EXTENSION,
    keep_transcript,
    transcript_store,
)
from agentstudy.transports.cli import CliAttemptBody, CliAttemptResult, run_cli_attempt, unstarted_attempt
from agentstudy.transports.cli_args import ArmTools, arm_tools


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
                                request.parent_env, request.concurrency, during_probes=probe_agent_version,
                                control=settings.control_mcp)
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
        ledger = cli_ledger(request, cli_version, mcp, len(schedule), now_iso(), rule,
                            checked.arm_preflight(REPOSITORY_ONLY))
        assert ledger.cli is not None
        ledger.cli.agent = agent_record
        ledger.cli.other_agents = [agent.record for agent in others.values()] or None
        ledger.containment = checked.containment
        start_ledger(ledger, request.continuation)
        looked = start_sequential(ledger, request.sequential, request.continuation)
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

    denied = tuple(dict.fromkeys((*mcp.extra_denied, *(checked.control[0].extra_denied if checked.control else ()))))

    def entry_tools(entry: ScheduleEntry) -> ArmTools:  # the deny list is both arms' servers' (issue 44)
        spec = settings.arm_mcp(entry.scenario)
        return arm_tools(entry.scenario, spec or settings.mcp, denied, served=spec is not None)

    def run_attempt(entry: ScheduleEntry) -> CliAttemptResult:
        attempt_settings = settings_for(settings, request.other_agents, entry.agent)
        return run_cli_attempt(
            attempt_settings,
            agent=agent_cli(attempt_settings.agent),
            scenario=entry.scenario,
            tools=entry_tools(entry),
            root=request.roots[entry.repository],
            pin=manifest.repositories[entry.repository],
            prompt=study_prompt(manifest.task(entry.task_id).question),
            reservation_usd=base,
            parent_env=request.parent_env,
            server=checked.server_paths(entry),
        )

    def body_for(entry: ScheduleEntry) -> CliAttemptBody:
        attempt_settings = settings_for(settings, request.other_agents, entry.agent)
        return CliAttemptBody(
            attempt_settings,
            entry.scenario,
            entry_tools(entry),
            study_prompt(manifest.task(entry.task_id).question),
            base,  # Claude Code's --max-budget-usd is the limit, also under --strict-cap
            checked.server_paths(entry),
            request.parent_env,
            agent=agent_cli(attempt_settings.agent),
        )

    def observe(entry: ScheduleEntry, result: CliAttemptResult, status: str, reserved: Decimal, charged: Decimal,
                cap_exceeded: bool) -> CliObservation:
        named = entry.agent if entry.agent != DEFAULT_AGENT or request.other_agents else None

        def keep(kept: dict[str, str]) -> None:
            kept.update(keep_transcript(transcripts, entry, result.raw_output, named))
            if result.server_stderr:  # the MCP server's stderr tail, redacted (issue 39)
                kept.update(keep_transcript(transcripts, entry, result.server_stderr, named,
                                            SERVER_STDERR_EXTENSION, "server_stderr"))

        def build(kept: dict[str, str]) -> CliObservation:
            return cli_observation(entry, request, versions[entry.agent], result, status, reserved, charged,
                                   cap_exceeded, base, kept)

        return kept_or_late(build, keep)  # a transcript not kept: recorded, then the run stops (issue 40)

    def submit(entry: ScheduleEntry) -> Future[CliAttemptResult]:
        assert executor is not None  # only the concurrent walk submits
        return submit_cli_attempt(executor, body_for(entry), entry.repository)

    def unstarted(entry: ScheduleEntry, reason: str) -> CliAttemptResult:
        return unstarted_attempt(body_for(entry), reason)

    port = cli_port(submit, observe, rule, unstarted)
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
                             sequential=ledger.sequential, **_names(request))
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
            body_error: tuple[Exception, str] | None = None
            try:
                result = run_attempt(entry)
            except Exception as error:  # the same stop as the concurrent walk's (issue 29, break 6)
                body_error = error, body_error_reason(index, entry, error)  # recorded, then the stop (issue 40)
                ledger.stop_reason = body_error[1]
                result = unstarted(entry, body_status_reason(error))
            observed = observe_result(port, entry, result, reservation=reservation, budget=budget, tally=tally)
            observation, charged = observed.observation, observed.charged
            budget, tally = observed.budget, observed.tally
            attempt.settle(status=observation.status)
            late: ObservedThenFailed | None = observed.late  # recorded first, then the run stops (issue 40)
            if late is not None:
                ledger.stop_reason = ledger.stop_reason or f"attempt {index} {late}"
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
            if late is not None:
                raise late
            if body_error is not None:
                raise AttemptBodyError(body_error[1], never_started_usd(observations)) from body_error[0]
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
                     sequential=ledger.sequential, **_names(request))


def _names(request: CliRunRequest) -> dict[str, Any]:
    """``summarize``'s study keywords of ``request`` (``ledger_steps.summary_names``), both arms' servers named."""
    control = request.settings.control_mcp
    return summary_names(request.loaded, request.settings.mcp.name, control.name if control is not None else None)
