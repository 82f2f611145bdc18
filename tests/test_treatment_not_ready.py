"""A server that answers "not ready" has not been used (issue 32 item 4): the call counts as failed.

A call can succeed at the protocol level and still carry no content: "index not built; run
build_deep_index first". The treatment record counts it among ``serverCallErrors`` on Claude Code's
stream, on Codex's events and in the http loop's own calls.
"""

from __future__ import annotations

import json

from agentstudy.protocol.treatment import ServerCall, server_not_ready, treatment_record, used_server
from agentstudy.stream.codex import parse_codex_stream
from agentstudy.stream.transcript import parse_transcript
from agentstudy.stream.treatment_facts import claude_treatment, codex_treatment
from test_treatment_record import _claude_stream

NOT_READY = "index not built; run build_deep_index first"


def test_answers_that_name_a_missing_index_or_a_step_to_run_first_are_not_ready() -> None:
    for text in (NOT_READY, "Error: no index for this project", "The index is missing.", "Server not initialized",
                 "Please run `build_index` first", "Project not indexed yet", "service is not ready"):
        assert server_not_ready(text), text
    for text in ("The retention window is 30 days.", "docs/index.md:3: the index lists every page",
                 "README.md\ndocs", "", "x" * 500 + " index not built"):  # content, or a mention far down
        assert not server_not_ready(text), text


def test_the_record_counts_a_not_ready_answer_as_a_failed_call() -> None:
    record = treatment_record(server="s", offered_server_tools=["find"], evidence="request",
                              calls=[ServerCall("find", False, 40, not_ready=True), ServerCall("find", False, 12)])
    assert (record.server_calls, record.server_call_errors, record.all_calls_failed) == (2, 1, False)
    assert used_server(record)
    only = treatment_record(server="s", offered_server_tools=["find"], evidence="request",
                            calls=[ServerCall("find", False, 40, not_ready=True)])
    assert only.all_calls_failed and not used_server(only)


def test_claude_and_codex_streams_mark_a_not_ready_answer() -> None:
    record = claude_treatment(parse_transcript(_claude_stream([(NOT_READY, False), ("found it", False)])),
                              "doc-bridge")
    assert (record.server_calls, record.server_call_errors) == (2, 1)
    item = {"id": "i1", "type": "mcp_tool_call", "server": "doc-bridge", "tool": "doc.search", "status": "completed",
            "result": {"content": [{"type": "text", "text": NOT_READY}]}}
    events = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
              {"type": "item.completed", "item": item},
              {"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0, "output_tokens": 1}}]
    codex = codex_treatment(parse_codex_stream(json.dumps(e) for e in events), "doc-bridge", ("doc.search",), "gpt-5")
    assert (codex.server_calls, codex.server_call_errors, codex.all_calls_failed) == (1, 1, True)
