"""Real Claude Code transcripts with ``api_retry`` events (issue 33 "must show"): the scripted Messages server
answered the first request 429 (``retry-after: 1``) and the next ones normally; each pinned version (2.1.296 and
2.1.328, ``tests/transcripts/claude-code-<version>/429-then-success.jsonl``, captured with ``agentstudy demo
--rehearsal-faults 1:429``, repository-only arm) retried by itself. Evaluated as a study attempt:
``completed``, the retry counted with its status and its wait, no ``failureKind``."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentstudy.stream.outcome import ProcessFacts
from agentstudy.stream.transcript import parse_transcript
from agentstudy.transports.cli_args import ArmTools
from agentstudy.transports.cli_evaluation import cli_failure_kind, evaluate_cli_attempt
from claude_versions import CLAUDE_CODE_VERSIONS

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
REPOSITORY_TOOLS = ("Glob", "Grep", "Read")


@pytest.mark.parametrize("version", sorted(CLAUDE_CODE_VERSIONS))
def test_a_real_429_then_success_is_completed_with_its_retry_counted(version: str) -> None:
    stdout = (TRANSCRIPTS / f"claude-code-{version}" / "429-then-success.jsonl").read_bytes()
    transcript = parse_transcript(stdout.decode("utf-8").splitlines())
    assert transcript.shape_problems == []
    assert transcript.init is not None and transcript.init.get("claude_code_version") in (None, version)
    tools = ArmTools(REPOSITORY_TOOLS, REPOSITORY_TOOLS, (), None)
    evaluation = evaluate_cli_attempt(stdout, ProcessFacts(started=True, timed_out=False, truncated=False,
                                                           exit_code=0), model="claude-haiku-5-5", tools=tools)
    assert (evaluation.status, evaluation.status_problem, evaluation.setup_problems) == ("completed", None, ())
    fields = evaluation.fields
    assert fields["api_retries"] == 1 and fields["api_retry_statuses"] == [429]
    assert fields["api_retry_wait_ms"] >= 1000  # retry-after: 1 honoured (2.1.328 adds jitter)
    assert cli_failure_kind(evaluation.status, fields["api_error_status"]) is None
    assert evaluation.reported_cost_usd is not None and evaluation.reported_cost_usd > 0
