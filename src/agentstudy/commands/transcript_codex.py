"""``agentstudy transcript --agent codex``: the run's Codex checks on a saved ``exec --json`` stream (issue 21 item 3).

The verdict comes from the same pure code a Codex attempt is judged by
(:mod:`agentstudy.stream.codex`: ``parse_codex_stream``, then ``codex_outcome`` with the arm's
``CodexExpectations``), settled by ``pricing.budget``. Codex reports no cost, so a completed
attempt is charged its computed cost only; while this build holds no OpenAI price for the model
the record says so (``computedCostUsd`` null, ``costBasis`` null, ``chargedUsd`` null for a
completed attempt, the reservation otherwise). Nothing is started.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agentstudy.io.process import STDOUT_LIMIT_BYTES
from agentstudy.pricing.budget import conservative_charge
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.stream.codex import CodexExpectations, codex_outcome, parse_codex_stream
from agentstudy.stream.outcome import ProcessFacts

UNPRICED_NOTE = "Codex reports no cost and this build has no OpenAI price for the model"
"""``costNote`` of a record whose computed cost is unknown."""


def codex_expectations(scenario: str, spec: McpServerSpec) -> CodexExpectations:
    """What the arm's generated ``config.toml`` promises: in ``doc-bridge-mcp`` the one
    ``[mcp_servers]`` table ``spec.name`` with ``enabled_tools`` = ``spec.read_only_tools`` (the
    server's own names, e.g. ``doc.search``); in the control arm no server."""
    if scenario == DOC_BRIDGE_MCP:
        return CodexExpectations(spec.name, tuple(spec.read_only_tools))
    return CodexExpectations(None)


def codex_attempt_record(
    data: bytes,
    *,
    scenario: str,
    spec: McpServerSpec,
    stderr: str,
    exit_code: int,
    timed_out: bool,
    attempt_budget_usd: Decimal,
    reservation_usd: Decimal,
    containment: str = "unknown",
) -> dict[str, Any]:
    """The attempt record of a saved Codex stream, without the answer (JSON-ready, camelCase).

    ``data`` is the child's stdout (bytes past the 4 MiB bound are cut and the attempt is
    ``failed``, as in a run); ``stderr`` its standard error text (Codex reports a required MCP
    server that failed to start only there). Keys: ``status``, ``statusReason``, ``setupProblem``
    (every problem joined by ``; ``, ``null`` when none), ``costProblem``, ``chargedUsd`` /
    ``reservedUsd`` / ``computedCostUsd`` (USD numbers or ``null``), ``costNote``, ``agent``,
    ``transport``, ``scenario``, ``attemptBudgetUsd``, ``exitCode``, ``toolCalls``,
    ``toolCallsByName`` (``shell:<program>``, ``mcp__<server>__<tool>``), ``readDenials``,
    ``usageComplete``, the token counts (``inputTokens``, ``cachedInputTokens``,
    ``cacheWriteInputTokens``, ``outputTokens``, ``reasoningOutputTokens``; ``null`` without
    usage), ``eventCount``, ``notices`` and ``containment`` (echoed). Never raises on content.
    """
    truncated = len(data) > STDOUT_LIMIT_BYTES
    text = data[:STDOUT_LIMIT_BYTES].decode("utf-8", errors="replace")
    transcript = parse_codex_stream(text.splitlines())
    process = ProcessFacts(started=True, timed_out=timed_out, truncated=truncated, exit_code=exit_code,
                           stdout_limit=STDOUT_LIMIT_BYTES)
    verdict = codex_outcome(process, transcript, codex_expectations(scenario, spec), stderr)
    setup = verdict.problem if verdict.status == "invalid-setup" else None  # every setup problem, joined
    charged = None if verdict.status == "completed" else usd_number(conservative_charge(reservation_usd, ()))
    usage = transcript.usage
    calls = dict(sorted(transcript.tool_calls.items()))
    return {
        "status": verdict.status,
        "statusReason": verdict.reason,
        "setupProblem": setup,
        "costProblem": None,
        "chargedUsd": charged,
        "reservedUsd": usd_number(reservation_usd),
        "cliReportedCostUsd": None,
        "computedCostUsd": None,
        "costNote": UNPRICED_NOTE,
        "containment": containment,
        "agent": "codex",
        "transport": "cli",
        "scenario": scenario,
        "attemptBudgetUsd": usd_number(attempt_budget_usd),
        "exitCode": exit_code,
        "toolCalls": sum(calls.values()),
        "toolCallsByName": calls,
        "readDenials": transcript.read_denials,
        "usageComplete": transcript.usage_complete,
        "inputTokens": usage.input_tokens if usage else None,
        "cachedInputTokens": usage.cached_input_tokens if usage else None,
        "cacheWriteInputTokens": usage.cache_write_input_tokens if usage else None,
        "outputTokens": usage.output_tokens if usage else None,
        "reasoningOutputTokens": usage.reasoning_output_tokens if usage else None,
        "eventCount": transcript.event_count,
        "notices": transcript.notices,
    }
