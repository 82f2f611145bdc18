"""The http run's request and the records it makes (seed 000, issue 19): ``HttpRunRequest``, the ledger as
the run starts, and the settlement of an attempt a stop signal interrupted. Split from
``runners.minimal_http``, which runs the walk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Literal

from agentstudy.io.containment import ContainmentMode
from agentstudy.io.messages_api import (
    ANTHROPIC_VERSION,
)
from agentstudy.io.signals import stop_reason
from agentstudy.pricing.budget import Budget, reservation_for
from agentstudy.pricing.http import DEFAULT_MAX_TOKENS, UpperPrices
from agentstudy.pricing.strict_cap import HTTP_RULE
from agentstudy.pricing.sums import usd_from_json
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.arm_order import order_rule, pair_position
from agentstudy.protocol.arm_servers import arm_server
from agentstudy.protocol.continuation import Predecessor
from agentstudy.protocol.manifest import LoadedManifest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.prepare_steps import prepare_outcomes
from agentstudy.protocol.records import HttpObservation, MinimalLedger
from agentstudy.protocol.run_records import HttpPrices, HttpRunSettings, McpServerRecord
from agentstudy.protocol.schedule import Mode, PilotSize, ScheduleEntry
from agentstudy.protocol.sequential_plan import SequentialPlan
from agentstudy.runners.ledger_steps import (
    budget_record,
    now_iso,
    served_arm,
    study_header,
)
from agentstudy.runners.preflight import McpPreflight
from agentstudy.runners.progress import RunProgress, SilentProgress
from agentstudy.transports.api_retry import DEFAULT_RETRY, RetryPolicy
from agentstudy.transports.http import (
    ATTEMPT_DEADLINE_MS,
    MAX_TOOL_CALLS_PER_TURN,
    MAX_TURNS,
    TEMPERATURE,
    TOOL_RESULT_LIMIT,
    http_isolation,
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
    control_mcp: McpServerSpec | None = None
    """The control arm's own server (issue 44; ``protocol.arm_servers``); ``None``: the repository-only arm."""


def _notes(request: HttpRunRequest, scenario: str) -> tuple[str, ...]:
    spec = arm_server(scenario, request.mcp, request.control_mcp)
    return () if spec is None else spec.isolation_notes()


def settle_interrupted(ledger: MinimalLedger, request: HttpRunRequest) -> None:
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
    rule = order_rule(request.loaded.manifest, request.loaded.protocol_hash)
    entry = ScheduleEntry(marker.task_id, request.loaded.manifest.task(marker.task_id).repository,
                          marker.scenario, marker.repetition, position=pair_position(
                              rule, tuple(request.loaded.manifest.scenarios), marker.task_id, marker.repetition,
                              marker.scenario))
    ledger.observations.append(HttpObservation.model_validate({
        "taskId": entry.task_id, "repository": entry.repository,
        "scenario": entry.scenario, "repetition": entry.repetition, "position": entry.position,
        "model": request.model, "tools": [], "toolCallsByName": {}, "toolErrorsByName": {}, "toolCalls": 0,
        "numTurns": 0, "inputTokens": 0, "outputTokens": 0, "usageComplete": False,
        "reservedUsd": usd_number(reserved + charged), "measuredUsd": usd_number(charged),
        "chargedUsd": usd_number(reserved + charged),
        "cumulativeCapExceeded": ledger.budget.cumulative_cap_exceeded, "wallTimeMs": 0, "status": "failed",
        "statusReason": f"{stop_reason()} before the attempt's result was recorded", "answer": "",
        **http_isolation(request.containment, entry.scenario, _notes(request, entry.scenario),
                         served=arm_server(entry.scenario, request.mcp, request.control_mcp) is not None),
    }))
    ledger.open_reservation = None


def http_ledger(request: HttpRunRequest, base_url: str, mcp: McpPreflight, planned: int,
                control: McpPreflight | None = None) -> MinimalLedger:
    """The http run's ledger as it starts (``running``, no observation): pins, model, upper prices, the agent
    loop's limits, the MCP server as preflight found it, arms (``control``: the control arm's own server's
    preflight, issue 44), budget and plan."""
    return MinimalLedger(
        **study_header(request.loaded, request.mcp.name, served_arm(request.mcp, mcp),
                       served_arm(request.control_mcp, control)),
        engine_bundle_hash=None,
        transport="http",
        model=request.model,
        prices=HttpPrices(input=usd_number(request.prices.input_usd_per_million),
                          output=usd_number(request.prices.output_usd_per_million),
                          nominal=True if request.nominal_prices else None),
        http=HttpRunSettings(
            api_base_url=base_url, anthropic_version=ANTHROPIC_VERSION, max_tokens=DEFAULT_MAX_TOKENS,
            temperature=TEMPERATURE, max_turns=MAX_TURNS, max_tool_calls_per_turn=MAX_TOOL_CALLS_PER_TURN,
            attempt_deadline_ms=ATTEMPT_DEADLINE_MS, tool_result_chars=TOOL_RESULT_LIMIT,
            attempt_budget_usd=concurrent_limit(request),
        ),
        mcp_server=McpServerRecord(
            name=request.mcp.name,
            command=list(request.mcp.command),
            listed_tools=list(mcp.listed_tools),
            denied_tools=[t for t in mcp.listed_tools if t not in request.mcp.read_only_tools],
            read_only_evidence=dict(mcp.read_only_evidence),
            prepared=prepare_outcomes(mcp.prepared),
        ),
        rehearsal=request.rehearsal,
        mode=request.mode,
        planned_attempts=planned,
        budget=budget_record(Budget(cap=request.cap_usd), Tally(), HTTP_RULE),
        observations=[],
        concurrency=request.concurrency if request.concurrency > 1 else None,
        open_reservations=[] if request.concurrency > 1 else None,
        started_at=now_iso(),
        status="running",
    )


def concurrent_limit(request: HttpRunRequest) -> float | None:
    """The ledger's ``http.attemptBudgetUsd``: the reservation of a concurrent run's attempts (USD), else ``None``."""
    if request.concurrency <= 1 or request.attempt_budget_usd is None:
        return None
    return usd_number(reservation_for(request.attempt_budget_usd))
