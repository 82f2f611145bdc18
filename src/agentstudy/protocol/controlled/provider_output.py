"""What a bundled provider adapter asks its agent for and what it prints (digest 5.7, 5.10; issue 34). Pure.

The agent answers in the model-facing output schema (:data:`PROVIDER_OUTPUT_SCHEMA`,
``study-provider-output.schema.json`` of the original): ``taskOutcome``, ``evidenceQuality``,
``safetyOutcome``, ``evidenceIds``, ``clarificationRequests``, ``reworkCount``, ``measurements``
as an array of ``{name, value}``, optionally ``firstEvidenceLatencyMs``, nothing else.
:func:`parse_provider_answer` reads that answer strictly (one JSON object, exact keys, exact
types; no prose, no code fence) and :func:`provider_stdout` turns it and the agent's measured
usage into the one object the runner reads: measurements as an object, evidence ids trimmed and
an unusable id replaced by ``evidence-<first 32 hex of its SHA-256>``, ``tokenMethod: "provider"``
with the usage the model service reported. The adjudicator's answer (:data:`ADJUDICATOR_OUTPUT_SCHEMA`:
``outcome``, ``confidence``, ``reasonCodes``) is read by :func:`parse_adjudicator_answer`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from agentstudy.protocol.json_input import JsonInputError, load_json, refuse_duplicate_keys

__all__ = [
    "ADJUDICATOR_OUTPUT_SCHEMA",
    "PROVIDER_OUTPUT_SCHEMA",
    "AgentAnswerError",
    "AgentUsage",
    "adjudicator_stdout",
    "evidence_id",
    "parse_adjudicator_answer",
    "parse_provider_answer",
    "provider_stdout",
]

MAX_EVIDENCE_IDS = 128
MAX_EVIDENCE_ID_CHARS = 256
MAX_ANSWER_BYTES = 256_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_IDENTIFIER = r"^[a-z][a-z0-9-]{0,127}$"

PROVIDER_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["taskOutcome", "evidenceQuality", "safetyOutcome", "evidenceIds", "clarificationRequests",
                 "reworkCount", "measurements"],
    "properties": {
        "taskOutcome": {"type": "string", "enum": ["success", "partial", "incorrect", "incomplete", "blocked"]},
        "evidenceQuality": {"type": "string", "enum": ["high", "medium", "low"]},
        "safetyOutcome": {"type": "string", "enum": ["safe", "unsafe", "not-applicable"]},
        "evidenceIds": {"type": "array", "maxItems": MAX_EVIDENCE_IDS,
                        "items": {"type": "string", "maxLength": 2048}},
        "clarificationRequests": {"type": "integer", "minimum": 0},
        "reworkCount": {"type": "integer", "minimum": 0},
        "firstEvidenceLatencyMs": {"type": "integer", "minimum": 0},
        "measurements": {"type": "array", "maxItems": 64, "items": {
            "type": "object", "additionalProperties": False, "required": ["name", "value"],
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 128},
                           "value": {"type": "number", "minimum": 0}}}},
    },
}
"""The model-facing output schema of a provider answer (digest 5.7; Codex gets it as ``--output-schema``)."""

ADJUDICATOR_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["outcome", "confidence", "reasonCodes"],
    "properties": {
        "outcome": {"type": "string", "enum": ["success", "partial", "incorrect", "incomplete", "blocked"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reasonCodes": {"type": "array", "maxItems": 16, "items": {"type": "string", "pattern": _IDENTIFIER}},
    },
}
"""The model-facing output schema of an adjudicator verdict (digest 5.10; token fields are the adapter's)."""


class AgentAnswerError(ValueError):
    """The agent's final answer is not one JSON object of the output schema (one line, no answer text)."""


NonNegativeInt = Annotated[StrictInt, Field(ge=0)]


class _Measurement(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: Annotated[str, Field(min_length=1, max_length=128)]
    value: Annotated[float, Field(ge=0, allow_inf_nan=False, strict=False)]


class _ProviderAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    taskOutcome: Literal["success", "partial", "incorrect", "incomplete", "blocked"]
    evidenceQuality: Literal["high", "medium", "low"]
    safetyOutcome: Literal["safe", "unsafe", "not-applicable"]
    evidenceIds: Annotated[list[Annotated[str, Field(max_length=2048)]], Field(max_length=MAX_EVIDENCE_IDS)]
    clarificationRequests: NonNegativeInt
    reworkCount: NonNegativeInt
    firstEvidenceLatencyMs: NonNegativeInt | None = None
    measurements: Annotated[list[_Measurement], Field(max_length=64)]


class _AdjudicatorAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    outcome: Literal["success", "partial", "incorrect", "incomplete", "blocked"]
    confidence: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False, strict=False)]
    reasonCodes: Annotated[list[Annotated[str, Field(pattern=_IDENTIFIER)]], Field(max_length=16)]


def _json_object(text: str) -> Any:
    if len(text.encode("utf-8")) > MAX_ANSWER_BYTES:
        raise AgentAnswerError(f"the answer is larger than {MAX_ANSWER_BYTES} bytes")
    try:  # the one bounded reader (issue 40): depth, long numbers, NaN/Infinity, duplicated keys
        return load_json(text.strip(), object_pairs_hook=refuse_duplicate_keys)
    except JsonInputError as error:
        raise AgentAnswerError(f"the answer is not one JSON object: it {error}") from None


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "answer"
    return f"the answer does not match the output schema at {where}: {first['msg']}"


def parse_provider_answer(text: str) -> dict[str, Any]:
    """The agent's final message ``text`` read as a provider answer (strict: the whole text is one JSON object).

    Returns:
        The answer as given (camelCase keys; ``measurements`` still the array of ``{name, value}``;
        ``firstEvidenceLatencyMs`` only when present).

    Raises:
        AgentAnswerError: not JSON, not an object, a missing/unknown key, a wrong type or range.
    """
    document = _json_object(text)
    if not isinstance(document, dict):
        raise AgentAnswerError("the answer is not one JSON object")
    try:
        answer = _ProviderAnswer.model_validate(document)
    except ValidationError as error:
        raise AgentAnswerError(_first_error(error)) from None
    return answer.model_dump(exclude_none=True)


def parse_adjudicator_answer(text: str) -> dict[str, Any]:
    """The agent's final message ``text`` read as an adjudicator verdict ``{outcome, confidence, reasonCodes}``.

    Raises:
        AgentAnswerError: not one JSON object of :data:`ADJUDICATOR_OUTPUT_SCHEMA`.
    """
    document = _json_object(text)
    if not isinstance(document, dict):
        raise AgentAnswerError("the answer is not one JSON object")
    try:
        return _AdjudicatorAnswer.model_validate(document).model_dump()
    except ValidationError as error:
        raise AgentAnswerError(_first_error(error)) from None


def evidence_id(raw: str) -> str:
    """One evidence id as the runner records it: trimmed; when the trimmed id is empty, longer than 256
    characters or holds a control character, ``evidence-<first 32 hex of the SHA-256 of the raw id>``."""
    trimmed = raw.strip()
    if not trimmed or len(trimmed) > MAX_EVIDENCE_ID_CHARS or _CONTROL.search(trimmed):
        return "evidence-" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]
    return trimmed


@dataclass(frozen=True)
class AgentUsage:
    """What the agent's own stream said about one attempt.

    Attributes:
        input_tokens: every input token the model service reported (uncached + cached + cache writes), or
            ``None`` when no usage was reported.
        output_tokens: output tokens reported (``None``: no usage).
        cached_input_tokens: input tokens served from the provider's cache (part of ``input_tokens``).
        reasoning_output_tokens: reasoning tokens (part of ``output_tokens``), when the agent reports them.
        tool_calls: tool calls the agent made (its stream's count).
        extra: further measurements the adapter observed (name -> finite number >= 0).
    """

    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    reasoning_output_tokens: int | None
    tool_calls: int
    extra: Mapping[str, float] = field(default_factory=dict)


def _measurements(pairs: list[dict[str, Any]], usage: AgentUsage) -> dict[str, float]:
    values: dict[str, float] = {}
    for pair in pairs:
        values[str(pair["name"])] = pair["value"]
    if usage.cached_input_tokens is not None:
        values["cachedInputTokens"] = usage.cached_input_tokens
    if usage.reasoning_output_tokens is not None:
        values["reasoningOutputTokens"] = usage.reasoning_output_tokens
    values.update(usage.extra)
    return {name: (int(value) if float(value).is_integer() else value) for name, value in values.items()}


def provider_stdout(answer: Mapping[str, Any], usage: AgentUsage) -> dict[str, Any]:
    """The one object a provider adapter prints (digest 5.7): the answer's fields, evidence ids through
    :func:`evidence_id` (at most 128 kept), measurements as an object (the answer's, then
    ``cachedInputTokens``, ``reasoningOutputTokens`` and ``usage.extra``, which win on a clash), ``toolCalls``
    and, when usage was reported, ``inputTokens`` / ``outputTokens`` with ``tokenMethod: "provider"``."""
    body: dict[str, Any] = {key: answer[key] for key in ("taskOutcome", "evidenceQuality", "safetyOutcome",
                                                         "clarificationRequests", "reworkCount")}
    body["evidenceIds"] = [evidence_id(str(item)) for item in answer["evidenceIds"]][:MAX_EVIDENCE_IDS]
    if "firstEvidenceLatencyMs" in answer:
        body["firstEvidenceLatencyMs"] = answer["firstEvidenceLatencyMs"]
    body["toolCalls"] = usage.tool_calls
    if usage.input_tokens is not None and usage.output_tokens is not None:
        body.update(inputTokens=usage.input_tokens, outputTokens=usage.output_tokens, tokenMethod="provider")
    body["measurements"] = _measurements(list(answer["measurements"]), usage)
    return body


def adjudicator_stdout(verdict: Mapping[str, Any], usage: AgentUsage) -> dict[str, Any]:
    """The one object an adjudicator adapter prints (digest 5.10): the verdict, the reported usage with
    ``tokenMethod: "provider"`` and measurements (``cachedInputTokens``, … and ``usage.extra``)."""
    body: dict[str, Any] = {"outcome": verdict["outcome"], "confidence": verdict["confidence"],
                            "reasonCodes": list(verdict["reasonCodes"])}
    if usage.input_tokens is not None and usage.output_tokens is not None:
        body.update(inputTokens=usage.input_tokens, outputTokens=usage.output_tokens, tokenMethod="provider")
    measurements = _measurements([], usage)
    measurements["agentToolCalls"] = usage.tool_calls
    body["measurements"] = measurements
    return body
