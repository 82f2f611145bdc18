"""Properties of the controlled run's pure core: outcome precedence, nothing raw recorded, retries, metrics."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstudy.controlled.metrics import metric_set, percentile95, wilson95
from agentstudy.controlled.record import classify_attempt, observation_payload
from agentstudy.fsm.controlled import ControlledAttemptMachine, may_retry
from agentstudy.io.controlled_command import ChildFacts
from agentstudy.protocol.controlled.contracts import create_contract
from agentstudy.protocol.controlled.hashing import js_json
from agentstudy.protocol.controlled.ledger import create_observation
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1

PLAN = create_contract(ControlledStudyRunPlanV1, {
    "type": "controlled-study-run-plan", "schemaVersion": 1, "planVersion": "v1", "protocolVersion": "v1",
    "protocolHash": "1" * 64, "taskSuiteHash": "2" * 64, "sourceRevisionHash": "3" * 64,
    "configurationHash": "4" * 64, "docBridgeVersion": "v1",
    "models": [{"id": "low", "role": "low-cost", "provider": "p", "model": "m", "version": "v",
                "parametersHash": "5" * 64, "contextLimit": 10, "toolConfigurationHash": "6" * 64,
                "promptContractHash": "7" * 64},
               {"id": "ref", "role": "reference", "provider": "p", "model": "n", "version": "v",
                "parametersHash": "5" * 64, "contextLimit": 10, "toolConfigurationHash": "6" * 64,
                "promptContractHash": "7" * 64}],
    "scenarios": [{"id": "repository-only", "network": False}, {"id": "deterministic-doc-bridge", "network": False},
                  {"id": "registry-assisted", "agentId": "a", "agentVersion": "v1", "network": False}],
    "taskIds": ["t-1", "t-2", "t-3", "t-4"],
    "sampling": {"strategy": "pairwise-task-strata", "sampleSize": 4,
                 "scenarioIds": ["repository-only", "deterministic-doc-bridge"]},
    "budget": {"maxTokens": 1000, "maxRuntimeMs": 1000, "maxOutputBytes": 1000, "maxAttempts": 3},
    "runId": "property-run",
})
EXECUTION = {"taskId": "t-1", "repositoryId": "r", "category": "discovery", "scenarioId": "repository-only",
             "modelId": "low", "replicate": 0, "variantId": "v-a"}

counts = st.one_of(st.none(), st.integers(min_value=0, max_value=1500))
answers = st.fixed_dictionaries({}, optional={
    "inputTokens": st.one_of(counts, st.just("unknown")),
    "outputTokens": counts,
    "tokenMethod": st.sampled_from(["provider", "estimate", "guess"]),
    "taskOutcome": st.sampled_from(["success", "partial", "blocked", "great"]),
    "evidenceIds": st.lists(st.text(alphabet="abcdef-:.", min_size=1, max_size=12), max_size=3),
    "toolCalls": counts,
    "measurements": st.dictionaries(st.sampled_from(["searchHitRate", "cachedInputTokens", "x"]),
                                    st.floats(min_value=0, max_value=10, allow_nan=False)),
    "privateText": st.text(min_size=1, max_size=20),
}).map(lambda answer: {key: value for key, value in answer.items() if value is not None})


def facts(ended_by: str, exit_code: int | None, stdout: bytes) -> ChildFacts:
    return ChildFacts(ended_by, exit_code, None, 5, stdout, len(stdout),  # type: ignore[arg-type]
                      hashlib.sha256(stdout).hexdigest(), 3, hashlib.sha256(b"err").hexdigest(), 0)


@settings(max_examples=300, deadline=None)
@given(ended_by=st.sampled_from(["exit", "timeout", "output-limit", "spawn-error"]),
       exit_code=st.sampled_from([0, 1, None]), answer=answers, garbage=st.booleans())
def test_outcome_precedence(ended_by: str, exit_code: int | None, answer: dict[str, Any], garbage: bool) -> None:
    stdout = b"not json {" if garbage else json.dumps(answer).encode()
    outcome = classify_attempt(facts(ended_by, exit_code, stdout), max_tokens=1000)
    answer_model = outcome.answer
    tokens = None if answer_model is None else (answer_model.input_tokens or 0) + (answer_model.output_tokens or 0)
    if tokens is not None and tokens > 1000:
        assert (outcome.status, outcome.error_code) == ("budget-exceeded", "token-budget")
    elif ended_by == "spawn-error":
        assert (outcome.status, outcome.answer) == ("unavailable", None)
    elif ended_by == "timeout":
        assert outcome.status == "timed-out"
    elif ended_by == "output-limit":
        assert (outcome.status, outcome.error_code) == ("budget-exceeded", "output-limit")
    elif exit_code != 0:
        assert (outcome.status, outcome.error_code) == ("failed", "non-zero-exit")
    elif garbage:
        assert (outcome.status, outcome.error_code) == ("invalid-output", "invalid-json")
    elif outcome.answer is None:
        assert (outcome.status, outcome.error_code) == ("invalid-output", "invalid-metrics")
    else:
        assert (outcome.status, outcome.error_code) == ("completed", None)
    if outcome.status == "completed":
        assert ended_by == "exit" and exit_code == 0 and outcome.answer is not None


@settings(max_examples=150, deadline=None)
@given(answer=answers, marker=st.text(alphabet="QWXZ", min_size=12, max_size=16))
def test_nothing_raw_is_recorded(answer: dict[str, Any], marker: str) -> None:
    stdout = json.dumps({**answer, "privateText": marker, marker: marker}).encode()
    child = facts("exit", 0, stdout)
    outcome = classify_attempt(child, max_tokens=1000)
    payload = observation_payload(plan=PLAN, execution=EXECUTION, facts=child, outcome=outcome, context_bytes=17,
                                  observed_at="2026-10-01T00:00:00.000Z")
    text = js_json(create_observation(payload).document)
    assert marker not in text
    assert payload["execution"]["responseBytes"] == len(stdout) and payload["contextTokens"] == math.ceil(17 / 4)
    if "measurements" in payload:
        assert all(value >= 0 for value in payload["measurements"].values())
        if "providerTokenCostUnits" in payload["measurements"]:
            assert payload["execution"]["tokenMethod"] == "provider"


@settings(max_examples=200, deadline=None)
@given(statuses=st.lists(st.sampled_from(["completed", "failed", "timed-out", "unavailable", "invalid-output"]),
                         min_size=1, max_size=5),
       max_attempts=st.integers(min_value=1, max_value=3))
def test_retries_stop_at_the_limit_or_the_first_completion(statuses: list[str], max_attempts: int) -> None:
    made: list[str] = []
    machine: ControlledAttemptMachine | None = None
    while may_retry(machine, len(made), max_attempts) and len(made) < len(statuses):
        machine = ControlledAttemptMachine()
        machine.start()
        status = statuses[len(made)]
        machine.settle(status=status, error_code=None if status == "completed" else "x")
        made.append(machine.status)
    assert 1 <= len(made) <= max_attempts
    assert "completed" not in made[:-1]
    if len(made) < min(max_attempts, len(statuses)):
        assert made[-1] == "completed"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["completed", "failed", "timed-out"]),
                          st.sampled_from([None, "success", "partial"]),
                          st.integers(min_value=0, max_value=10_000),
                          st.one_of(st.none(), st.integers(min_value=0, max_value=50))), max_size=8))
def test_metric_rates_and_intervals_are_bounded(rows: list[tuple[str, str | None, int, int | None]]) -> None:
    items = []
    for replicate, (status, outcome, duration, tools) in enumerate(rows):
        execution: dict[str, Any] = {"status": status, "exitCode": 0, "signal": None, "durationMs": duration,
                                     "responseBytes": 1, "stderrBytes": 0}
        if tools is not None:
            execution["toolCalls"] = tools
        payload = observation_payload(plan=PLAN, execution={**EXECUTION, "replicate": replicate},
                                      facts=facts("exit", 0, b"{}"), outcome=classify_attempt(facts("exit", 0, b"{}"),
                                                                                              max_tokens=10),
                                      context_bytes=duration, observed_at="2026-10-01T00:00:00.000Z")
        payload["execution"] = execution
        if outcome is not None:
            payload["taskOutcome"] = outcome
        items.append(create_observation(payload).model)
    metrics = metric_set(items)
    for name in ("completedRate", "adjudicatedRate", "evidenceCitationRate", "successRate"):
        assert metrics[name] is None or 0 <= metrics[name] <= 1
    interval = metrics["completedConfidence95"]
    assert interval["low"] <= metrics["completedRate"] <= interval["high"] or not items
    assert metrics["latencyP95Ms"] in ([row[2] for row in rows] or [0])
    assert len(metrics["missingMetrics"]) == len(set(metrics["missingMetrics"]))
    assert (metrics["averageToolCalls"] is None) == all(row[3] is None for row in rows)


@given(st.integers(min_value=0, max_value=200), st.integers(min_value=1, max_value=200))
def test_wilson_contains_the_rate(successes: int, total: int) -> None:
    successes = min(successes, total)
    interval = wilson95(successes, total)
    assert 0 <= interval["low"] <= successes / total <= interval["high"] <= 1


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=50))
def test_p95_is_a_member_at_or_above_the_median(values: list[int]) -> None:
    p95 = percentile95(values)
    assert p95 in values and p95 >= sorted(values)[(len(values) - 1) // 2]
