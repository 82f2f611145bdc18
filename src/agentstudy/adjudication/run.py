"""The adjudication run: preflight, then one fresh adjudicator attempt per blind item, into the companion.

Per item, like a study attempt: admit it only if the full per-item limit fits under the
adjudication's own cap (``pricing.budget.open_attempt``), reserve and checkpoint, run a fresh
attempt of the adjudicator agent (``settings.agent``, through the one agent seam: Claude Code, Codex
or Gemini CLI; issue 45) in a read-only export of the item's pinned corpus with only its read-only
repository tools (no MCP server), settle (``close_attempt``) and checkpoint. A completed attempt whose reply
is the strict JSON asked for scores the item; anything else leaves it ``pending``, never a
default score. An attempt that does not complete, a refused item or a passed cap stops the
run; the rest stay pending. State changes go through ``fsm.attempt``; money through ``pricing``.
The walk itself is ``adjudication.walk.ItemWalk``: with ``concurrency`` above 1 (issue 19) up to
N attempts run at once, each admitted only when its full limit fits with every open reservation
counted, settled in admission order; the first attempt that does not complete stops admission
and the running ones finish and are recorded.

A stop signal (``io.signals``) stops admission: before the companion exists the run raises
``StopRequested`` and nothing is written; afterwards the running items' children are terminated and
each running item settled as it ended (pending, charged at least its whole reservation), the companion
is checkpointed with ``stopped by SIG…`` as its stop reason, and ``StopRequested`` is raised.
"""


from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from agentstudy.adjudication.blinding import BLINDING_METHOD, blind_items
from agentstudy.adjudication.citations import PinnedCorpus
from agentstudy.adjudication.companion import (
    AdjudicationProgress,
    AdjudicationSummary,
    SilentAdjudicationProgress,
    initial_item,
    summarize,
)
from agentstudy.adjudication.items import PreparedItem, prepare_item
from agentstudy.adjudication.ledger_view import MinimalLedgerView
from agentstudy.adjudication.remote import open_item_executor, remote_item_runner
from agentstudy.adjudication.scrub import REPLACEMENT, Scrubber
from agentstudy.adjudication.walk import ItemWalk
from agentstudy.agents.registry import agent_cli
from agentstudy.io.containment import ContainmentError, check_containment
from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.git import GitError
from agentstudy.io.ledger_store import CheckpointError, LedgerFile, OutputPathError, resolve_output
from agentstudy.io.provenance import file_sha256
from agentstudy.io.signals import StopRequested, raise_if_stopped, stop_reason, stop_signal
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.adjudication import (
    MinimalAdjudication,
    MissingObservation,
    companion_status,
)
from agentstudy.protocol.manifest import REPOSITORY_ONLY, SCENARIOS, LoadedManifest
from agentstudy.protocol.prompt import MAX_PROMPT_BYTES
from agentstudy.runners.ledger_steps import SALVAGED_NOTE, budget_record, checkpoint_stop_reason
from agentstudy.runners.preflight import NOTHING_WRITTEN, PreflightError, check_cli_version, check_corpus_roots, refusal
from agentstudy.transports.cli import CliAttemptResult, CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools

ADJUDICABLE_RUN_STATUSES = ("awaiting-adjudication", "blocked")


class AdjudicationRefused(RuntimeError):
    """The adjudication is refused before anything is reserved or written (one-line reason)."""


@dataclass(frozen=True)
class AdjudicationRequest:
    """Everything an adjudication run needs; built by ``agentstudy adjudicate`` or the demo.

    Money is ``Decimal`` USD. ``settings.model`` is the adjudicator's model; ``settings.mcp`` is
    never started (the adjudicator arm has no MCP server). ``seed`` is the blinding seed.
    """

    ledger: MinimalLedgerView
    loaded: LoadedManifest
    roots: Mapping[str, Path]
    output: Path
    settings: CliSettings
    cap_usd: Decimal
    item_budget_usd: Decimal
    expected_cli_version: str
    seed: int
    parent_env: Mapping[str, str]
    forbidden_output_roots: tuple[Path, ...] = ()
    progress: AdjudicationProgress = field(default_factory=SilentAdjudicationProgress)
    concurrency: int = 1
    """Adjudicator attempts run at once (issue 19; ``adjudication.walk``); 1 is the sequential walk."""
    executor: Literal["local", "ray"] = "local"
    """Where a concurrent walk's attempts run (issue 20; ``adjudication.remote``)."""
    ray_address: str | None = None
    """The Ray cluster's address with ``executor="ray"``."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class _Checked:
    """What the preflight established: the probed CLI version, the companion path, the items, the scrubbed terms."""

    cli_version: str
    output: Path
    items: list[PreparedItem]
    scrubbed_terms: tuple[str, ...]


def _preflight(request: AdjudicationRequest) -> _Checked:
    """Check everything before anything is written (raises ``AdjudicationRefused`` / ``OutputPathError``)."""
    ledger, manifest = request.ledger, request.loaded.manifest
    if ledger.status not in ADJUDICABLE_RUN_STATUSES:
        raise AdjudicationRefused(f"the run is {ledger.status!r}, not finished; only a finished run is adjudicated")
    if (ledger.manifest_sha256, ledger.protocol_hash) != (request.loaded.manifest_sha256, request.loaded.protocol_hash):
        raise AdjudicationRefused("the manifest is not the one the run used (manifestSha256 or protocolHash differ)")
    items = blind_items(ledger.observations, request.seed)
    try:
        tasks = {item.item_id: manifest.task(item.observation.task_id) for item in items}
    except KeyError as error:
        raise AdjudicationRefused(f"the ledger names a task absent from the manifest: {error}") from None
    needed = sorted({task.repository for task in tasks.values()})
    missing = [name for name in needed if name not in request.roots]
    if missing:
        raise AdjudicationRefused(f"missing --root {missing[0]}=PATH")
    agent = agent_cli(request.settings.agent)
    if agent.price_entry(request.settings.model) is None:
        raise AdjudicationRefused(f"the adjudicator model {request.settings.model!r} has no price in "
                                  f"{agent.label}'s table")
    output = resolve_output(request.output, (*request.roots.values(), *request.forbidden_output_roots))
    try:
        check_corpus_roots(manifest, {name: request.roots[name] for name in needed})
        check_containment(request.settings.containment, allowlisted_environment(
            request.parent_env, home="/nonexistent", tmpdir="/nonexistent"))
        cli_version = check_cli_version(
            request.settings.binary, request.expected_cli_version, request.parent_env, request.settings.containment,
            agent.name,
        )
        corpora = {name: PinnedCorpus(request.roots[name], manifest.repositories[name]) for name in needed}
        labels = {*SCENARIOS, *(o.scenario for o in ledger.observations), *ledger.arm_terms}
        scrubber = Scrubber.build(ledger.mcp_server, ledger.mcp_tools, labels)
        prepared = [
            prepare_item(item, tasks[item.item_id], corpora[tasks[item.item_id].repository].line_count, scrubber)
            for item in items
        ]
    except (PreflightError, GitError, ContainmentError) as error:
        raise AdjudicationRefused(str(error)) from None
    return _Checked(cli_version, output, prepared, scrubber.terms)


def _companion(request: AdjudicationRequest, checked: _Checked) -> MinimalAdjudication:
    ledger, settings = request.ledger, request.settings
    agent = agent_cli(settings.agent)
    shell = agent.isolation(settings, REPOSITORY_ONLY)
    adjudicator: dict[str, Any] = {
        "transport": "cli",
        "agent": agent.name,
        "model": settings.model,
        "cliVersion": checked.cli_version,
        "expectedCliVersion": request.expected_cli_version,
        "engineBundleHash": file_sha256(settings.binary),
        "itemBudgetUsd": usd_number(request.item_budget_usd),
        "prices": agent.price_entry(settings.model),
        "tools": list(agent.repository_tools),
        "mcpServers": [],
        "promptMaxBytes": MAX_PROMPT_BYTES,
        "rehearsal": settings.rehearsal_base_url is not None,
        "containment": shell["containment"],
        "isolationAchieved": shell["isolation_achieved"],
        "isolationNotAchieved": shell["isolation_not_achieved"],
    }
    blinding: dict[str, Any] = {
        "seed": request.seed,
        "method": BLINDING_METHOD,
        "scrubbedTerms": list(checked.scrubbed_terms),
        "scrubbedAlso": "every mcp__… tool name; dotted, underscored, hyphenated, spaced and joined forms",
        "replacement": REPLACEMENT,
        "keptIntact": "citations of paths that exist in the pinned corpus",
        "adjudicatorSees": ["question", "expected propositions", "scrubbed answer", "citation check results"],
        "adjudicatorNeverSees": [
            "scenario", "task id", "repetition", "observation index", "transport", "tool calls", "costs", "time",
        ],
    }
    return MinimalAdjudication(
        ledger_sha256=ledger.sha256,
        manifest_sha256=request.loaded.manifest_sha256,
        adjudicator=adjudicator,
        blinding=blinding,
        budget=budget_record(Budget(cap=request.cap_usd), Tally()),
        items=[initial_item(p, settings.model) for p in checked.items],
        missing=[
            MissingObservation(
                observation_index=o.index, task_id=o.task_id, repetition=o.repetition, status=o.status
            )
            for o in ledger.observations
            if o.status != "completed"
        ],
        status="running",
        started_at=_now(),
        ledger_unverified=list(ledger.unverified) or None,
    )


def run_adjudication(request: AdjudicationRequest) -> AdjudicationSummary:
    """Adjudicate every completed observation of a finished minimal-study run; return the summary.

    The ledger is only read. The companion is created exclusively (mode 0600) at
    ``request.output`` and checkpointed atomically before and after every attempt.

    Raises:
        AdjudicationRefused: refused before anything was reserved or written.
        OutputPathError: the companion path exists, lies inside a checkout or cannot be created;
            nothing written.
        CheckpointError: a checkpoint failed; adjudication stopped and the companion on disk is
            the last good one (closed with the reason where a later write succeeded).
        StopRequested: a stop signal arrived (see the module docstring).
    """
    with ExitStack() as stack:
        return _run_adjudication(request, stack)


def _run_adjudication(request: AdjudicationRequest, stack: ExitStack) -> AdjudicationSummary:
    try:
        checked = _preflight(request)
        raise_if_stopped(NOTHING_WRITTEN)
        output, prepared = checked.output, checked.items
        remote = open_item_executor(stack, request, prepared) if request.executor == "ray" else None
        companion = _companion(request, checked)
        store = LedgerFile(output, companion.to_json())
    except BaseException as error:
        failure = refusal(error, (AdjudicationRefused, OutputPathError))
        if failure is error:
            raise
        if isinstance(failure, PreflightError):
            raise AdjudicationRefused(str(failure)) from error
        raise failure from error
    tools = arm_tools(REPOSITORY_ONLY, request.settings.mcp, ())
    total = len(prepared)

    def run_item(item: PreparedItem, reservation: Decimal) -> CliAttemptResult:
        return run_cli_attempt(
            request.settings,
            agent=agent_cli(request.settings.agent),
            scenario=REPOSITORY_ONLY,
            tools=tools,
            root=request.roots[item.task.repository],
            pin=request.loaded.manifest.repositories[item.task.repository],
            prompt=item.prompt or "",
            reservation_usd=reservation,
            parent_env=request.parent_env,
        )

    walk = ItemWalk(
        companion=companion, store=store, concurrency=request.concurrency, cap=request.cap_usd,
        limit=request.item_budget_usd,
        run_item=run_item if remote is None else remote_item_runner(remote, request, tools),
        started=lambda index, item_id: request.progress.item_started(index, total, item_id),
        settled=lambda index, item_id, status, charged, spent, cap: request.progress.item_settled(
            index, total, item_id, status, charged, spent, cap),
    )
    try:
        walk.walk([(position, item) for position, item in enumerate(prepared) if item.prompt is not None])
        raise_if_stopped()
        _finish(companion, store)
        raise_if_stopped()
    except BaseException as error:
        stopped = stop_reason()
        if stopped is not None:
            if companion.stop_reason is None or stopped not in companion.stop_reason:
                earlier = companion.stop_reason
                companion.stop_reason = stopped if earlier is None else f"{earlier}; then {stopped}"
        elif isinstance(error, CheckpointError):
            companion.stop_reason = checkpoint_stop_reason(error)
        companion.stop_reason = companion.stop_reason or "adjudication stopped on an error; review the budget"
        with contextlib.suppress(CheckpointError):
            _finish(companion, store)
        signum = stop_signal()
        if signum is None:
            raise
        detail = f"the companion {output} is checkpointed with the signal as its stop reason"
        raise StopRequested(signum, detail) from error
    return summarize(companion, output)


def _finish(companion: MinimalAdjudication, store: LedgerFile) -> None:
    """Mark items never attempted as pending with the stop reason, set the final status, checkpoint.

    If that checkpoint fails, the last companion that reached the disk is closed the same way
    (its open reservation, if any, stays charged in full) where that smaller write succeeds.

    Raises:
        CheckpointError: the checkpoint of the closed companion failed.
    """
    _close(companion)
    try:
        store.checkpoint(companion.to_json())
    except CheckpointError as error:
        reasons = [checkpoint_stop_reason(error), *([companion.stop_reason] if companion.stop_reason else [])]
        with contextlib.suppress(CheckpointError, ValueError):
            last = MinimalAdjudication.model_validate(json.loads(store.last_written))
            last.stop_reason = "; ".join(dict.fromkeys(reasons)) + SALVAGED_NOTE
            _close(last)
            store.checkpoint(last.to_json())
        raise


def _close(companion: MinimalAdjudication) -> None:
    """Mark items never attempted as pending with the stop reason; set the final status and time."""
    why = f"not adjudicated: {companion.stop_reason}" if companion.stop_reason else None
    for position, item in enumerate(companion.items):
        if item.status == "pending" and item.attempt_status is None and why and item.prompt_bytes is not None:
            companion.items[position] = item.model_copy(update={"pending_reason": why})
    companion.status = companion_status((item.status for item in companion.items), finished=True)
    companion.finished_at = _now()


__all__ = ["AdjudicationRefused", "AdjudicationRequest", "OutputPathError", "run_adjudication"]
