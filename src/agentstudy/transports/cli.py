"""One Claude Code attempt (seed 000, ``runCliAttempt``): export, spawn, read, check, price.

The caller has already reserved and checkpointed; this module runs the child in a fresh
export of the pinned corpus with a private TMPDIR, then hands its stdout to
``transports.cli_evaluation.evaluate_cli_attempt`` (parse, setup checks, costs, outcome — the
same code path as ``agentstudy transcript``). Settlement is the caller's, through
``pricing.budget.settle_attempt`` and the attempt machine.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.io.export import export_pinned_corpus, remove_export
from agentstudy.io.process import STDOUT_LIMIT_BYTES, run_bounded
from agentstudy.pricing.budget import format_max_budget
from agentstudy.pricing.cost import AttemptCost
from agentstudy.stream.outcome import CliStatus, ProcessFacts
from agentstudy.transports.cli_args import (
    ArmTools,
    McpServerSpec,
    child_environment,
    cli_arguments,
    mcp_config,
)
from agentstudy.transports.cli_evaluation import evaluate_cli_attempt

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
    export = export_pinned_corpus(root, pin)
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
        process = run_bounded(argv, env, export.path, settings.timeout_s, settings.stdout_limit)
    finally:
        remove_export(export.path)
        shutil.rmtree(scratch, ignore_errors=True)
    facts = ProcessFacts(process.started, process.timed_out, process.truncated, process.exit_code)
    evaluation = evaluate_cli_attempt(process.stdout, facts, model=settings.model, tools=tools)
    return CliAttemptResult(
        status=evaluation.status,
        reported_cost_usd=evaluation.reported_cost_usd,
        computed_cost=evaluation.computed_cost,
        setup_problems=evaluation.setup_problems,
        cost_problem=evaluation.cost_problem,
        exit_code=process.exit_code,
        wall_time_ms=process.wall_time_ms,
        fields={
            **evaluation.fields,
            "export_files": export.files,
            "export_bytes": export.bytes,
            "export_tree_sha256": export.tree_sha256,
            **isolation(settings),
        },
    )


ISOLATION_ACHIEVED: tuple[str, ...] = (
    "working directory is a fresh export of the pinned blobs only (no .git, no dotfiles, no lockfiles, "
    "no build output), files 0444 and directories 0555, removed after the attempt",
    "stdin closed; argv only, no shell",
    "environment rebuilt from an allowlist; ANTHROPIC_API_KEY never passed",
    "private TMPDIR per attempt, removed afterwards",
    "own process group, killed after the attempt (no orphaned MCP servers)",
    "user, project and local settings not loaded (--setting-sources ''); slash commands disabled",
    "tools limited to Read, Grep, Glob (plus the MCP server's read-only tools); write, shell, web and "
    "agent tools denied; permission mode dontAsk",
)
ISOLATION_NOT_ACHIEVED: tuple[str, ...] = (
    "Read accepts absolute paths: files outside the export can be read (observed with Claude Code 2.1.296)",
    "the network is not sandboxed; only the CLI's non-essential traffic is switched off",
    "whether the CLI loads CLAUDE.md or AGENTS.md found in the export is not observed",
)


def isolation(settings: CliSettings) -> dict[str, list[str]]:
    """The isolation achieved and not achieved by an attempt with ``settings``, as plain record fields."""
    achieved = list(ISOLATION_ACHIEVED)
    missing = list(ISOLATION_NOT_ACHIEVED)
    if settings.private_home:
        achieved.append("private HOME per attempt, removed afterwards")
    else:
        missing.append("HOME is the user's, where the CLI keeps its login; the CLI writes session files there")
    return {"isolation_achieved": achieved, "isolation_not_achieved": missing}
