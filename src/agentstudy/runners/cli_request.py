"""The cli run's request and the records it makes (seed 000, issue 19): ``CliRunRequest``, the attempt port
the walks use, each settled attempt's observation and the ledger as the run starts. Split from
``runners.minimal``, which runs the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Literal

from agentstudy.agents.registry import DEFAULT_AGENT, agent_cli
from agentstudy.io.provenance import file_sha256
from agentstudy.pricing.budget import Budget, settle_attempt
from agentstudy.pricing.strict_cap import ReservationRule
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import optional_usd_number, usd_number
from agentstudy.protocol.continuation import Predecessor
from agentstudy.protocol.manifest import LoadedManifest
from agentstudy.protocol.prepare_steps import prepare_outcomes
from agentstudy.protocol.records import CliObservation, MinimalLedger
from agentstudy.protocol.run_records import CLI_CORPUS_PATH, CliRunSettings, McpServerRecord
from agentstudy.protocol.schedule import Mode, PilotSize, ScheduleEntry
from agentstudy.protocol.sequential_plan import SequentialPlan
from agentstudy.runners.agent_runs import AgentRun, expected_for
from agentstudy.runners.concurrent_walk import AttemptPort
from agentstudy.runners.ledger_steps import (
    budget_record,
    served_arm,
    study_header,
)
from agentstudy.runners.preflight import (
    McpPreflight,
)
from agentstudy.runners.progress import (
    RunProgress,
    SilentProgress,
)
from agentstudy.transports.cli import CliAttemptResult, CliSettings
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
    """``--strict-cap`` (issue 19): reserve the limit plus one worst-case turn (``pricing.strict_cap``)."""
    keep_transcripts: bool = True
    """Keep every attempt's raw stream in ``LEDGER.transcripts/`` (issue 28; ``--no-transcripts`` turns it off)."""
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


def cli_observation(
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
    """The observation of one settled cli attempt (seed 000's observation fields; money in USD, wall time in ms):
    what the attempt measured, its reservation and charge, and the answer only when it ``completed``."""
    fields = {**result.fields, **(transcript or {})}
    answer = str(fields.pop("answer_text"))
    failure = cli_failure_kind(status, fields.pop("api_error_status", None))
    return CliObservation(
        task_id=entry.task_id,
        repository=entry.repository,
        scenario=entry.scenario,
        repetition=entry.repetition,
        position=entry.position,
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


def cli_ledger(
    request: CliRunRequest, cli_version: str, mcp: McpPreflight, planned: int, started_at: str, rule: ReservationRule,
    control: McpPreflight | None = None,
) -> MinimalLedger:
    """The cli run's ledger as it starts (``running``, no observation): pins, agent, prices, the MCP server as
    preflight found it, arms, budget and plan."""
    return MinimalLedger(
        **study_header(request.loaded, request.settings.mcp.name, served_arm(request.settings.mcp, mcp),
                       served_arm(request.settings.control_mcp, control)),
        engine_bundle_hash=file_sha256(request.settings.binary),
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
            corpus_path=CLI_CORPUS_PATH,
        ),
        transcripts=request.keep_transcripts,
        rehearsal=request.settings.rehearsal_base_url is not None,
        mode=request.mode,
        planned_attempts=planned,
        budget=budget_record(Budget(cap=request.cap_usd), Tally(), rule),
        observations=[],
        concurrency=request.concurrency if request.concurrency > 1 else None,
        open_reservations=[] if request.concurrency > 1 else None,
        started_at=started_at,
        status="running",
    )
