"""Claude Code may retry a refused request, and its retries are counted (issue 33 items 3, 5, 6, 8).

The real pinned ``claude`` binary against the scripted Messages server with a fault schedule: the
first request answered 429 (``retry-after: 1``), then success -> ``completed`` with one retry
counted; every request of the second attempt answered 529 -> ``failed``, ``failureKind:
overloaded`` after the bounded retries, and the run ``blocked``. Plus the stream checks on the
current Claude Code line's event types.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentstudy.io.ledger_journal import read_ledger
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.demo import run_demo
from agentstudy.runners.progress import SilentProgress
from agentstudy.stream.transcript import parse_transcript
from agentstudy.transports.cli_args import CLI_MAX_RETRIES
from agentstudy.transports.cli_evaluation import api_error_status, cli_failure_kind


def _line(event: dict[str, object]) -> str:
    return json.dumps(event)


def test_the_stream_counts_api_retries_and_accepts_the_newer_event_types() -> None:
    lines = [
        _line({"type": "system", "subtype": "init", "model": "m", "tools": [], "mcp_servers": []}),
        _line({"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 2, "retry_delay_ms": 1000,
               "error_status": 429, "error": "rate_limit"}),
        _line({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed_warning"}}),
        _line({"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 2, "retry_delay_ms": 612.4,
               "error_status": None, "error": "connection"}),
        _line({"type": "system", "subtype": "session_state_changed"}),
        _line({"type": "tool_progress", "tool_use_id": "t"}),
        _line({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
               "terminal_reason": "completed", "result_index": 0, "subagent_stats": {}}),
        _line({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}}),
    ]
    transcript = parse_transcript(lines)
    assert transcript.shape_problems == []
    assert (transcript.api_retries, transcript.api_retry_wait_ms) == (2, 1612)
    assert transcript.api_retry_statuses == [429, "network"]
    assert transcript.rate_limit_events == 2
    assert parse_transcript([*lines[:-1], lines[4]]).shape_problems == ["the result event is not the last event"]


def test_a_failed_cli_attempt_names_the_status_the_api_gave_last() -> None:
    result = {"type": "result", "subtype": "success", "is_error": True, "terminal_reason": "api_error",
              "api_error_status": 529}
    assert api_error_status(result) == 529
    assert cli_failure_kind("failed", api_error_status(result)) == "overloaded"
    assert cli_failure_kind("failed", 429) == "rate-limited"
    assert cli_failure_kind("failed", 502) == "server-error"
    assert cli_failure_kind("failed", None) == "agent"
    assert cli_failure_kind("timed-out", None) == "timeout"
    assert cli_failure_kind("completed", None) is None
    assert api_error_status({**result, "terminal_reason": "completed"}) is None


def test_real_claude_code_rides_out_a_429_and_names_persistent_overload(tmp_path: Path, claude_bin: Path) -> None:
    captured: list[RehearsalServer] = []
    original = RehearsalServer.__enter__

    def keep(self: RehearsalServer) -> RehearsalServer:
        captured.append(self)
        return original(self)

    patch = pytest.MonkeyPatch()
    patch.setattr(RehearsalServer, "__enter__", keep)
    try:
        summary = run_demo(tmp_path, claude_bin, SilentProgress(), faults="1:429,attempt=2:529")
    finally:
        patch.undo()
    ledger_path = tmp_path / "ledger.json"
    ledger = json.loads(read_ledger(ledger_path, ledger_path.read_bytes()).data)
    first, second = ledger["observations"]
    assert first["status"] == "completed" and first["apiRetries"] == 1
    assert first["apiRetryStatuses"] == [429] and first["apiRetryWaitMs"] >= 1000  # retry-after honoured
    assert "failureKind" not in first
    assert second["status"] == "failed" and second["failureKind"] == "overloaded"
    assert second["apiRetries"] == CLI_MAX_RETRIES and second["apiRetryStatuses"] == [529] * CLI_MAX_RETRIES
    assert summary.status == "blocked" and summary.line["apiRetries"] == 1 + CLI_MAX_RETRIES
    log = captured[0].requests
    refused = [r for r in log if r.fault is not None]
    assert [r.status for r in refused] == [429] + [529] * (CLI_MAX_RETRIES + 1)
    assert first["apiRetries"] + second["apiRetries"] == len(refused) - 1  # the last 529 ended the attempt
    assert verify_ledger_bytes(ledger_path.read_bytes()).problems == ()
