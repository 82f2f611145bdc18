"""What a finished Claude Code attempt's stdout means: one pure function shared by the runner and
``agentstudy transcript`` (seed 000, "The stream is read line by line" through "Cost").

``evaluate_cli_attempt`` takes the bytes the child wrote, how it ended and the arm's tool
policy, and does the whole sequence after the child ends: parse the stream-json, check the
setup (skipped for a child that was killed or cut off: its missing ``result`` is not a setup
problem, ARCHITECTURE decision 2), read ``modelUsage`` and both costs, and decide the
pre-settlement outcome. Settlement (``pricing.budget.settle_attempt``) stays with the caller.
No IO, clock or environment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from agentstudy.pricing.cost import (
    MAX_TOKENS,
    AttemptCost,
    CacheWrites,
    CostProblem,
    ModelTokens,
    compute_cost,
    parse_model_usage,
)
from agentstudy.pricing.usd_json import EXACT_SIGNIFICANT_DIGITS
from agentstudy.stream.outcome import CliStatus, ProcessFacts, outcome
from agentstudy.stream.setup import SetupExpectations, check_setup
from agentstudy.stream.transcript import Transcript, parse_transcript
from agentstudy.stream.treatment_facts import claude_treatment
from agentstudy.transports.cli_args import ArmTools


@dataclass(frozen=True)
class CliEvaluation:
    """Everything an attempt's transcript says, before settlement.

    Attributes:
        status: the pre-settlement status (``stream.outcome``).
        status_problem: why ``status`` is not ``completed``, in detail (``None`` when it is).
        status_reason: the same in our own short words, no transcript text (``None`` when
            ``completed``): the ledger's ``statusReason`` before settlement (``settled_reason``).
        reported_cost_usd: the result's ``total_cost_usd`` as ``Decimal`` USD, ``None`` if invalid.
        computed_cost: the list-price cost of ``modelUsage`` and its basis, ``None`` if it
            cannot be priced.
        setup_problems: every setup problem, shape problems first.
        cost_problem: why a cost is invalid, else ``None``.
        fields: the record fields read from the transcript, snake_case keys of
            ``protocol.records.CliObservation`` plus ``answer_text`` (the private answer).
        measurements: further counts (tokens) by contract name, for the provider adapters.
    """

    status: CliStatus
    status_problem: str | None
    status_reason: str | None
    reported_cost_usd: Decimal | None
    computed_cost: AttemptCost | None
    setup_problems: tuple[str, ...]
    cost_problem: str | None
    fields: dict[str, Any]
    measurements: dict[str, int] = field(default_factory=dict)
    """Counts the agent's stream gives beyond the record fields, by contract name (Codex:
    ``reasoningOutputTokens``); read by the provider adapters (issue 34), never by the study ledger."""


def reported_cost(result: Mapping[str, Any] | None) -> Decimal | None:
    """The result's ``total_cost_usd`` when it is a finite number >= 0, else ``None`` (USD).

    Claude Code adds its prices in JavaScript doubles, so its total carries their rounding
    noise (``0.0013654000000000001`` for a computed ``0.0013654``). A double holds 15
    significant decimal digits for certain; a float total is read at those 15 digits
    (``0.0013654``), so the noise never reaches a charge, a sum or a JSON file (issue 17 item 8).
    An integer stays exact.
    """
    value = result.get("total_cost_usd") if result else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    try:
        if isinstance(value, int):
            return Decimal(value)
        return Decimal(f"{value:.{EXACT_SIGNIFICANT_DIGITS}g}").normalize()
    except InvalidOperation:
        return None


def _usd(amount: Decimal) -> str:
    """A USD amount for a message, without trailing zeros (``0.0032``)."""
    return format(amount.normalize(), "f")


def settled_reason(
    before: str, reason: str | None, status: str, charged_usd: Decimal, reservation_usd: Decimal
) -> str | None:
    """The reason after settlement: ``reason`` (the pre-settlement status ``before``'s), unless
    settlement changed the status (a success charged above its reservation; USD amounts)."""
    if status != before:
        return f"charged {_usd(charged_usd)} USD is above the reservation of {_usd(reservation_usd)} USD"
    return reason


def _cache_writes(result: Mapping[str, Any]) -> CacheWrites:
    usage = result.get("usage")
    creation = usage.get("cache_creation") if isinstance(usage, Mapping) else None
    if not isinstance(creation, Mapping):
        return CacheWrites()

    def count(key: str) -> int:
        value = creation.get(key, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return CacheWrites(count("ephemeral_5m_input_tokens"), count("ephemeral_1h_input_tokens"))


def _price(transcript: Transcript) -> tuple[dict[str, ModelTokens] | None, AttemptCost | None, str | None]:
    """Token totals, computed cost and the cost problem (ARCHITECTURE decisions 4 and 5).

    Totals are kept when ``modelUsage`` parses even if a model has no price, so the record
    still carries the tokens; an empty ``modelUsage`` is valid zero usage.
    """
    result = transcript.result
    if result is None:
        return None, None, "no result event"
    try:
        totals = parse_model_usage(result.get("modelUsage"))
    except CostProblem as problem:
        return None, None, str(problem)
    try:
        writes = _cache_writes(result)  # raises CostProblem for an implausible count
        cost = compute_cost(totals, writes, list(transcript.message_prompts.values()))
    except CostProblem as problem:
        return totals, None, str(problem)
    if reported_cost(result) is None:
        return totals, cost, "total_cost_usd is not a finite number >= 0"
    return totals, cost, None


def _fields(transcript: Transcript, totals: Mapping[str, ModelTokens] | None, server: str | None) -> dict[str, Any]:
    init, result = transcript.init or {}, transcript.result or {}

    def total(attr: str) -> int | None:  # within the bound every ledger reader applies (issue 29), else unknown
        summed = sum(getattr(t, attr) for t in totals.values()) if totals is not None else None
        return summed if summed is not None and summed <= MAX_TOKENS else None

    num_turns = result.get("num_turns")
    if isinstance(num_turns, int) and not 0 <= num_turns <= MAX_TOKENS:
        num_turns = None
    tools, servers = init.get("tools"), init.get("mcp_servers")
    return {
        "model": init.get("model") if isinstance(init.get("model"), str) else None,
        # Copied only when well formed, so the ledger record always validates (null otherwise).
        "tools": tools if isinstance(tools, list) and all(isinstance(t, str) for t in tools) else None,
        "mcp_servers": (
            servers if isinstance(servers, list) and all(isinstance(s, dict) for s in servers) else None
        ),
        "tool_calls_by_name": transcript.tool_calls_by_name(),
        "tool_calls": len(transcript.tool_uses),
        "permission_denials": transcript.permission_denials(),
        "tool_errors_by_name": transcript.tool_errors_by_name(),
        "input_tokens": total("input_tokens"),
        "output_tokens": total("output_tokens"),
        "cache_creation_input_tokens": total("cache_creation_input_tokens"),
        "cache_read_input_tokens": total("cache_read_input_tokens"),
        "num_turns": num_turns if isinstance(num_turns, int) and not isinstance(num_turns, bool) else None,
        "cli_subtype": result.get("subtype") if isinstance(result.get("subtype"), str) else None,
        "is_error": result.get("is_error") if isinstance(result.get("is_error"), bool) else None,
        "usage_complete": totals is not None,
        "answer_text": result.get("result") if isinstance(result.get("result"), str) else "",
        "api_retries": transcript.api_retries,
        "api_retry_wait_ms": transcript.api_retry_wait_ms,
        "api_retry_statuses": list(transcript.api_retry_statuses),
        "api_error_status": api_error_status(result),
        "treatment": claude_treatment(transcript, server).to_json(),
    }


def api_error_status(result: Mapping[str, Any]) -> int | None:
    """The HTTP status a ``result`` says ended the attempt (``terminal_reason`` ``api_error`` with
    ``api_error_status``), else ``None`` (issue 33)."""
    status = result.get("api_error_status")
    if result.get("terminal_reason") == "api_error" and isinstance(status, int) and not isinstance(status, bool):
        return status
    return None


def cli_failure_kind(status: str, api_status: int | str | None) -> str | None:
    """The ``failureKind`` of a cli attempt settled ``status``: ``timeout`` for ``timed-out``; for ``failed``,
    ``rate-limited`` (429), ``overloaded`` (529), ``server-error`` (other 5xx) by the status the API gave last,
    ``network`` / ``timeout`` when the agent named those instead of a status (Codex:
    ``stream.codex_failures``), else ``agent``; ``None`` for any other status (issue 33)."""
    if status == "timed-out":
        return "timeout"
    if status != "failed":
        return None
    if api_status in ("network", "timeout"):
        return str(api_status)
    if not isinstance(api_status, int):
        return "agent"
    if api_status == 429:
        return "rate-limited"
    if api_status == 529:
        return "overloaded"
    if api_status is not None and api_status >= 500:
        return "server-error"
    return "agent"


def evaluate_cli_attempt(stdout: bytes, process: ProcessFacts, *, model: str, tools: ArmTools) -> CliEvaluation:
    """Evaluate one attempt's stdout: parse, check the setup, price, decide the outcome (pure).

    Args:
        stdout: what the child wrote (at most the stdout bound); decoded as UTF-8 with
            replacement, so undecodable bytes end up in a non-JSON line, never an exception;
            lines end at ``\n`` only.
        process: how the child ended (started, timed out, truncated, exit code).
        model: the configured ``--model`` the init event must echo.
        tools: the arm's tool policy: ``expected`` (init's exact set), ``allowed`` (what may be
            called) and ``mcp_server`` (the one server of the MCP arm, else ``None``).

    Returns:
        A ``CliEvaluation``; never raises on the content of ``stdout``.
    """
    # Split on "\n" only: str.splitlines would also split inside JSON strings holding U+2028,
    # U+2029, U+0085 or form feeds, which the CLI writes unescaped.
    transcript = parse_transcript(stdout.decode("utf-8", "replace").split("\n"))
    setup_problems: list[str] = []
    if process.started and not (process.timed_out or process.truncated or process.stopped):
        expected = SetupExpectations(model, tools.expected, tools.mcp_server, tools.lost)
        setup_problems = check_setup(transcript, expected, tools.allowed)
    totals, cost, cost_problem = _price(transcript)
    decided = outcome(process, setup_problems, cost_problem, transcript.result)
    return CliEvaluation(
        status=decided.status,
        status_problem=decided.problem,
        status_reason=decided.reason,
        reported_cost_usd=reported_cost(transcript.result),
        computed_cost=cost,
        setup_problems=tuple(setup_problems),
        cost_problem=cost_problem,
        fields=_fields(transcript, totals, tools.mcp_server),
    )
