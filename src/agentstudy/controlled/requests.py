"""The stdin documents of the provider and the adjudicator (digest 5.7 process contract, 5.10). Pure.

Both are compact JSON written as JavaScript's ``JSON.stringify`` writes it (so byte counts and
``contextBytes`` match the original's). Neither holds a path, raw output, prompt of another
process or credential: the provider request carries the task as the suite states it (the
child's working directory is the repository root, never named); the adjudicator request carries
the task and a bounded, anonymised candidate record — no repository, no stdout, no run id.
"""

from __future__ import annotations

from typing import Any

from agentstudy.protocol.controlled.hashing import js_json
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1

PROVIDER_PROTOCOL = "doc-bridge.study-provider.v1"
ADJUDICATOR_PROTOCOL = "doc-bridge.study-adjudicator.v1"
OUTCOMES = ("success", "partial", "incorrect", "incomplete", "blocked")

CANONICAL_MEASUREMENTS = (
    "searchHitRate", "acceptanceChecksPassed", "acceptanceChecksTotal", "acceptanceChecksExecuted",
    "entrypointEvidenceCount", "ownershipEvidenceCount", "architectureRelationCount",
    "documentationClaimEvidenceCount", "sourceComparisonEvidenceCount", "verificationEvidenceCount", "errorRate",
    "documentationFindingCount", "documentationExampleRate", "documentationFreshnessRate",
    "documentationCorrectnessRate", "documentationCompletenessRate", "documentationClarityRate",
    "documentationMaintainabilityRate", "timeToFirstEvidenceMs", "analysisCostUsd", "agentCostUsd",
)
"""Measurement names the provider is asked to use when it observes them (digest 5.11)."""

PROVIDER_INSTRUCTION = (
    "Answer with exactly one JSON object on stdout and nothing else; write any log to stderr. Required keys: "
    "taskOutcome, evidenceQuality, safetyOutcome, evidenceIds, clarificationRequests, reworkCount, measurements. "
    "measurements is an object mapping a measurement name to a number of zero or more. Run every listed "
    "acceptance check the repository allows and report acceptanceChecksPassed, acceptanceChecksTotal and "
    "acceptanceChecksExecuted as observed; a check that could not run counts as not passed. Report "
    "inputTokens, outputTokens and tokenMethod (provider when the model service reported the usage, estimate "
    "otherwise), toolCalls, and firstEvidenceLatencyMs only when observed. Prefer these measurement names when "
    "observed: " + ", ".join(CANONICAL_MEASUREMENTS) + ". Leave out what you could not establish; never invent "
    "a value."
)
"""The fixed ``response`` text of every provider request (our wording of the contract's instruction)."""

ADJUDICATOR_INSTRUCTION = (
    "Judge only the bounded candidate record below against the rubric items given. Items listed under "
    "mechanical were already decided by a check and are not yours to decide again. Use evidenceCoverage and "
    "acceptanceExecution to tell missing evidence from checks that never ran, and do not assume evidence that "
    "is not listed. Answer with one JSON object: outcome, confidence, reasonCodes, and optionally inputTokens, "
    "outputTokens, tokenMethod and measurements; no prose."
)
"""The fixed ``instruction`` text of every adjudicator request."""


def provider_request(task: dict[str, Any], execution: dict[str, Any]) -> dict[str, Any]:
    """The provider's stdin document for one execution.

    Args:
        task: the suite's task document (camelCase, as in the suite file).
        execution: the execution document (``taskId`` … ``variantId``, plus ``difficulty``).

    Returns:
        ``{protocol, response, task, objective, initialContext, expectedOutcome,
        evidenceRequirements, acceptanceChecks, allowedTools, forbiddenActions}`` in that order.
    """
    return {
        "protocol": PROVIDER_PROTOCOL,
        "response": PROVIDER_INSTRUCTION,
        "task": execution,
        "objective": task["objective"],
        "initialContext": task["initialContext"],
        "expectedOutcome": task["expectedOutcome"],
        "evidenceRequirements": task["evidenceRequirements"],
        "acceptanceChecks": task["acceptanceChecks"],
        "allowedTools": task["allowedTools"],
        "forbiddenActions": task["forbiddenActions"],
    }


def request_bytes(document: dict[str, Any]) -> bytes:
    """A request document as the UTF-8 bytes written to stdin (compact ``JSON.stringify`` form)."""
    return js_json(document).encode("utf-8")


def adjudicator_request(task: dict[str, Any], observation: ControlledStudyObservationV1,
                        measurements: dict[str, Any] | None) -> dict[str, Any]:
    """The adjudicator's stdin document for one observation (digest 5.10).

    Args:
        task: the suite's task document.
        observation: the observation judged (only bounded fields are read).
        measurements: the observation document's ``measurements`` (JSON values as stored), or ``None``.

    Returns:
        ``{protocol, instruction, task: {id, category, difficulty, objective, expectedOutcome,
        evidenceRequirements, acceptanceChecks, rubric, mechanical}, candidate: {…}}``. v1
        rubric items are plain text, so every item goes to ``rubric`` and ``mechanical`` is empty.
        No run id, repository, path, stdout, prompt or credential is included.
    """
    present = set(observation.evidence_ids)
    values = measurements or {}
    passed, total = values.get("acceptanceChecksPassed"), values.get("acceptanceChecksTotal")
    executed = values.get("acceptanceChecksExecuted")
    return {
        "protocol": ADJUDICATOR_PROTOCOL,
        "instruction": ADJUDICATOR_INSTRUCTION,
        "task": {
            "id": task["id"],
            "category": task["category"],
            "difficulty": task["difficulty"],
            "objective": task["objective"],
            "expectedOutcome": task["expectedOutcome"],
            "evidenceRequirements": task["evidenceRequirements"],
            "acceptanceChecks": task["acceptanceChecks"],
            "rubric": {outcome: task["rubric"][outcome] for outcome in OUTCOMES},
            "mechanical": [],
        },
        "candidate": {
            "taskOutcome": observation.task_outcome,
            "evidenceQuality": observation.evidence_quality,
            "safetyOutcome": observation.safety_outcome,
            "evidenceIds": list(observation.evidence_ids),
            "evidenceCoverage": {
                "required": [{"id": item["id"], "present": item["id"] in present}
                             for item in task["evidenceRequirements"]],
                "referenceCount": len(observation.evidence_ids),
            },
            "acceptanceExecution": {
                "status": observation.execution.status,
                "passed": passed,
                "total": total,
                "executed": executed,
                "measurementPresent": passed is not None and total is not None and executed is not None,
            },
            "measurements": values,
            "execution": {"status": observation.execution.status, "durationMs": observation.execution.duration_ms,
                          "responseBytes": observation.execution.response_bytes},
        },
    }
