"""``run_controlled_study``: the loop behind ``agentstudy run`` (seed 004; digest 5.8).

1. ``prepare_run`` checks the inputs (nothing starts before every check passed).
2. A dry run stops there (after checking that the ledger path may be used): the planned
   count and the config hashes; no ledger is read or written and no process starts.
3. The ledger is read and verified (a missing file is an empty ledger); a ledger that holds
   the plan's run id with another plan hash is refused.
4. Each execution not yet in the ledger for this run id (identity ``taskId``, ``scenarioId``,
   ``modelId``, ``replicate``) runs through ``run_controlled_command`` with ``cwd`` at its
   repository root, stdout bounded by ``min(provider, plan)``, ``contextBytes`` = request
   bytes and the provider's pricing; the deterministic rubric adjudicates it; it is upserted
   and the ledger persisted before the next execution starts.
5. A stop signal (``io.signals``) stops admission and terminates the running child; the
   interrupted execution is not recorded (a rerun of the same plan runs it) and
   ``StopRequested`` is raised; the ledger holds every observation recorded before.

With ``concurrency`` N above 1 (issue 19) up to N executions run at once
(``runners.ordered_flights.drive_in_order``): the calling thread alone admits, upserts and
persists; worker threads only run ``run_controlled_command``. Executions are admitted in plan
order and recorded in that order (an early finisher frees its slot, its observation waits for
the earlier ones), so the ledger holds the same observations in the same order as with N = 1.
A stop signal stops admission; the children already running are terminated by the handler, an
execution that still finished is recorded, the interrupted ones are not. There is no USD cap in
a controlled plan, so admission only waits for a free slot. Progress: ``execution_started`` at
admission, the attempts and ``execution_recorded`` when recorded (with N = 1 attempts live).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from agentstudy.controlled.command import (
    AttemptReport,
    CommandRun,
    ControlledCommandRequest,
    iso_now,
    run_controlled_command,
)
from agentstudy.controlled.ledger_file import check_ledger_path, persist_ledger, read_ledger
from agentstudy.controlled.preflight import PlannedExecution, RunInputError, RunInputs, prepare_run
from agentstudy.controlled.remote import (
    ExecutionJob,
    WorkerDiedError,
    awaited,
    open_controlled_executor,
    worker_command,
)
from agentstudy.controlled.rubric import deterministic_adjudication
from agentstudy.io.signals import StopRequested, raise_if_stopped, stop_signal, terminate_children
from agentstudy.protocol.controlled.hashing import CONTENT_HASH_ALGO_KEY, CONTENT_HASH_KEY
from agentstudy.protocol.controlled.ledger import create_observation, upsert_observation
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1
from agentstudy.runners.executor import AttemptExecutor, WorkerDied
from agentstudy.runners.ordered_flights import Flight, drive_in_order
from agentstudy.runners.preflight import PreflightError


class RunProgress(Protocol):
    """A watcher of a running controlled study; it sees identities and statuses, never output."""

    def execution_started(self, index: int, total: int, planned: PlannedExecution) -> None:
        """Called before the first attempt of the ``index``-th (1-based) execution to run."""

    def attempt_settled(self, report: AttemptReport) -> None:
        """Called when an attempt ends (a retry follows when allowed)."""

    def execution_recorded(self, index: int, total: int, observation: ControlledStudyObservationV1) -> None:
        """Called after the observation is persisted."""


class SilentRunProgress:
    """A watcher that shows nothing."""

    def execution_started(self, index: int, total: int, planned: PlannedExecution) -> None:
        """Show nothing."""

    def attempt_settled(self, report: AttemptReport) -> None:
        """Show nothing."""

    def execution_recorded(self, index: int, total: int, observation: ControlledStudyObservationV1) -> None:
        """Show nothing."""


@dataclass(frozen=True)
class RunOptions:
    """How to run: the ledger path, an optional ``round``, whether this is a dry run, and how many at once."""

    ledger_path: Path
    round_id: str | None = None
    dry_run: bool = False
    concurrency: int = 1
    """Executions run at once (issue 19); 1 runs them one after another, as the seed does."""
    executor: Literal["local", "ray"] = "local"
    """Where a concurrent run's executions run (issue 20; ``controlled.remote``): threads here, or Ray tasks."""
    ray_address: str | None = None
    """The Ray cluster's address with ``executor="ray"``."""


def _hashes(inputs: RunInputs) -> dict[str, str]:
    return {"planHash": inputs.plan.content_hash, "taskSuiteHash": inputs.suite.content_hash,
            "providerConfigHash": inputs.providers.content_hash,
            "repositoryConfigHash": inputs.repositories.content_hash}


def _recorded(planned: PlannedExecution, run: ControlledStudyObservationV1, document: dict[str, Any]) -> dict[str, Any]:
    payload = {key: value for key, value in document.items() if key not in (CONTENT_HASH_KEY, CONTENT_HASH_ALGO_KEY)}
    payload["adjudication"] = deterministic_adjudication(planned.task, run)
    return payload


def _remote(stack: ExitStack, options: RunOptions, to_run: list[PlannedExecution]) -> AttemptExecutor | None:
    """The Ray executor of ``options`` (``None`` locally): the workers prove every root and provider command."""
    if options.executor != "ray" or not to_run:
        return None
    try:
        return open_controlled_executor(
            stack, ray_address=options.ray_address, concurrency=options.concurrency,
            commands=[worker_command(item.provider.command, item.root) for item in to_run],
            directories=[item.root for item in to_run])
    except PreflightError as error:
        raise RunInputError(str(error)) from None


def run_controlled_study(inputs: RunInputs, options: RunOptions, *, environ: Mapping[str, str],
                         progress: RunProgress | None = None) -> dict[str, Any]:
    """Run (or dry-run) a controlled study; see the module docstring.

    Returns:
        The summary: ``status`` (``dry-run`` or ``completed``), ``runId``, ``planned``,
        ``executed``, ``skipped``, the four input hashes, and for a real run ``ledgerPath``,
        ``ledgerHash``, ``byStatus`` and ``byOutcome`` (of the executions run now).

    Raises:
        RunInputError: any check of steps 1–3 (nothing started, nothing written).
        LedgerFileError: an unreadable, invalid or unverified ledger, or a ledger path inside a
            repository root.
        OSError: the ledger cannot be persisted (every earlier observation is on disk).
        StopRequested: a stop signal arrived (step 5).
        WorkerDiedError: with ``executor="ray"``, a worker died under an execution (not recorded).
    """
    watcher = progress or SilentRunProgress()
    plan = inputs.plan.model
    planned = prepare_run(inputs, environ)
    summary: dict[str, Any] = {"status": "dry-run", "runId": plan.run_id, "planned": len(planned), "executed": 0,
                               "skipped": 0, **_hashes(inputs)}
    ledger_path = check_ledger_path(options.ledger_path, {item.root for item in planned})
    if options.dry_run:
        return summary
    ledger = read_ledger(ledger_path, missing_ok=True)
    foreign = {item.plan_hash for item in ledger.model.observations if item.run_id == plan.run_id}
    foreign.discard(inputs.plan.content_hash)
    if foreign:
        raise RunInputError(f"{ledger_path} already holds run {plan.run_id!r} with another plan hash "
                            f"({sorted(foreign)[0]}); a new plan needs a new runId")
    done = {item.task.identity for item in ledger.model.observations if item.run_id == plan.run_id}
    to_run = [item for item in planned if item.identity not in done]
    statuses: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    total, concurrency = len(to_run), options.concurrency
    state = {"ledger": ledger}
    interrupted: list[StopRequested] = []
    died: list[str] = []
    death = threading.Event()
    stack = ExitStack()
    remote = _remote(stack, options, to_run)

    def admit(index: int, item: PlannedExecution) -> Callable[[], CommandRun] | None:
        if stop_signal() is not None or death.is_set():
            return None
        watcher.execution_started(index, total, item)
        request = ControlledCommandRequest(
            plan=inputs.plan, execution=item.execution, command=item.provider.command, cwd=item.root,
            context_bytes=len(item.request), args=tuple(item.provider.args), input=item.request,
            env_allowlist=tuple(item.provider.env_allowlist),
            max_output_bytes=min(item.provider.max_output_bytes, plan.budget.max_output_bytes),
            round_id=options.round_id, pricing=item.provider.pricing,
        )
        live = watcher.attempt_settled if concurrency == 1 else None
        if remote is not None:
            return lambda: awaited(remote, ExecutionJob(request), death)
        return lambda: run_controlled_command(request, environ=environ, clock=iso_now, on_attempt=live)

    def record(flight: Flight[PlannedExecution, CommandRun]) -> None:
        try:
            run = flight.future.result()
        except StopRequested as stop:  # an interrupted execution is not recorded; later finished ones are
            interrupted.append(stop)
            return
        except WorkerDied as dead:  # not recorded, never run again here: admission stops (issue 20)
            task = flight.item.execution["taskId"]
            died.append(f"execution {flight.index} ({task}): its Ray worker died ({dead}); it is not recorded and "
                        "was not run again (a rerun of the same plan runs it)")
            return
        if concurrency > 1:
            for report in run.attempts:
                watcher.attempt_settled(report)
        observation = create_observation(_recorded(flight.item, run.observation.model, run.observation.document))
        state["ledger"] = upsert_observation(state["ledger"], observation)
        persist_ledger(ledger_path, state["ledger"])
        statuses[observation.model.execution.status] += 1
        outcomes[observation.model.adjudication.outcome or "pending"] += 1
        watcher.execution_recorded(flight.index, total, observation.model)

    def abort() -> None:
        if stop_signal() is None:
            terminate_children()

    try:
        with stack:
            drive_in_order(to_run, concurrency=concurrency, admit=admit, record=record, abort=abort,
                           thread_name_prefix="execution")
        if interrupted:
            raise interrupted[0]
        raise_if_stopped()
        if died:
            raise WorkerDiedError(died[0])
    except StopRequested as stop:
        raise StopRequested(stop.signum, f"the ledger {ledger_path} holds every observation recorded before the "
                                         "stop (an interrupted execution is not recorded; a rerun runs it)") from None
    ledger = state["ledger"]
    summary.update({"status": "completed", "executed": sum(statuses.values()), "skipped": len(planned) - len(to_run),
                    "ledgerPath": str(ledger_path), "ledgerHash": ledger.content_hash,
                    "byStatus": dict(statuses), "byOutcome": dict(outcomes)})
    return summary
