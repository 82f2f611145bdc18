"""The strict Codex 0.171.0 stream validator (issue 21 item 3) against real and broken transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentstudy.stream.codex import (
    CodexExpectations,
    CodexUsage,
    check_codex_setup,
    codex_outcome,
    parse_codex_stream,
)
from agentstudy.stream.outcome import ProcessFacts

REAL = Path(__file__).parent / "transcripts" / "codex-0.171.0"
CONTROL = CodexExpectations(None)
TREATMENT = CodexExpectations("doc-bridge", ("doc.search", "doc.get"))


def _real(name: str) -> tuple[list[str], ProcessFacts, str]:
    lines = (REAL / f"{name}.jsonl").read_text().splitlines()
    exit_code = int((REAL / f"{name}.exit").read_text())
    stderr_file = REAL / f"{name}.stderr"
    stderr = stderr_file.read_text() if stderr_file.exists() else ""
    return lines, ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=exit_code), stderr


def _judge(name: str, expected: CodexExpectations) -> tuple[str, str | None]:
    lines, process, stderr = _real(name)
    result = codex_outcome(process, parse_codex_stream(lines), expected, stderr)
    return result.status, result.problem


def test_real_control_completed_counts_shell_programs_and_usage() -> None:
    lines, _, _ = _real("control-completed")
    transcript = parse_codex_stream(lines)
    assert transcript.grammar_problems == []
    assert dict(transcript.tool_calls) == {"shell:grep": 1, "shell:sed": 1}
    assert transcript.usage == CodexUsage(654, 0, 0, 126, 0)
    assert transcript.usage_complete
    assert _judge("control-completed", CONTROL) == ("completed", None)


def test_real_treatment_completed_with_mcp_calls() -> None:
    lines, _, _ = _real("treatment-completed")
    transcript = parse_codex_stream(lines)
    assert dict(transcript.tool_calls) == {"mcp__doc-bridge__doc.search": 1, "mcp__doc-bridge__doc.get": 1}
    assert [c["status"] for c in transcript.mcp_calls] == ["completed", "completed"]
    assert _judge("treatment-completed", TREATMENT) == ("completed", None)


def test_real_treatment_stream_in_control_arm_is_invalid_setup() -> None:
    status, problem = _judge("treatment-completed", CONTROL)
    assert status == "invalid-setup"
    assert problem is not None and "in the repository-only arm" in problem


def test_real_tool_outside_enabled_tools_is_invalid_setup() -> None:
    status, problem = _judge("treatment-completed", CodexExpectations("doc-bridge", ("doc.search",)))
    assert status == "invalid-setup"
    assert problem == "MCP tool call doc-bridge/doc.get outside the allowed set"


def test_real_required_server_that_fails_to_start_is_invalid_setup() -> None:
    status, problem = _judge("treatment-required-server-fails", TREATMENT)
    assert status == "invalid-setup"
    assert problem is not None
    assert problem.startswith("the required MCP server failed to start: Error: thread/start")
    assert "the first event is not thread.started" in problem


def test_real_cancelled_mcp_call_is_invalid_setup() -> None:
    status, problem = _judge("treatment-cancelled-call", CodexExpectations("doc-bridge", ("doc.write",)))
    assert status == "invalid-setup"
    assert problem is not None
    assert "MCP tool call doc-bridge/doc.write was cancelled or denied: MCP tool call requires approval" in problem
    assert "every MCP tool call returned an error (treatment lost)" in problem


def test_real_every_mcp_call_erroring_is_treatment_lost() -> None:
    status, problem = _judge("treatment-all-calls-error", TREATMENT)
    assert (status, problem) == ("invalid-setup", "every MCP tool call returned an error (treatment lost): "
                                 "the first call answered "
                                 "\"Error executing tool doc.get: unknown path: 'no/such/file.md' is not a servable "
                                 "file at 000000000000\"")


def test_real_turn_failed_is_failed_without_usage() -> None:
    lines, _, _ = _real("turn-failed")
    transcript = parse_codex_stream(lines)
    assert transcript.grammar_problems == []
    assert not transcript.usage_complete
    assert any("Reconnecting" not in n and "HTTP 400" in n for n in transcript.notices)
    status, problem = _judge("turn-failed", CONTROL)
    assert status == "failed"
    assert problem is not None and "turn.failed" in problem and "exit code 1" in problem


def test_real_write_refused_by_the_read_only_sandbox_is_a_failed_command_not_a_denial() -> None:
    lines, _, _ = _real("control-write-refused-item")
    transcript = parse_codex_stream(lines)
    assert transcript.tool_calls["shell:touch"] == 1
    assert transcript.read_denials == 0
    assert _judge("control-write-refused-item", CONTROL) == ("completed", None)


def test_real_refused_write_usually_leaves_no_item_in_the_stream() -> None:
    """Measured: in most runs Codex 0.171.0 emits no command_execution item for the refused write,
    though the model got its output; the stream's shell counts are a lower bound (docs/codex.md)."""
    lines, _, _ = _real("control-write-refused")
    transcript = parse_codex_stream(lines)
    assert dict(transcript.tool_calls) == {}
    assert _judge("control-write-refused", CONTROL) == ("completed", None)


def _good() -> list[str]:
    return (REAL / "control-completed.jsonl").read_text().splitlines()


def _problems(lines: list[str]) -> list[str]:
    return check_codex_setup(parse_codex_stream(lines), CONTROL)


def test_malformed_line_is_a_setup_problem() -> None:
    lines = _good()
    lines.insert(2, "{not json")
    assert _problems(lines) == ["line 3 is not JSON"]


def test_unknown_event_type_is_not_skipped() -> None:
    lines = _good()
    lines.insert(2, json.dumps({"type": "turn.paused"}))
    assert _problems(lines) == ["line 3: unknown event type 'turn.paused' for codex 0.171.0"]


def test_unknown_item_type_is_not_skipped() -> None:
    lines = _good()
    lines.insert(3, json.dumps({"type": "item.completed", "item": {"id": "item_9", "type": "hologram"}}))
    assert _problems(lines) == ["line 4: unknown item type 'hologram' for codex 0.171.0"]


def test_two_terminal_events_and_terminal_not_last() -> None:
    lines = _good()
    lines.insert(3, lines[-1])
    assert _problems(lines) == ["2 terminal events (turn.completed / turn.failed), expected exactly one"]
    lines = _good()
    lines.append(lines[3])
    assert _problems(lines) == ["the terminal event is not the last event"]


def test_missing_thread_started_and_no_terminal() -> None:
    lines = _good()[1:-1]
    assert _problems(lines) == ["the first event is not thread.started",
                                "0 thread.started events, expected exactly one",
                                "0 terminal events (turn.completed / turn.failed), expected exactly one"]
    transcript = parse_codex_stream(lines)
    assert not transcript.usage_complete
    process = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)
    assert codex_outcome(process, transcript, CONTROL).status == "invalid-setup"


def test_declined_command_is_a_recorded_read_denial_not_a_problem() -> None:
    lines = _good()
    declined = {"id": "item_8", "type": "command_execution", "command": "/bin/bash -lc 'cat /etc/shadow'",
                "aggregated_output": "", "exit_code": None, "status": "declined"}
    lines.insert(3, json.dumps({"type": "item.completed", "item": declined}))
    transcript = parse_codex_stream(lines)
    assert transcript.read_denials == 1
    assert transcript.tool_calls["shell:cat"] == 1
    assert check_codex_setup(transcript, CONTROL) == []


@pytest.mark.parametrize(("item_type", "text"), [("file_change", "a file change in a read-only study"),
                                                 ("web_search", "a web search in a read-only study"),
                                                 ("collab_tool_call", "a sub-agent call in a read-only study")])
def test_forbidden_items_are_setup_problems(item_type: str, text: str) -> None:
    lines = _good()
    lines.insert(3, json.dumps({"type": "item.completed", "item": {"id": "item_7", "type": item_type}}))
    assert _problems(lines) == [text]


def test_timeout_and_exit_code_take_precedence_as_for_claude_code() -> None:
    transcript = parse_codex_stream(_good())
    timed_out = ProcessFacts(started=True, timed_out=True, truncated=False, exit_code=-9, timeout_s=5)
    assert codex_outcome(timed_out, transcript, CONTROL).status == "timed-out"
    crashed = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=3)
    assert codex_outcome(crashed, transcript, CONTROL).problem == "exit code 3"


def test_committed_transcripts_hold_no_machine_paths() -> None:
    for path in sorted(REAL.iterdir()):
        text = path.read_text()
        for marker in ("/work/", "/home/", "/root", "/tmp/", "/usr/", ".venv"):
            assert marker not in text, (path.name, marker)
