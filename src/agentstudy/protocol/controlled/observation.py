"""``ControlledStudyObservationV1``: one recorded attempt of the controlled study (seed 004; digest 5.6).

An observation keeps model, scenario, task, variant, replicate, plan and run provenance with
the bounded execution facts (status, exit, timing, byte counts, hashes, labelled token
counts, tool calls) and the adjudication state. It never holds raw stdout, stderr, prompts,
repository content or credentials: the model has no field for them.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from agentstudy.protocol.controlled.formats import (
    Category,
    ContentHashAlgo,
    ContractModel,
    Difficulty,
    EvidenceId,
    EvidenceQuality,
    Hash,
    Identifier,
    JsonInt,
    MeasurementName,
    NonNegativeInt,
    NonNegativeNumber,
    Reference,
    SafeText,
    SafetyOutcome,
    ScenarioId,
    SchemaVersion,
    TaskOutcome,
    TokenMethod,
)
from agentstudy.protocol.controlled.plan import ModelConfig, ScenarioConfig

ExecutionStatus = Literal["completed", "failed", "timed-out", "unavailable", "invalid-output", "budget-exceeded"]
EXECUTION_STATUSES: tuple[ExecutionStatus, ...] = (
    "completed", "failed", "timed-out", "unavailable", "invalid-output", "budget-exceeded",
)
AdjudicationStatus = Literal["pending", "automated", "human-approved", "human-rejected"]
ADJUDICATION_STATUSES: tuple[AdjudicationStatus, ...] = ("pending", "automated", "human-approved", "human-rejected")

_ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$")


def _iso_datetime(value: str) -> str:
    """An ISO-8601 UTC timestamp with ``Z`` (zod's ``datetime()``), checked against the calendar."""
    if not _ISO_UTC.fullmatch(value):
        raise ValueError("must be an ISO-8601 UTC timestamp such as 2026-08-31T13:44:22.523Z")
    try:
        datetime.fromisoformat(value[:19])
    except ValueError:
        raise ValueError("is not a real date and time") from None
    return value


IsoDateTime = Annotated[str, AfterValidator(_iso_datetime)]
Measurements = dict[MeasurementName, NonNegativeNumber]
"""Named measurements: finite numbers ≥ 0. Unknown names are kept, never interpreted here."""


class TaskExecution(ContractModel):
    """Which execution an observation records (digest 5.6 ``task``).

    Its identity for resume and upsert is ``(taskId, scenarioId, modelId, replicate)``.
    """

    task_id: Identifier
    repository_id: Identifier
    category: Category
    scenario_id: ScenarioId
    model_id: Identifier
    replicate: NonNegativeInt
    variant_id: Identifier
    difficulty: Difficulty | None = None

    @property
    def identity(self) -> tuple[str, str, str, int]:
        """``(taskId, scenarioId, modelId, replicate)``: what makes two executions the same."""
        return (self.task_id, self.scenario_id, self.model_id, self.replicate)


class ExecutionResult(ContractModel):
    """How the child process ended (digest 5.6 ``execution``).

    ``exitCode`` and ``signal`` are required and may be ``null``; durations are milliseconds,
    sizes bytes; ``stdoutHash``/``stderrHash`` are SHA-256 hex. Token counts require a
    ``tokenMethod`` (``provider`` or ``estimate``).
    """

    nullable_fields: ClassVar[frozenset[str]] = frozenset({"exitCode", "signal"})

    status: ExecutionStatus
    exit_code: JsonInt | None
    signal: str | None
    duration_ms: NonNegativeInt
    response_bytes: NonNegativeInt
    stderr_bytes: NonNegativeInt
    stdout_hash: Hash | None = None
    stderr_hash: Hash | None = None
    input_tokens: NonNegativeInt | None = None
    output_tokens: NonNegativeInt | None = None
    token_method: TokenMethod | None = None
    tool_calls: NonNegativeInt | None = None
    first_evidence_latency_ms: NonNegativeInt | None = None
    error_code: Identifier | None = None

    @model_validator(mode="after")
    def _tokens_need_a_method(self) -> ExecutionResult:
        if (self.input_tokens is not None or self.output_tokens is not None) and self.token_method is None:
            raise ValueError("tokenMethod: inputTokens/outputTokens require a tokenMethod (provider or estimate)")
        return self


class Adjudication(ContractModel):
    """Adjudication state (digest 5.6 ``adjudication``); ``automated`` requires actor, method and outcome.

    ``confidence`` is 0–1; ``reasonCodes`` at most 16 identifiers; ``reason`` is safe text.
    """

    status: AdjudicationStatus
    actor: Identifier | None = None
    method: Reference | None = None
    outcome: TaskOutcome | None = None
    confidence: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    reason_codes: Annotated[list[Identifier], Field(max_length=16)] | None = None
    token_method: TokenMethod | None = None
    configuration_hash: Hash | None = None
    reason: SafeText | None = None

    @model_validator(mode="after")
    def _automated_is_complete(self) -> Adjudication:
        if self.status == "automated" and (self.actor is None or self.method is None or self.outcome is None):
            raise ValueError("actor, method, outcome: an automated adjudication names all three")
        return self


class ControlledStudyObservationV1(ContractModel):
    """One observation (``type: controlled-study-observation``, digest 5.6).

    Rules: ``task.modelId == model.id`` and ``task.scenarioId == scenario.id`` (the original
    checks this when it creates an observation; we also check it on parse — every
    observation of the original ledger satisfies it); ``contextTokens`` requires
    ``contextTokenMethod``; execution token counts require ``execution.tokenMethod``;
    ``evidenceIds`` at most 128. ``model`` and ``scenario`` are copies of the plan's configs.
    """

    contract_type: ClassVar[str] = "controlled-study-observation"

    type: Literal["controlled-study-observation"]
    schema_version: SchemaVersion
    observation_version: Reference
    observed_at: IsoDateTime
    run_id: Reference
    plan_hash: Hash
    task: TaskExecution
    model: ModelConfig
    scenario: ScenarioConfig
    execution: ExecutionResult
    context_bytes: NonNegativeInt
    context_tokens: NonNegativeInt | None = None
    context_token_method: TokenMethod | None = None
    evidence_ids: Annotated[list[EvidenceId], Field(max_length=128)]
    round: Reference | None = None
    task_outcome: TaskOutcome | None = None
    evidence_quality: EvidenceQuality | None = None
    safety_outcome: SafetyOutcome | None = None
    first_evidence_latency_ms: NonNegativeInt | None = None
    clarification_requests: NonNegativeInt | None = None
    rework_count: NonNegativeInt | None = None
    measurements: Measurements | None = None
    adjudication: Adjudication
    content_hash: Hash
    content_hash_algo: ContentHashAlgo

    @model_validator(mode="after")
    def _consistent(self) -> ControlledStudyObservationV1:
        if self.context_tokens is not None and self.context_token_method is None:
            raise ValueError("contextTokenMethod: contextTokens require a contextTokenMethod (provider or estimate)")
        if self.task.model_id != self.model.id:
            raise ValueError(f"task.modelId: {self.task.model_id!r} does not match model.id {self.model.id!r}")
        if self.task.scenario_id != self.scenario.id:
            raise ValueError(f"task.scenarioId: {self.task.scenario_id!r} does not match scenario.id "
                             f"{self.scenario.id!r}")
        return self

