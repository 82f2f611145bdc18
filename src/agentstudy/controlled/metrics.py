"""The metric set of one group of observations (digest 5.11 ``calculateStudyMetrics``, per group). Pure.

Rates are shares in [0, 1] over the observations that carry the value (missing values leave
the denominator, they are never counted as zero); ``completedRate`` and ``successRate``
come with a Wilson 95 % interval (z = 1.96). P95 is the sorted value at index
``min(n − 1, ceil(0.95 n) − 1)``, 0 for no values. Token sums are split by label
(``providerTokens``, ``estimatedTokens``); USD sums are exact (``agentstudy.pricing.study_costs``)
and ``totalCostUsd`` exists only when both parts do. ``missingMetrics`` names what no
observation reported, with ``-partial`` where only some did.

Two readings, stated because they differ from the original: ``successRate`` is the
providers' *self-reported* ``taskOutcome`` (as the original computes it), while the
correct-answer figures (``tokensToCorrectAnswerP95``, ``timeToCorrectAnswerP95Ms``) count an
answer as correct only when its adjudication (``automated`` or ``human-approved``) says
``success`` — a provider's own claim never makes its answer correct (seed 004). The original
used the self-reported outcome there too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from agentstudy.controlled.outputs import PROVIDER_LABEL
from agentstudy.pricing.study_costs import sum_usd, total_usd
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1

Obs = ControlledStudyObservationV1
Z95 = 1.96
MEAN_RATE_MEASUREMENTS = (
    "searchHitRate", "errorRate", "documentationExampleRate", "documentationFreshnessRate",
    "documentationCorrectnessRate", "documentationCompletenessRate", "documentationClarityRate",
    "documentationMaintainabilityRate",
)
_MISSING_MEASUREMENTS = (*MEAN_RATE_MEASUREMENTS, "documentationFindingCount", "analysisCostUsd", "agentCostUsd")
_APPROVING = frozenset({"automated", "human-approved"})


def ratio(part: float, whole: float) -> float:
    """``part / whole``, 0 when ``whole`` is 0."""
    return 0 if whole == 0 else part / whole


def percentile95(values: Sequence[float]) -> float:
    """The nearest-rank 95th percentile: sorted value at ``min(n − 1, ceil(0.95 n) − 1)``; 0 when empty."""
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(len(ordered) * 0.95) - 1)]


def wilson95(successes: int, total: int) -> dict[str, float]:
    """The Wilson score 95 % interval ``{low, high}`` of ``successes / total``; ``{0, 0}`` when ``total`` is 0.

    The bounds are exactly 0 with no success and exactly 1 with no failure (the formula's
    floating-point result there is off by ~1e-17, which the original reported as is).
    """
    if total == 0:
        return {"low": 0, "high": 0}
    p = successes / total
    denominator = 1 + (Z95 * Z95) / total
    center = (p + (Z95 * Z95) / (2 * total)) / denominator
    margin = (Z95 / denominator) * math.sqrt((p * (1 - p) / total) + (Z95 * Z95) / (4 * total * total))
    low = 0 if successes == 0 else max(0, center - margin)
    high = 1 if successes == total else min(1, center + margin)
    return {"low": low, "high": high}


def _known(values: Sequence[float | None]) -> list[float]:
    return [value for value in values if value is not None]


def _sum_known(values: Sequence[float | None]) -> float | None:
    known = _known(values)
    return sum(known) if known else None


def _rate_positive(values: Sequence[float | None]) -> float | None:
    known = _known(values)
    return ratio(sum(1 for value in known if value > 0), len(known)) if known else None


def _measured(observations: Sequence[Obs], name: str) -> list[float]:
    return [item.measurements[name] for item in observations if item.measurements and name in item.measurements]


def _mean(observations: Sequence[Obs], name: str) -> float | None:
    values = _measured(observations, name)
    return sum(values) / len(values) if values else None


def _acceptance_rate(observations: Sequence[Obs]) -> float | None:
    pairs = [(item.measurements["acceptanceChecksPassed"], item.measurements["acceptanceChecksTotal"])
             for item in observations if item.measurements and "acceptanceChecksPassed" in item.measurements
             and item.measurements.get("acceptanceChecksTotal", 0) > 0]
    return sum(p for p, _ in pairs) / sum(t for _, t in pairs) if pairs else None


def _tokens(item: Obs, method: str | None) -> int | None:
    execution = item.execution
    if execution.input_tokens is None or execution.output_tokens is None:
        return None
    if method is not None and execution.token_method != method:
        return None
    return execution.input_tokens + execution.output_tokens


def is_correct(item: Obs) -> bool:
    """Whether the observation's adjudication approves it as ``success`` (see the module docstring)."""
    return item.adjudication.status in _APPROVING and item.adjudication.outcome == "success"


def _missing(name: str, values: Sequence[Any], out: list[str]) -> None:
    known = sum(1 for value in values if value is not None)
    if known == 0:
        out.append(name)
    elif known < len(values):
        out.append(f"{name}-partial")


def _usd(observations: Sequence[Obs], name: str) -> Any:
    return sum_usd(_measured(observations, name))


def metric_set(observations: Sequence[Obs]) -> dict[str, Any]:
    """The metrics of one group (digest 5.11 field list, in the original's order); JSON values."""
    count = len(observations)
    completed = sum(1 for item in observations if item.execution.status == "completed")
    outcomes = [item for item in observations if item.task_outcome is not None]
    successes = sum(1 for item in outcomes if item.task_outcome == "success")
    judged = [item for item in observations if item.adjudication.outcome is not None]
    quality = [item for item in observations if item.evidence_quality is not None]
    provider_tokens = [_tokens(item, PROVIDER_LABEL) for item in observations]
    estimated_tokens = [_tokens(item, "estimate") for item in observations]
    tools = [item.execution.tool_calls for item in observations]
    clarifications = [item.clarification_requests for item in observations]
    rework = [item.rework_count for item in observations]
    correct = [item for item in observations if is_correct(item)]
    correct_tokens = _known([_tokens(item, None) for item in correct])
    safety = [1 if item.safety_outcome == "safe" else 0 if item.safety_outcome == "unsafe" else None
              for item in observations]
    analysis, agent = _usd(observations, "analysisCostUsd"), _usd(observations, "agentCostUsd")
    units = _sum_known(_measured(observations, "providerTokenCostUnits"))
    missing: list[str] = []
    _missing("providerTokens", provider_tokens, missing)
    _missing("estimatedTokens", estimated_tokens, missing)
    if not outcomes:
        missing.append("taskOutcome")
    if not quality:
        missing.append("evidenceQuality")
    _missing("clarificationRequests", clarifications, missing)
    _missing("reworkCount", rework, missing)
    missing.extend(name for name in _MISSING_MEASUREMENTS if not _measured(observations, name))
    if _acceptance_rate(observations) is None:
        missing.append("acceptanceChecks")
    _missing("safetyOutcome", safety, missing)
    _missing("toolCalls", tools, missing)
    if units is None:
        missing.append("providerTokenCostUnits")
    elif any(item.execution.token_method == PROVIDER_LABEL and "providerTokenCostUnits" not in (item.measurements or {})
             for item in observations):
        missing.append("providerTokenCostUnits-partial")
    known_tools = _known(tools)
    total = total_usd(analysis, agent)
    metrics: dict[str, Any] = {
        "observationCount": count,
        "completedRate": ratio(completed, count),
        "completedConfidence95": wilson95(completed, count),
        "adjudicatedRate": ratio(sum(1 for item in observations if item.adjudication.status != "pending"), count),
        "successRate": ratio(successes, len(outcomes)) if outcomes else None,
        "successConfidence95": wilson95(successes, len(outcomes)) if outcomes else None,
        "evidenceCitationRate": ratio(sum(1 for item in observations if item.evidence_ids), count),
        "evidenceQualityRate": ratio(sum(1 for item in quality if item.evidence_quality == "high"), len(quality))
        if quality else None,
        "searchHitRate": _mean(observations, "searchHitRate"),
        "acceptanceCheckRate": _acceptance_rate(observations),
        "errorRate": _mean(observations, "errorRate"),
        "safetyRate": _rate_positive(safety),
        "adjudicatedSuccessRate": ratio(sum(1 for item in judged if item.adjudication.outcome == "success"),
                                        len(judged)) if judged else None,
        "documentationFindingCount": _sum_known(_measured(observations, "documentationFindingCount")),
    }
    for name in MEAN_RATE_MEASUREMENTS[2:]:
        metrics[name] = _mean(observations, name)
    metrics.update({
        "providerTokens": _sum_known(provider_tokens),
        "estimatedTokens": _sum_known(estimated_tokens),
        "tokensToCorrectAnswerP95": percentile95(correct_tokens) if correct_tokens else None,
        "latencyP95Ms": percentile95([item.execution.duration_ms for item in observations]),
        "timeToCorrectAnswerP95Ms": percentile95([item.execution.duration_ms for item in correct]) if correct else None,
        "contextBytesP95": percentile95([item.context_bytes for item in observations]),
        "responseBytesP95": percentile95([item.execution.response_bytes for item in observations]),
        "averageToolCalls": ratio(sum(known_tools), len(known_tools)) if known_tools else None,
        "clarificationRate": _rate_positive(clarifications),
        "reworkRate": _rate_positive(rework),
        "analysisCostUsd": None if analysis is None else usd_number(analysis),
        "agentCostUsd": None if agent is None else usd_number(agent),
        "totalCostUsd": None if total is None else usd_number(total),
        "providerTokenCostUnits": units,
        "missingMetrics": missing,
    })
    return metrics


def empty_metric_set() -> dict[str, Any]:
    """The metric set of no observations (every rate 0 or missing)."""
    return metric_set([])

