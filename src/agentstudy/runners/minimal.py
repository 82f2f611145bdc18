"""The minimal study runner with the CLI transport (seed 000): preflight, walk, settle, checkpoint.

For each scheduled attempt: admit it only if the full per-attempt limit fits under the
remaining cap; reserve and checkpoint; run the child; settle (``max`` rules); checkpoint the
observation. Anything but ``completed`` stops the run (``blocked``); nothing is retried or
resumed. State changes go through ``fsm``; money through ``pricing``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.fsm.attempt import AttemptMachine
from agentstudy.fsm.run import RunMachine
from agentstudy.io.ledger_store import LedgerFile, resolve_output
from agentstudy.io.provenance import engine_revision, file_sha256, runner_hash
from agentstudy.pricing.budget import Budget, reservation_for, settle_attempt
from agentstudy.pricing.table import CLI_PRICES
from agentstudy.protocol.manifest import LoadedManifest
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.records import CliObservation
from agentstudy.protocol.schedule import Mode, ScheduleEntry, build_schedule
from agentstudy.runners.preflight import (
    check_cli_version,
    check_corpus_roots,
    check_mcp_servers,
    require_roots,
)
from agentstudy.runners.summary import RunSummary, summarize
from agentstudy.transports.cli import CliAttemptResult, CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools

Progress = Callable[[str], None]


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
    progress: Progress = field(default=lambda _line: None)


def _prices_entry(model: str) -> dict[str, Any] | None:
    price = CLI_PRICES.get(model)
    if price is None:
        return None
    return {
        "source": price.source,
        "tierThresholdTokens": price.tier_threshold_tokens,
        "tiers": [{"input": float(t.input), "output": float(t.output)} for t in price.tiers],
        "cacheWrite5mMultiplier": 1.25,
        "cacheWrite1hMultiplier": 2.0,
        "cacheReadMultiplier": 0.1,
    }


def _observation(
    entry: ScheduleEntry,
    request: CliRunRequest,
    cli_version: str,
    result: CliAttemptResult,
    status: str,
    reservation: Decimal,
    charged: Decimal,
    cap_exceeded: bool,
) -> CliObservation:
    fields = dict(result.fields)
    answer = str(fields.pop("answer_text"))
    return CliObservation(
        task_id=entry.task_id,
        scenario=entry.scenario,
        repetition=entry.repetition,
        cli_version=cli_version,
        expected_cli_version=request.expected_cli_version,
        attempt_budget_usd=float(request.attempt_budget_usd),
        **fields,
        cli_reported_cost_usd=float(result.reported_cost_usd) if result.reported_cost_usd is not None else None,
        computed_cost_usd=float(result.computed_cost.usd) if result.computed_cost is not None else None,
        cost_basis=result.computed_cost.basis if result.computed_cost is not None else None,
        setup_problem="; ".join(result.setup_problems) or None,
        cost_problem=result.cost_problem,
        reserved_usd=float(reservation),
        charged_usd=float(charged),
        cumulative_cap_exceeded=cap_exceeded,
        exit_code=result.exit_code,
        wall_time_ms=result.wall_time_ms,
        status=status,
        answer=answer if status == "completed" else "",
    )


class _Ledger:
    """The ledger document of one run and its file; every change is checkpointed by the caller."""

    def __init__(self, file: LedgerFile, document: dict[str, Any]) -> None:
        self.file, self.document = file, document

    def budget(self, budget: Budget) -> None:
        self.document["budget"].update(
            spent=float(budget.spent), cumulativeCapExceeded=budget.cap_exceeded
        )

    def save(self) -> None:
        self.file.checkpoint(self.document)


def run_cli_study(request: CliRunRequest) -> RunSummary:
    """Run the pilot or full schedule with the CLI transport and return the summary.

    Raises:
        PreflightError: the run was refused before any reservation; no ledger was written.
        OutputPathError: the ledger path exists or lies inside a checkout; nothing was written.
    """
    manifest = request.loaded.manifest
    schedule = build_schedule(manifest, request.mode)
    run = RunMachine()
    require_roots(schedule, request.roots)
    check_corpus_roots(manifest, request.roots)
    cli_version = check_cli_version(
        request.settings.binary, request.expected_cli_version, request.parent_env, Path.cwd()
    )
    mcp = check_mcp_servers(request.settings.mcp, manifest, schedule, request.roots)
    output = resolve_output(request.output, (*request.roots.values(), *request.forbidden_output_roots))
    limit = request.attempt_budget_usd
    reservation = reservation_for(limit)
    budget = Budget(cap=request.cap_usd)
    ledger = _Ledger(
        LedgerFile(output),
        {
            "version": manifest.version,
            "protocolHash": request.loaded.protocol_hash,
            "runnerHash": runner_hash(),
            "engineRevision": engine_revision(),
            "engineBundleHash": file_sha256(request.settings.binary),
            "repositories": dict(manifest.repositories),
            "transport": "cli",
            "model": request.settings.model,
            "cli": {
                "cliVersion": cli_version,
                "expectedCliVersion": request.expected_cli_version,
                "attemptBudgetUsd": float(limit),
                "prices": _prices_entry(request.settings.model),
            },
            "mcpServer": {
                "name": request.settings.mcp.name,
                "listedTools": list(mcp.listed_tools),
                "deniedTools": list(mcp.extra_denied),
            },
            "rehearsal": request.settings.rehearsal_base_url is not None,
            "adjudication": {"method": "agent", "humanReview": False},
            "mode": request.mode,
            "plannedAttempts": len(schedule),
            "budget": {"cap": float(request.cap_usd), "spent": 0.0, "cumulativeCapExceeded": False},
            "observations": [],
            "status": "running",
        },
    )
    run.begin()
    observations: list[CliObservation] = []
    try:
        ledger.save()
        for index, entry in enumerate(schedule, start=1):
            attempt = AttemptMachine()
            if not budget.fits(limit):
                attempt.refuse()
                ledger.document["stopReason"] = "the per-attempt limit does not fit under the remaining cap"
                break
            attempt.reserve()
            budget = budget.reserve(reservation)
            ledger.budget(budget)
            ledger.document["openReservation"] = {
                "taskId": entry.task_id,
                "scenario": entry.scenario,
                "repetition": entry.repetition,
                "reservedUsd": float(reservation),
            }
            ledger.save()
            attempt.start(checkpointed=True)
            request.progress(f"[{index}/{len(schedule)}] {entry.task_id} rep {entry.repetition} {entry.scenario} …")
            result = run_cli_attempt(
                request.settings,
                scenario=entry.scenario,
                tools=arm_tools(entry.scenario, request.settings.mcp, mcp.extra_denied),
                root=request.roots[entry.repository],
                pin=manifest.repositories[entry.repository],
                prompt=study_prompt(manifest.task(entry.task_id).question),
                reservation_usd=reservation,
                parent_env=request.parent_env,
            )
            status, charged = settle_attempt(
                result.status,
                reservation,
                result.reported_cost_usd,
                result.computed_cost.usd if result.computed_cost else None,
            )
            attempt.settle(status=status)
            budget = budget.settle(reservation, charged)
            observation = _observation(
                entry, request, cli_version, result, attempt.status, reservation, charged, budget.cap_exceeded
            )
            observations.append(observation)
            ledger.document["observations"].append(observation.to_json())
            del ledger.document["openReservation"]
            ledger.budget(budget)
            ledger.save()
            request.progress(
                f"[{index}/{len(schedule)}] {attempt.status}: {observation.tool_calls} tool calls, "
                f"{charged:.6f} USD charged"
            )
            if attempt.status != "completed" or budget.cap_exceeded:
                break
        all_completed = len(observations) == len(schedule) and all(o.status == "completed" for o in observations)
        if all_completed:
            run.finish(all_completed=True)
        else:
            run.block()
    except BaseException:
        if run.status == "running":
            run.block()
        ledger.document["status"] = run.status
        ledger.save()
        ledger.file.close()
        raise
    ledger.document["status"] = run.status
    ledger.save()
    ledger.file.close()
    return summarize(run.status, request.mode, len(schedule), observations, budget, output)
