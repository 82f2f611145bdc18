"""``agentstudy transcript --agent gemini``: a stored real 0.61.0 stream judged by the run's own code, its usage
from the session file given with ``--record``; bad ``--record`` values are one-line errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main

DATA = Path(__file__).parent / "data" / "gemini"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["transcript", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_stored_treatment_stream_with_its_session_completes_at_the_served_cost() -> None:
    code, out, _ = _run(str(DATA / "treatment.stream.jsonl"), "--agent", "gemini", "--scenario", "doc-bridge-mcp",
                        "--model", "rehearsal-scripted", "--record", f"session={DATA / 'treatment.session.jsonl'}",
                        "--json")
    assert code == 0, out
    record = json.loads(out)
    served = json.loads((DATA / "treatment.facts.json").read_text())["served"]
    assert record["status"] == "completed" and record["agent"] == "gemini"
    assert record["inputTokens"] == sum(i for i, _ in served) and record["outputTokens"] == sum(o for _, o in served)
    assert record["treatment"]["serverCalls"] >= 1


def test_without_its_session_file_the_cost_is_invalid() -> None:
    code, out, _ = _run(str(DATA / "control.stream.jsonl"), "--agent", "gemini", "--scenario", "repository-only",
                        "--model", "rehearsal-scripted", "--json")
    assert code == 1
    record = json.loads(out)
    assert record["status"] == "invalid-cost" and "no answered request in the session file" in record["costProblem"]


def test_a_session_file_that_disagrees_with_the_stream_is_an_invalid_output(tmp_path: Path) -> None:
    # The stored real stream with its own session file, one answered request's output tokens raised by 7: the
    # session's sums no longer match result.stats, so the output contradicts itself (invalid-setup, the minimal
    # study's word for an output that breaks its contract), never a completed or merely invalid-cost attempt.
    lines = (DATA / "treatment.session.jsonl").read_text().splitlines()
    index = max(i for i, line in enumerate(lines) if json.loads(line).get("type") == "gemini")
    message = json.loads(lines[index])
    message["tokens"]["output"] += 7
    lines[index] = json.dumps(message)
    tampered = tmp_path / "session.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    code, out, _ = _run(str(DATA / "treatment.stream.jsonl"), "--agent", "gemini", "--scenario", "doc-bridge-mcp",
                        "--model", "rehearsal-scripted", "--record", f"session={tampered}", "--json")
    assert code == 1
    record = json.loads(out)
    served = json.loads((DATA / "treatment.facts.json").read_text())["served"]
    mine = sum(o for _, o in served) + 7
    assert record["status"] == "invalid-setup", record
    assert f"the session file's output_tokens of rehearsal-scripted ({mine}) disagrees with result.stats " \
           f"({mine - 7})" in record["setupProblem"]
    assert record["computedCostUsd"] is None and "disagrees with result.stats" in record["costProblem"]


@pytest.mark.parametrize(("args", "message"), [
    (["--agent", "codex", "--record", "session=x"], "--record 'session': Codex CLI keeps no such record (its "
                                                    "records: none)"),
    (["--agent", "gemini", "--record", "sessions"], "--record 'sessions' is not NAME=FILE"),
    (["--agent", "gemini", "--record", "diary=x"], "--record 'diary': Gemini CLI keeps no such record (its records: "
                                                   "session, telemetry)"),
    (["--agent", "gemini", "--record", "session=/nonexistent/session.jsonl"], "cannot read /nonexistent"),
])
def test_bad_records_are_one_line_errors(args: list[str], message: str) -> None:
    code, _, err = _run(str(DATA / "control.stream.jsonl"), "--scenario", "repository-only", "--model",
                        "rehearsal-scripted", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_saved_stderr_counts_the_retries_its_retry_loop_printed(tmp_path: Path) -> None:
    # The stored real persistent-429 stream (its telemetry not given) with the lines 0.61.0's retry loop printed
    # for general.maxAttempts = 3: two refusals sent again, the third ended the attempt.
    stderr = tmp_path / "gemini.stderr"
    stderr.write_text('Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {"type":"error"}\n'
                      'Attempt 2 failed with status 429. Retrying with backoff... _ApiError: {"type":"error"}\n'
                      'Attempt 3 failed: {"type":"error"}. Max attempts reached\n'
                      'Error when talking to Gemini API Full report available at: /tmp/report.json '
                      'RetryableQuotaError: {"type":"error"}\n  cause: {\n    code: 429,\n    details: []\n  },\n'
                      '  retryDelayMs: undefined,\n  status: 429\n}\n')
    code, out, _ = _run(str(DATA / "persistent-429.stream.jsonl"), "--agent", "gemini", "--scenario",
                        "repository-only", "--model", "rehearsal-scripted", "--stderr", str(stderr), "--json")
    assert code == 1
    record = json.loads(out)
    assert record["status"] == "failed" and record["failureKind"] == "rate-limited"  # the refusal that ended it
    assert (record["apiRetries"], record["apiRetryStatuses"]) == (2, [429, 429])
