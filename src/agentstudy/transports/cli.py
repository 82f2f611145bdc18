"""One Claude Code attempt (seed 000, ``runCliAttempt``): export, spawn, read, check, price.

The caller has already reserved and checkpointed; this module runs the child in a fresh
export of the pinned corpus with a private TMPDIR, reads its stream-json, checks the setup,
classifies the outcome and computes the list-price cost. Settlement is the caller's, through
``pricing.budget.settle_attempt`` and the attempt machine.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from agentstudy.io.export import export_corpus, remove_export
from agentstudy.io.process import STDOUT_LIMIT_BYTES, run_bounded
from agentstudy.pricing.budget import format_max_budget
from agentstudy.pricing.cost import (
    AttemptCost,
    CacheWrites,
    CostProblem,
    ModelTokens,
    compute_cost,
    parse_model_usage,
)
from agentstudy.stream.outcome import CliStatus, ProcessFacts, classify
from agentstudy.stream.setup import SetupExpectations, check_setup
from agentstudy.stream.transcript import Transcript, parse_transcript
from agentstudy.transports.cli_args import (
    ArmTools,
    McpServerSpec,
    child_environment,
    cli_arguments,
    mcp_config,
)

ATTEMPT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class CliSettings:
    """Run-wide settings of the CLI transport.

    Attributes:
        binary: the Claude Code executable.
        model: ``STUDY_MODEL``.
        mcp: the MCP server under study.
        rehearsal_base_url: the local Messages API server in rehearsal, else ``None``.
        private_home: give each attempt its own HOME (rehearsal); otherwise the user's HOME
            is passed so the CLI can use its own login.
        timeout_s: attempt timeout in seconds.
        stdout_limit: stdout bound in bytes.
    """

    binary: Path
    model: str
    mcp: McpServerSpec
    rehearsal_base_url: str | None = None
    private_home: bool = False
    timeout_s: float = ATTEMPT_TIMEOUT_S
    stdout_limit: int = STDOUT_LIMIT_BYTES


@dataclass(frozen=True)
class CliAttemptResult:
    """Everything one attempt produced before settlement.

    ``status`` is the pre-settlement status; costs are ``Decimal`` USD or ``None`` when
    invalid; ``fields`` are record fields taken from the transcript.
    """

    status: CliStatus
    reported_cost_usd: Decimal | None
    computed_cost: AttemptCost | None
    setup_problems: tuple[str, ...]
    cost_problem: str | None
    exit_code: int | None
    wall_time_ms: int
    fields: dict[str, Any]


def reported_cost(result: Mapping[str, Any] | None) -> Decimal | None:
    """The result's ``total_cost_usd`` when it is a finite number >= 0, else ``None``."""
    value = result.get("total_cost_usd") if result else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _cache_writes(result: Mapping[str, Any] | None) -> CacheWrites:
    usage = result.get("usage") if result else None
    creation = usage.get("cache_creation") if isinstance(usage, Mapping) else None
    if not isinstance(creation, Mapping):
        return CacheWrites()

    def count(key: str) -> int:
        value = creation.get(key, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return CacheWrites(count("ephemeral_5m_input_tokens"), count("ephemeral_1h_input_tokens"))


def _price(transcript: Transcript) -> tuple[dict[str, ModelTokens] | None, AttemptCost | None, str | None]:
    result = transcript.result
    if result is None:
        return None, None, "no result event"
    try:
        totals = parse_model_usage(result.get("modelUsage"))
        cost = compute_cost(totals, _cache_writes(result), list(transcript.message_prompts.values()))
    except CostProblem as problem:
        return None, None, str(problem)
    if reported_cost(result) is None:
        return totals, cost, "total_cost_usd is not a finite number >= 0"
    return totals, cost, None


def _fields(transcript: Transcript, totals: Mapping[str, ModelTokens] | None) -> dict[str, Any]:
    init, result = transcript.init or {}, transcript.result or {}

    def total(attr: str) -> int | None:
        return sum(getattr(t, attr) for t in totals.values()) if totals is not None else None

    num_turns = result.get("num_turns")
    return {
        "model": init.get("model") if isinstance(init.get("model"), str) else None,
        "tools": init.get("tools") if isinstance(init.get("tools"), list) else None,
        "mcp_servers": init.get("mcp_servers") if isinstance(init.get("mcp_servers"), list) else None,
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
    }


def run_cli_attempt(
    settings: CliSettings,
    *,
    scenario: str,
    tools: ArmTools,
    root: Path,
    pin: str,
    prompt: str,
    reservation_usd: Decimal,
    parent_env: Mapping[str, str],
) -> CliAttemptResult:
    """Run one attempt of ``scenario`` against the corpus at ``root``/``pin``.

    The export and the attempt's private directories are removed afterwards, even after a
    timeout. Never raises for the child's behaviour; raises ``GitError`` if the export fails
    (before anything was spawned).
    """
    export = export_corpus(root, pin)
    scratch = Path(tempfile.mkdtemp(prefix="agentstudy-attempt-"))
    try:
        (scratch / "home").mkdir()
        (scratch / "tmp").mkdir()
        home = str(scratch / "home") if settings.private_home else parent_env.get("HOME", str(scratch / "home"))
        env = child_environment(
            parent_env, home=home, tmpdir=str(scratch / "tmp"), rehearsal_base_url=settings.rehearsal_base_url
        )
        argv = [
            str(settings.binary),
            *cli_arguments(
                model=settings.model,
                max_budget_usd=format_max_budget(reservation_usd),
                tools=tools,
                mcp_config_json=mcp_config(scenario, settings.mcp, str(root), pin),
                prompt=prompt,
            ),
        ]
        process = run_bounded(argv, env, export, settings.timeout_s, settings.stdout_limit)
    finally:
        remove_export(export)
        shutil.rmtree(scratch, ignore_errors=True)
    transcript = parse_transcript(process.stdout.decode("utf-8", "replace").splitlines())
    facts = ProcessFacts(process.started, process.timed_out, process.truncated, process.exit_code)
    # A killed or truncated child's missing result is not an extra setup problem (decision 2).
    setup_problems: list[str] = []
    if process.started and not process.timed_out and not process.truncated:
        expected = SetupExpectations(settings.model, tools.expected, tools.mcp_server)
        setup_problems = check_setup(transcript, expected, tools.allowed)
    totals, cost, cost_problem = _price(transcript)
    status = classify(facts, setup_problems, cost_problem, transcript.result)
    return CliAttemptResult(
        status=status,
        reported_cost_usd=reported_cost(transcript.result),
        computed_cost=cost,
        setup_problems=tuple(setup_problems),
        cost_problem=cost_problem,
        exit_code=process.exit_code,
        wall_time_ms=process.wall_time_ms,
        fields=_fields(transcript, totals),
    )
