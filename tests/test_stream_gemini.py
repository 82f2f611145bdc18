"""The Gemini CLI stream checks and record readers over real 0.61.0 output (tests/data/gemini: streams, session
files and telemetry facts captured against the scripted server by the real binary)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.pricing.gemini import gemini_cost
from agentstudy.stream.gemini import (
    MAX_LINE_BYTES,
    NO_MCP_TOOL,
    POLICY_NOT_APPLIED,
    GeminiExpectations,
    check_gemini_setup,
    gemini_outcome,
    parse_gemini_stream,
)
from agentstudy.stream.gemini_records import (
    TelemetryFacts,
    printed_failure,
    printed_retries,
    reconcile,
    retry_statuses,
    session_usage,
    telemetry_facts,
)
from agentstudy.stream.outcome import ProcessFacts

DATA = Path(__file__).parent / "data" / "gemini"
OK = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)
TOOLS = ("doc.search", "doc.get", "handoff.resolve")


def _stream(name: str) -> list[str]:
    return (DATA / f"{name}.stream.jsonl").read_text().split("\n")


def _facts(name: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((DATA / f"{name}.facts.json").read_text())
    return facts


@pytest.mark.parametrize(("name", "server"), [("control", None), ("treatment", "doc-bridge"), ("retried", None)])
def test_the_real_streams_pass_and_their_sessions_match_the_served_tokens(name: str, server: str | None) -> None:
    transcript = parse_gemini_stream(_stream(name))
    facts = _facts(name)
    expected = GeminiExpectations(server, TOOLS, tuple(facts["firstTools"]))
    assert transcript.grammar_problems == [] and check_gemini_setup(transcript, expected) == []
    assert gemini_outcome(OK, transcript, expected).status == "completed"
    requests, problems = session_usage((DATA / f"{name}.session.jsonl").read_text())
    assert problems == [] and reconcile(requests, transcript.result["stats"] if transcript.result else None) == []
    assert [[r.input, r.output] for r in requests] == facts["served"]  # per request, what the server served
    cost = gemini_cost(requests)
    assert cost.usd == sum(Decimal(i) * Decimal("0.10") / 10**6 + Decimal(o) * Decimal("0.50") / 10**6
                           for i, o in facts["served"])
    assert any(n.startswith("mcp_doc-bridge_") for n in transcript.tool_calls) == (server is not None)


def test_the_persistent_429_stream_is_a_failed_result() -> None:
    transcript = parse_gemini_stream(_stream("persistent-429"))
    assert transcript.grammar_problems == [] and transcript.result is not None
    decided = gemini_outcome(ProcessFacts(True, False, False, 1), transcript, GeminiExpectations(None))
    assert decided.status == "failed" and "error" in (decided.problem or "")
    assert _facts("persistent-429")["errorStatuses"][:1] == [429]


def test_a_treatment_whose_first_request_had_no_mcp_tool_is_invalid_setup() -> None:
    transcript = parse_gemini_stream(_stream("control"))  # a stream with no MCP call, as tools.core leaves it
    offered = tuple(_facts("control")["firstTools"])
    decided = gemini_outcome(OK, transcript, GeminiExpectations("doc-bridge", TOOLS, offered))
    assert decided.status == "invalid-setup" and NO_MCP_TOOL in (decided.problem or "")
    # with no record of the offer, a treatment attempt that never called the server is refused too
    assert NO_MCP_TOOL in check_gemini_setup(transcript, GeminiExpectations("doc-bridge", TOOLS, None))


def test_offered_tools_beyond_the_read_only_set_mean_the_policy_did_not_apply() -> None:
    transcript = parse_gemini_stream(_stream("control"))
    offered = (*_facts("control")["firstTools"], "run_shell_command", "write_file")
    problems = check_gemini_setup(transcript, GeminiExpectations(None, (), offered))
    assert problems == [f"{POLICY_NOT_APPLIED}: run_shell_command, write_file"]


def _event(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, "timestamp": "2026-12-04T00:00:00Z", **fields})


INIT = _event("init", session_id="s", model="m")
RESULT = _event("result", status="success", stats={})


@pytest.mark.parametrize(("lines", "problem"), [
    ([INIT, "not json", RESULT], "line 2 is not JSON"),
    ([INIT, _event("nope"), RESULT], "line 2: unknown event type 'nope'"),
    ([INIT, INIT, RESULT], "line 2: init is not the one first event"),
    ([_event("message", role="user", content="q"), INIT, RESULT], "line 1: message before init"),
    ([INIT, RESULT, RESULT], "line 3: result after the result"),
    ([INIT, _event("tool_result", tool_id="x", status="success"), RESULT],
     "line 2: tool_result for unknown tool_id 'x'"),
    ([INIT, _event("tool_use", tool_name="read_file", tool_id="x", parameters={}), RESULT],
     "tool_use 'x' has no tool_result"),
    ([INIT, _event("message", role="robot", content="q"), RESULT], "line 2: message event with role 'robot'"),
    ([INIT, _event("message", role="assistant", content="q", delta=False), RESULT], "delta is not true"),
    ([INIT, json.dumps({"type": "result", "status": "success"})], "line 2 is no event with a type and a timestamp"),
    ([INIT, _event("result", status="success", stats=[])], "stats is not an object"),
    ([INIT, "x" * (MAX_LINE_BYTES + 1), RESULT], f"line 2 is longer than {MAX_LINE_BYTES} bytes"),
])
def test_a_broken_stream_is_refused_with_its_line(lines: list[str], problem: str) -> None:
    transcript = parse_gemini_stream(lines)
    assert any(problem in p for p in transcript.grammar_problems), transcript.grammar_problems
    assert gemini_outcome(OK, transcript, GeminiExpectations(None)).status == "invalid-setup"


def test_mcp_calls_outside_the_arm_and_writing_builtins_are_setup_problems() -> None:
    lines = [INIT, _event("tool_use", tool_name="mcp_doc-bridge_doc.search", tool_id="a", parameters={}),
             _event("tool_result", tool_id="a", status="success"),
             _event("tool_use", tool_name="mcp_other_x", tool_id="b", parameters={}),
             _event("tool_result", tool_id="b", status="success"),
             _event("tool_use", tool_name="write_file", tool_id="c", parameters={}),
             _event("tool_result", tool_id="c", status="success"), RESULT]
    transcript = parse_gemini_stream(lines)
    assert check_gemini_setup(transcript, GeminiExpectations(None)) == [
        "an MCP tool call (mcp_doc-bridge_doc.search) in the repository-only arm",
        "an MCP tool call (mcp_other_x) in the repository-only arm", "built-in tool write_file in a read-only study"]
    assert check_gemini_setup(transcript, GeminiExpectations("doc-bridge", ("doc.get",))) == [
        "MCP tool call mcp_doc-bridge_doc.search outside the allowed set", "MCP tool call mcp_other_x outside the "
        "allowed set", "built-in tool write_file in a read-only study"]


def test_a_session_that_disagrees_with_the_stats_is_named() -> None:
    requests, _ = session_usage((DATA / "control.session.jsonl").read_text())
    stats = json.loads(_stream("control")[-2])["stats"]
    stats["models"]["rehearsal-scripted"]["input_tokens"] += 1
    assert reconcile(requests, stats) == [
        f"the session file's input_tokens of rehearsal-scripted ({sum(r.input for r in requests)}) disagrees with "
        f"result.stats ({sum(r.input for r in requests) + 1})"]
    assert session_usage('{"type":"gemini","id":"a","model":"m","tokens":{"input":-1}}\nnot json')[1] == [
        "session file line 1: a Gemini usage count is not an integer >= 0", "session file line 2 is not JSON"]


# What 0.61.0's retry loop printed on stderr against the scripted server ("1:429,2:503,3:reset" and a persistent
# 429 with general.maxAttempts = 3), the stack-trace lines cut.
PRINTED = (
    "Ripgrep is not available. Falling back to GrepTool.\n"
    'Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {"type":"error"}\n  status: 429\n}\n'
    'Attempt 2 failed with status 503. Retrying with backoff... _ApiError: {"type":"error"}\n  status: 503\n}\n'
    "Attempt 3 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request\n"
    'Attempt 4 failed: {"type":"error"}. Max attempts reached\n'
)


def test_the_printed_retries_count_every_request_sent_again_but_not_the_last_refusal() -> None:
    assert printed_retries(PRINTED) == (429, 503, 0)
    assert printed_retries("Attempt 1 failed: x. Max attempts reached\nattempt 2 failed with status 429.") == ()
    assert printed_retries("") == ()


def test_the_printed_failure_is_the_status_of_the_last_error_block_or_network() -> None:
    block = ("Error when talking to Gemini API Full report available at: /tmp/r.json RetryableQuotaError: {}\n"
             "  cause: {\n    code: 503,\n    details: []\n  },\n  retryDelayMs: undefined,\n  status: 503\n}\n")
    assert printed_failure(PRINTED + block) == 503
    assert printed_failure(block.replace("503", "429") + "Later line\n  status: 500\n") == 429
    assert printed_failure("Error when talking to Gemini API Full report available at: /tmp/r.json Error: exception "
                           "TypeError: fetch failed sending request\n") == "network"
    assert printed_failure(PRINTED) is None and printed_failure("") is None


def test_the_retry_statuses_keep_the_telemetry_order_only_when_it_saw_every_printed_retry() -> None:
    complete = TelemetryFacts(None, (429, 0, 503), (429, 503))  # a broken stream sent again between them
    assert retry_statuses((429, 503), complete) == (429, 0, 503)
    unflushed = TelemetryFacts(None, (), ())  # the CLI exited before its telemetry batch was written
    assert retry_statuses((429,), unflushed) == (429,)
    partial = TelemetryFacts(None, (429, 0), (429,))
    assert retry_statuses((429, 429), partial) == (429, 429, 0)
    # a cut stderr tail: the telemetry's longer evidence wins
    assert retry_statuses((503,), TelemetryFacts(None, (429, 503), (429, 503)), stderr_complete=False) == (429, 503)
    assert retry_statuses((), TelemetryFacts(None, (0,), ())) == (0,)


def test_telemetry_facts_read_the_first_tool_list_and_the_failed_requests() -> None:
    records = [{"attributes": {"event.name": "gemini_cli.api_error", "status_code": 429}},
               {"attributes": {"gen_ai.tool.definitions": json.dumps([{"functionDeclarations": [
                   {"name": "read_file"}, {"name": "mcp_doc-bridge_doc.get"}]}])}},
               {"attributes": {"gen_ai.tool.definitions": json.dumps([{"functionDeclarations": [{"name": "x"}]}])}},
               {"attributes": {"event.name": "gemini_cli.api_error"}},
               {"attributes": {"event.name": "gemini_cli.chat.content_retry"}}]
    text = "\n".join(json.dumps(r, indent=2) for r in records)
    facts = telemetry_facts(text)
    assert facts.first_tools == ("read_file", "mcp_doc-bridge_doc.get") and facts.error_statuses == (429, 0, 0)
    assert telemetry_facts("").first_tools is None
