"""The provider adapters' pure parts (issue 34): the strict answer parser, evidence ids, the printed object,
the prompt's request round trip and the scripted model's answers in the output schema."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import jsonschema
import pytest

from agentstudy.controlled.requests import provider_request
from agentstudy.protocol.controlled.agent_prompt import adjudicator_prompt, provider_prompt, request_in_prompt
from agentstudy.protocol.controlled.provider_output import (
    ADJUDICATOR_OUTPUT_SCHEMA,
    PROVIDER_OUTPUT_SCHEMA,
    AgentAnswerError,
    AgentUsage,
    adjudicator_stdout,
    evidence_id,
    parse_adjudicator_answer,
    parse_provider_answer,
    provider_stdout,
)
from agentstudy.rehearsal.controlled.example import example_suite
from agentstudy.rehearsal.policy import next_reply

ANSWER: dict[str, Any] = {"taskOutcome": "success", "evidenceQuality": "high", "safetyOutcome": "safe",
                          "evidenceIds": ["adr-1"], "clarificationRequests": 0, "reworkCount": 0,
                          "measurements": [{"name": "acceptanceChecksPassed", "value": 2}]}
USAGE = AgentUsage(input_tokens=1500, output_tokens=1000, cached_input_tokens=500, reasoning_output_tokens=7,
                   tool_calls=3, extra={"stderrBytes": 12})


def test_a_schema_answer_parses_and_the_schema_accepts_it() -> None:
    jsonschema.validate(ANSWER, PROVIDER_OUTPUT_SCHEMA)
    assert parse_provider_answer(json.dumps(ANSWER)) == ANSWER
    assert parse_provider_answer(json.dumps({**ANSWER, "firstEvidenceLatencyMs": 5}))["firstEvidenceLatencyMs"] == 5


@pytest.mark.parametrize(("text", "says"), [
    ("The answer is success.", "not one JSON object"),
    ("```json\n{}\n```", "not one JSON object"),
    ("[1, 2]", "not one JSON object"),
    (json.dumps({**ANSWER, "extra": 1}), "extra"),
    (json.dumps({k: v for k, v in ANSWER.items() if k != "reworkCount"}), "reworkCount"),
    (json.dumps({**ANSWER, "reworkCount": "0"}), "reworkCount"),
    (json.dumps({**ANSWER, "reworkCount": True}), "reworkCount"),
    (json.dumps({**ANSWER, "reworkCount": -1}), "reworkCount"),
    (json.dumps({**ANSWER, "taskOutcome": "great"}), "taskOutcome"),
    (json.dumps({**ANSWER, "measurements": {"a": 1}}), "measurements"),
    (json.dumps({**ANSWER, "measurements": [{"name": "a", "value": -1}]}), "measurements"),
    ('{"measurements": [{"name": "a", "value": NaN}]}', "NaN is not JSON"),
])
def test_anything_else_is_refused_in_one_line(text: str, says: str) -> None:
    with pytest.raises(AgentAnswerError) as raised:
        parse_provider_answer(text)
    assert says in str(raised.value) and "\n" not in str(raised.value)
    assert "The answer is" not in str(raised.value)  # the agent's text is never quoted


def test_evidence_ids_are_trimmed_or_hashed() -> None:
    assert evidence_id("  docs/a.md  ") == "docs/a.md"
    long = "x" * 257
    assert evidence_id(long) == "evidence-" + hashlib.sha256(long.encode()).hexdigest()[:32]
    assert evidence_id("a\tb").startswith("evidence-") and evidence_id("   ").startswith("evidence-")
    assert evidence_id("y" * 256) == "y" * 256


def test_the_printed_object_carries_provider_usage_and_measurements_as_an_object() -> None:
    body = provider_stdout(parse_provider_answer(json.dumps({**ANSWER, "evidenceIds": [" adr-1 "]})), USAGE)
    assert body["evidenceIds"] == ["adr-1"]
    assert (body["inputTokens"], body["outputTokens"], body["tokenMethod"], body["toolCalls"]) == (
        1500, 1000, "provider", 3)
    assert body["measurements"] == {"acceptanceChecksPassed": 2, "cachedInputTokens": 500,
                                    "reasoningOutputTokens": 7, "stderrBytes": 12}
    none = AgentUsage(None, None, None, None, 0)
    assert "tokenMethod" not in provider_stdout(ANSWER, none) and "inputTokens" not in provider_stdout(ANSWER, none)


def test_the_adjudicator_verdict_is_strict_and_printed_with_its_usage() -> None:
    verdict = {"outcome": "partial", "confidence": 0.5, "reasonCodes": ["evidence-missing"]}
    jsonschema.validate(verdict, ADJUDICATOR_OUTPUT_SCHEMA)
    body = adjudicator_stdout(parse_adjudicator_answer(json.dumps(verdict)), USAGE)
    assert {k: body[k] for k in ("outcome", "confidence", "reasonCodes", "inputTokens", "tokenMethod")} == {
        **verdict, "inputTokens": 1500, "tokenMethod": "provider"}
    for bad in ({**verdict, "confidence": 2}, {**verdict, "reasonCodes": ["Not An Id"]}, {"outcome": "partial"}):
        with pytest.raises(AgentAnswerError):
            parse_adjudicator_answer(json.dumps(bad))


def _request(scenario: str) -> dict[str, Any]:
    task = example_suite()["tasks"][0]
    execution = {"taskId": task["id"], "repositoryId": task["repositoryId"], "category": task["category"],
                 "scenarioId": scenario, "modelId": "low-cost-model", "replicate": 0, "variantId": "variant-a",
                 "difficulty": task["difficulty"]}
    return provider_request(task, execution)


def test_the_prompt_carries_the_request_back_and_no_path() -> None:
    request = _request("repository-only")
    assert request_in_prompt(provider_prompt(request)) == request
    assert request_in_prompt(adjudicator_prompt({"protocol": "x"})) == {"protocol": "x"}
    assert request_in_prompt("Where is the cache?") is None
    assert "/tmp/" not in provider_prompt(request)


def _conversation(prompt: str, tools: list[str], steps: list[tuple[dict[str, Any], str]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nPrimary working directory: /repo\n</system-reminder>"},
        {"type": "text", "text": prompt}]}]
    for call, result in steps:
        messages += [{"role": "assistant", "content": [call]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                                   "content": result}]}]
    return {"model": "m", "messages": messages, "tools": [{"name": name} for name in tools]}


def test_the_scripted_model_reads_the_named_files_then_answers_in_the_output_schema() -> None:
    request = _request("repository-only")
    prompt = provider_prompt(request)
    steps: list[tuple[dict[str, Any], str]] = []
    files = {}
    for _turn in range(10):
        reply = next_reply(_conversation(prompt, ["Read", "Grep", "Glob"], steps))
        if reply.stop_reason == "end_turn":
            break
        call = reply.content[-1]
        assert call["name"] == "Read" and call["input"]["file_path"].startswith("/repo/")
        path = call["input"]["file_path"][len("/repo/"):]
        files[path] = True
        steps.append((call, "1\tno text of any check is here"))
    answer = parse_provider_answer(reply.content[0]["text"])
    jsonschema.validate(json.loads(reply.content[0]["text"]), PROVIDER_OUTPUT_SCHEMA)
    measurements = {m["name"]: m["value"] for m in answer["measurements"]}
    assert files and measurements["acceptanceChecksExecuted"] == measurements["acceptanceChecksTotal"] > 0
    assert measurements["acceptanceChecksPassed"] == 0  # the reads held none of the checks' texts
    assert answer["evidenceIds"] == [item["id"] for item in request["evidenceRequirements"]]


def test_the_scripted_model_searches_the_bundled_server_first_in_the_doc_bridge_arm() -> None:
    reply = next_reply(_conversation(provider_prompt(_request("deterministic-doc-bridge")),
                                     ["Read", "mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get"], []))
    assert reply.content[-1]["name"] == "mcp__doc-bridge__doc_search"


def test_the_scripted_model_answers_an_adjudicator_request_at_once() -> None:
    request = {"protocol": "doc-bridge.study-adjudicator.v1", "candidate": {"acceptanceExecution": {
        "status": "completed", "passed": 1, "total": 1, "executed": 1, "measurementPresent": True},
        "evidenceCoverage": {"required": [{"id": "a", "present": True}]}}}
    reply = next_reply(_conversation(adjudicator_prompt(request), [], []))
    assert reply.stop_reason == "end_turn"
    assert parse_adjudicator_answer(reply.content[0]["text"])["outcome"] == "success"
