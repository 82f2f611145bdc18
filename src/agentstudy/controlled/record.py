"""From a bounded child's facts to a recorded observation (digest 5.5, 5.6). Pure: values in, values out.

Outcome precedence for one attempt (``classify_attempt``):

1. the program could not be started → ``unavailable`` (``unavailable``);
2. the runtime bound fired → ``timed-out`` (``timeout``);
3. stdout went past its bound → ``budget-exceeded`` (``output-limit``);
4. a non-zero exit or a death by signal → ``failed`` (``non-zero-exit``);
5. stdout is not one JSON value → ``invalid-output`` (``invalid-json``);
6. otherwise ``completed``; then a completed answer that is not a valid provider object →
   ``invalid-output`` (``invalid-metrics``); then, whatever the status, reported tokens above
   the plan's ``maxTokens`` → ``budget-exceeded`` (``token-budget``).

The answer's fields are used whenever stdout parses, even after a failure (digest section 7
item 36). ``observation_payload`` records only status, exit metadata, timing, byte counts,
hashes, labelled tokens, context attribution, tool calls, latency and the answer's bounded
fields: never stdout, stderr, the request or anything of the environment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentstudy.controlled.outputs import (
    PROVIDER_LABEL,
    OutputError,
    ProviderOutput,
    parse_json_object,
    parse_provider_output,
)
from agentstudy.io.controlled_command import ChildFacts
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.controlled.config import ProviderPricing
from agentstudy.protocol.controlled.contracts import LoadedContract
from agentstudy.protocol.controlled.observation import ExecutionStatus
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1

CONTEXT_BYTES_PER_TOKEN = 4
"""The context estimate: ``ceil(contextBytes / 4)`` tokens, labelled ``estimate``."""


@dataclass(frozen=True)
class AttemptOutcome:
    """One attempt, classified: ``status``, ``error_code`` (``None`` when completed), and the answer.

    ``answer`` is the validated provider object and ``answer_document`` its JSON form (exactly
    as the provider wrote the values), both ``None`` when stdout did not hold a valid answer.
    """

    status: ExecutionStatus
    error_code: str | None
    answer: ProviderOutput | None
    answer_document: dict[str, Any] | None


@dataclass(frozen=True)
class Fallbacks:
    """Values the caller supplies for what the provider does not report (digest 5.5 request)."""

    task_outcome: str | None = None
    evidence_quality: str | None = None
    safety_outcome: str | None = None
    first_evidence_latency_ms: int | None = None
    clarification_requests: int | None = None
    rework_count: int | None = None
    measurements: dict[str, int | float] = field(default_factory=dict)


def _process_status(facts: ChildFacts) -> tuple[ExecutionStatus, str | None]:
    if facts.ended_by == "spawn-error":
        return "unavailable", "unavailable"
    if facts.ended_by == "timeout":
        return "timed-out", "timeout"
    if facts.ended_by == "output-limit":
        return "budget-exceeded", "output-limit"
    if facts.exit_code != 0:
        return "failed", "non-zero-exit"
    return "completed", None


def classify_attempt(facts: ChildFacts, *, max_tokens: int, forbidden_values: Sequence[str] = ()) -> AttemptOutcome:
    """Classify one attempt (see the module docstring for the precedence).

    Args:
        facts: what the child did.
        max_tokens: the plan's ``budget.maxTokens`` (input + output tokens).
        forbidden_values: values of the child's allowlisted variables (never to be recorded).
    """
    status, error_code = _process_status(facts)
    document: Any = None
    parsed_json = False
    if facts.ended_by != "spawn-error":
        try:
            document = parse_json_object(facts.stdout)
            parsed_json = True
        except OutputError:
            parsed_json = False
    if status == "completed" and not parsed_json:
        status, error_code = "invalid-output", "invalid-json"
    answer: ProviderOutput | None = None
    if parsed_json:
        try:
            answer = parse_provider_output(document, forbidden_values)
        except OutputError:
            answer = None
    if status == "completed" and answer is None:
        status, error_code = "invalid-output", "invalid-metrics"
    if answer is not None and (answer.input_tokens or 0) + (answer.output_tokens or 0) > max_tokens:
        status, error_code = "budget-exceeded", "token-budget"
    return AttemptOutcome(status, error_code, answer, document if answer is not None else None)


def context_attribution(context_bytes: int, context_tokens: int | None,
                        context_token_method: str | None) -> tuple[int, str]:
    """``(contextTokens, contextTokenMethod)``: the given pair, or ``(ceil(bytes / 4), "estimate")``.

    Raises:
        ValueError: tokens without a method, or a method without tokens (a request error, never
            a recorded status; digest section 7 item 33).
    """
    if (context_tokens is None) != (context_token_method is None):
        raise ValueError("contextTokens and contextTokenMethod are given together or not at all")
    if context_tokens is not None and context_token_method is not None:
        return context_tokens, context_token_method
    return math.ceil(context_bytes / CONTEXT_BYTES_PER_TOKEN), "estimate"


def _measurements(outcome: AttemptOutcome, fallbacks: Fallbacks,
                  pricing: ProviderPricing | None) -> dict[str, int | float]:
    answer, document = outcome.answer, outcome.answer_document
    stated = document.get("measurements") if document is not None else None
    values: dict[str, int | float] = dict(stated) if stated is not None else dict(fallbacks.measurements)
    if answer is not None and answer.token_method == PROVIDER_LABEL and answer.input_tokens is not None \
            and answer.output_tokens is not None:
        values["providerTokenCostUnits"] = answer.input_tokens + answer.output_tokens
    if answer is not None and pricing is not None:
        cached = (answer.measurements or {}).get("cachedInputTokens")
        cost = pricing.cost_usd(answer.input_tokens, answer.output_tokens, cached)
        if cost is not None:
            values["agentCostUsd"] = usd_number(cost)
    return values


def _execution(facts: ChildFacts, outcome: AttemptOutcome) -> dict[str, Any]:
    answer = outcome.answer
    execution: dict[str, Any] = {
        "status": outcome.status,
        "exitCode": facts.exit_code,
        "signal": facts.signal,
        "durationMs": facts.duration_ms,
        "responseBytes": len(facts.stdout),
        "stderrBytes": facts.stderr_bytes,
        "stdoutHash": facts.stdout_hash,
        "stderrHash": facts.stderr_hash,
    }
    if answer is not None:
        for key, value in (("inputTokens", answer.input_tokens), ("outputTokens", answer.output_tokens),
                           ("tokenMethod", answer.token_method), ("toolCalls", answer.tool_calls),
                           ("firstEvidenceLatencyMs", answer.first_evidence_latency_ms)):
            if value is not None:
                execution[key] = value
    if outcome.error_code is not None:
        execution["errorCode"] = outcome.error_code
    return execution


def _config_document(plan: LoadedContract[ControlledStudyRunPlanV1], key: str, config_id: str) -> dict[str, Any]:
    for item in plan.document[key]:
        if item["id"] == config_id:
            return dict(item)
    raise KeyError(config_id)


def observation_payload(*, plan: LoadedContract[ControlledStudyRunPlanV1], execution: dict[str, Any],
                        facts: ChildFacts, outcome: AttemptOutcome, context_bytes: int,
                        context_tokens: int | None = None, context_token_method: str | None = None,
                        round_id: str | None = None, fallbacks: Fallbacks | None = None,
                        pricing: ProviderPricing | None = None, observed_at: str) -> dict[str, Any]:
    """The observation document (without its hash) of the recorded attempt, adjudication ``pending``.

    ``execution`` is the task execution document (``taskId`` … ``variantId``, ``difficulty``);
    model and scenario are copied from the plan document. ``providerTokenCostUnits`` is added
    when the tokens are provider-labelled, ``agentCostUsd`` when pricing and both token counts
    exist (it replaces a provider-stated value); missing data stays missing.

    Raises:
        ValueError: as ``context_attribution``. KeyError: an execution model or scenario the
            plan does not declare.
    """
    fallbacks = fallbacks or Fallbacks()
    tokens, method = context_attribution(context_bytes, context_tokens, context_token_method)
    answer = outcome.answer
    payload: dict[str, Any] = {
        "type": "controlled-study-observation",
        "schemaVersion": 1,
        "observationVersion": "v1",
        "observedAt": observed_at,
        "runId": plan.model.run_id,
        "planHash": plan.content_hash,
        "task": dict(execution),
        "model": _config_document(plan, "models", execution["modelId"]),
        "scenario": _config_document(plan, "scenarios", execution["scenarioId"]),
        "execution": _execution(facts, outcome),
        "contextBytes": context_bytes,
        "contextTokens": tokens,
        "contextTokenMethod": method,
        "evidenceIds": list(answer.evidence_ids or []) if answer is not None else [],
    }
    if round_id is not None:
        payload["round"] = round_id
    stated = answer if answer is not None else ProviderOutput()
    for key, value, fallback in (
        ("taskOutcome", stated.task_outcome, fallbacks.task_outcome),
        ("evidenceQuality", stated.evidence_quality, fallbacks.evidence_quality),
        ("safetyOutcome", stated.safety_outcome, fallbacks.safety_outcome),
        ("firstEvidenceLatencyMs", stated.first_evidence_latency_ms, fallbacks.first_evidence_latency_ms),
        ("clarificationRequests", stated.clarification_requests, fallbacks.clarification_requests),
        ("reworkCount", stated.rework_count, fallbacks.rework_count),
    ):
        chosen = value if value is not None else fallback
        if chosen is not None:
            payload[key] = chosen
    measurements = _measurements(outcome, fallbacks, pricing)
    if measurements:
        payload["measurements"] = measurements
    payload["adjudication"] = {"status": "pending"}
    return payload
