"""The tidy table of a study: one row per attempt, the columns ``agentstudy export`` writes (issue 43 item 2).

Every column and its type is in :data:`COLUMNS` (and in docs/export.md). Values come from the report's own
reading of the ledger (``report.model.Attempt``: tokens, USD, correctness as the report counts them) and from
the observation as recorded (reason, failure kind, server calls, model). ``repository`` is the observation's
own field when it has one, else the task's repository in the study file given with ``--manifest``;
``category`` comes from that file only. No answer text unless asked for (``answer``, last).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from agentstudy.protocol.arm_names import arm_label
from agentstudy.report.observed import ObservedAttempt, ObservedStudy

ColumnType = Literal["string", "int64", "float64", "bool"]

COLUMNS: tuple[tuple[str, ColumnType, str], ...] = (
    ("study", "string", "the ledger's protocolHash (one per study)"),
    ("run", "string", "the ledger's runId (else the first 16 hex digits of its SHA-256)"),
    ("task", "string", "task id"),
    ("repository", "string", "the task's repository (the observation's, else the study file's; empty if unknown)"),
    ("category", "string", "the task's category from --manifest (empty without it)"),
    ("armId", "string", "the arm's id (the ledger's arms; the scenario id for a seed ledger)"),
    ("armLabel", "string", "the arm's label as the report names it"),
    ("scenario", "string", "repository-only (control) or doc-bridge-mcp (treatment)"),
    ("repetition", "int64", "repetition, from 1"),
    ("agent", "string", "the coding agent (claude-code, codex)"),
    ("agentVersion", "string", "the agent's version as it ran"),
    ("model", "string", "the model named for the attempt"),
    ("transport", "string", "cli or http"),
    ("status", "string", "completed, failed, timed-out, invalid-setup, budget-exceeded ..."),
    ("statusReason", "string", "why the status is what it is (runner-written, never answer text)"),
    ("failureKind", "string", "rate-limited, overloaded, server-error, network, timeout or agent"),
    ("inputTokens", "int64", "input tokens (tokens)"),
    ("outputTokens", "int64", "output tokens (tokens)"),
    ("cacheReadInputTokens", "int64", "cache-read input tokens (tokens)"),
    ("cacheCreationInputTokens", "int64", "cache-write input tokens (tokens)"),
    ("chargedUsd", "float64", "USD charged against the cap"),
    ("wallTimeMs", "int64", "wall time (ms)"),
    ("toolCalls", "int64", "tool calls of every kind"),
    ("serverCalls", "int64", "calls to the server under study (treatment record)"),
    ("serverCallErrors", "int64", "server calls whose result was an error"),
    ("correctness", "float64", "adjudicated score in [0, 1] (with --adjudication; empty otherwise)"),
    ("containment", "string", "how the attempt was confined (bwrap, restricted ...)"),
    ("position", "int64", "1-based position in the chain's schedule order"),
)
ANSWER_COLUMN: tuple[str, ColumnType, str] = ("answer", "string", "the agent's answer (only with --with-answers)")


def columns(with_answers: bool) -> tuple[tuple[str, ColumnType, str], ...]:
    """The table's ``(name, type, meaning)`` columns, the answer last when asked for."""
    return (*COLUMNS, ANSWER_COLUMN) if with_answers else COLUMNS


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _arm_ids(header: Mapping[str, Any]) -> dict[str, str]:
    arms = header.get("arms")
    return {arm["scenario"]: str(arm.get("id", arm["scenario"])) for arm in arms if isinstance(arm, dict)
            and isinstance(arm.get("scenario"), str)} if isinstance(arms, list) else {}


def tidy_row(study: ObservedStudy, item: ObservedAttempt, tasks: Mapping[str, tuple[str, str]],
             with_answers: bool) -> dict[str, Any]:
    """One attempt's row (``None`` for a value not recorded). ``tasks``: task id -> (repository, category)."""
    attempt, observation, header = item.attempt, item.observation, item.run.header
    treatment = attempt.treatment
    repository = _text(observation.get("repository")) or tasks.get(attempt.task_id, ("", ""))[0] or None
    row: dict[str, Any] = {
        "study": _text(header.get("protocolHash")),
        "run": item.run.run_id,
        "task": attempt.task_id,
        "repository": repository,
        "category": tasks.get(attempt.task_id, ("", ""))[1] or None,
        "armId": _arm_ids(header).get(attempt.scenario, attempt.scenario),
        "armLabel": arm_label(attempt.scenario, study.study.arm_labels, study.study.server_name),
        "scenario": attempt.scenario,
        "repetition": attempt.repetition,
        "agent": attempt.agent,
        "agentVersion": attempt.agent_version,
        "model": _text(observation.get("model")) or _text(header.get("model")),
        "transport": attempt.transport,
        "status": attempt.status,
        "statusReason": _text(observation.get("statusReason")),
        "failureKind": attempt.retries.failure_kind,
        "inputTokens": attempt.input_tokens,
        "outputTokens": attempt.output_tokens,
        "cacheReadInputTokens": attempt.cache_read_tokens,
        "cacheCreationInputTokens": attempt.cache_creation_tokens,
        "chargedUsd": float(attempt.charged_usd) if attempt.charged_usd is not None else None,
        "wallTimeMs": attempt.wall_time_ms,
        "toolCalls": attempt.tool_calls,
        "serverCalls": treatment.server_calls if treatment is not None else None,
        "serverCallErrors": treatment.server_call_errors if treatment is not None else None,
        "correctness": attempt.correctness,
        "containment": attempt.containment.mechanism,
        "position": item.position,
    }
    if with_answers:
        row["answer"] = _text(observation.get("answer"))
    return row


def tidy_rows(study: ObservedStudy, tasks: Mapping[str, tuple[str, str]] | None = None,
              with_answers: bool = False) -> list[dict[str, Any]]:
    """Every attempt's row, in schedule order (:func:`tidy_row`)."""
    return [tidy_row(study, item, tasks or {}, with_answers) for item in study.attempts]


__all__ = ["ANSWER_COLUMN", "COLUMNS", "ColumnType", "columns", "tidy_row", "tidy_rows"]
