"""What a provider or adjudicator child answers on stdout, parsed (digest 5.5 "Metrics parse", 5.10).

Pure. The provider's answer is parsed leniently (unknown keys ignored, as the contract says),
the adjudicator's strictly (unknown keys rejected). Both are one JSON object; the JSON text is
read strictly (UTF-8, no duplicated keys, no ``NaN``). Ours, beyond the original:

- token counts without a ``tokenMethod`` are invalid (the observation contract requires the
  label; the original would have crashed creating the observation);
- provider-chosen strings that are persisted — evidence ids and measurement names — must be
  safe study text (no paths under a home or temp folder, URLs, ``token:``/``password=``-style
  material or key blocks) and must not contain the value of any variable the child was
  given through its allowlist (credentials must be named there). A violation makes the
  answer invalid rather than letting a credential into the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import ConfigDict, Field, ValidationError, model_validator

from agentstudy.protocol.controlled.formats import (
    ContractModel,
    EvidenceId,
    EvidenceQuality,
    Identifier,
    MeasurementName,
    NonNegativeInt,
    NonNegativeNumber,
    SafetyOutcome,
    TaskOutcome,
    TokenMethod,
    is_safe_study_text,
)
from agentstudy.protocol.controlled.hashing import JsonDocumentError, parse_json_text

PROVIDER_LABEL = "provider"
"""The ``tokenMethod`` of usage the model service itself reported (the other label is ``estimate``)."""
MIN_GUARDED_VALUE_LENGTH = 8
"""Allowlisted values shorter than this are not searched for (``1``, ``en`` would match anything)."""


class OutputError(ValueError):
    """A child's stdout is not JSON (``invalid-json``) or not the expected object (``invalid-metrics``)."""


class _Tokens(ContractModel):
    """Token counts and their label; counts require a label."""

    input_tokens: NonNegativeInt | None = None
    output_tokens: NonNegativeInt | None = None
    token_method: TokenMethod | None = None
    measurements: dict[MeasurementName, NonNegativeNumber] | None = None

    @model_validator(mode="after")
    def _tokens_need_a_method(self) -> _Tokens:
        if (self.input_tokens is not None or self.output_tokens is not None) and self.token_method is None:
            raise ValueError("tokenMethod: inputTokens/outputTokens require a tokenMethod (provider or estimate)")
        return self


class ProviderOutput(_Tokens):
    """A provider's answer (digest 5.7 process contract, stdout); unknown keys are ignored.

    Counts are non-negative integers (``toolCalls``, ``clarificationRequests``,
    ``reworkCount``, ``firstEvidenceLatencyMs`` in milliseconds); ``evidenceIds`` at most 128;
    ``measurements`` maps a 1–128 character name to a finite number ≥ 0.
    """

    model_config = ConfigDict(extra="ignore")

    task_outcome: TaskOutcome | None = None
    evidence_quality: EvidenceQuality | None = None
    safety_outcome: SafetyOutcome | None = None
    evidence_ids: Annotated[list[EvidenceId], Field(max_length=128)] | None = None
    clarification_requests: NonNegativeInt | None = None
    rework_count: NonNegativeInt | None = None
    tool_calls: NonNegativeInt | None = None
    first_evidence_latency_ms: NonNegativeInt | None = None


class AdjudicatorOutput(_Tokens):
    """An independent adjudicator's verdict (digest 5.10 output schema); unknown keys are rejected.

    ``outcome`` one of the five task outcomes, ``confidence`` 0–1, ``reasonCodes`` at most 16
    identifiers; optional token counts (with their label) and measurements.
    """

    outcome: TaskOutcome
    confidence: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    reason_codes: Annotated[list[Identifier], Field(max_length=16)]


def parse_json_object(stdout: bytes) -> Any:
    """Parse a child's stdout as one strict JSON value (any type).

    Raises:
        OutputError: invalid UTF-8, not JSON, a duplicated key, a non-finite number, or nesting
            too deep to parse.
    """
    try:
        return parse_json_text(stdout.decode("utf-8"))
    except (UnicodeDecodeError, JsonDocumentError, RecursionError) as error:
        raise OutputError(f"not one JSON value: {error.__class__.__name__}") from None


def _guard(strings: Sequence[str], forbidden_values: Sequence[str], what: str) -> None:
    guarded = [value for value in forbidden_values if len(value) >= MIN_GUARDED_VALUE_LENGTH]
    for text in strings:
        if not is_safe_study_text(text):
            raise OutputError(f"{what}: a value looks like a path, URL or credential")
        if any(value in text for value in guarded):
            raise OutputError(f"{what}: a value contains an allowlisted environment value")


def _validated(model: type[_Tokens], document: Any, forbidden_values: Sequence[str]) -> Any:
    if not isinstance(document, dict):
        raise OutputError("the answer is not a JSON object")
    try:
        parsed = model.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "answer"
        raise OutputError(f"{where}: {first['type']}") from None
    _guard(list(parsed.measurements or {}), forbidden_values, "measurements")
    return parsed


def parse_provider_output(document: Any, forbidden_values: Sequence[str] = ()) -> ProviderOutput:
    """Validate a provider's parsed answer (lenient: unknown keys ignored).

    ``forbidden_values`` are the values of the child's allowlisted variables.

    Raises:
        OutputError: a field with the wrong type or range, tokens without a label, or an
            unsafe evidence id or measurement name (the message names the field, never the value).
    """
    parsed: ProviderOutput = _validated(ProviderOutput, document, forbidden_values)
    _guard(parsed.evidence_ids or [], forbidden_values, "evidenceIds")
    return parsed


def parse_adjudicator_output(document: Any, forbidden_values: Sequence[str] = ()) -> AdjudicatorOutput:
    """Validate an adjudicator's parsed verdict (strict: unknown keys rejected).

    Raises:
        OutputError: as ``parse_provider_output``.
    """
    parsed: AdjudicatorOutput = _validated(AdjudicatorOutput, document, forbidden_values)
    return parsed
