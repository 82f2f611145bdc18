"""``agentstudy transcript``: the runner's checks on a saved stream-json file, from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.records import CliObservation

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
CLEAN = TRANSCRIPTS / "01-read-readme-apikey.stdout.jsonl"
MCP_RUN = TRANSCRIPTS / "15-mcp-calls-dontAsk.stdout.jsonl"
MODEL = "claude-haiku-4-5"
ANSWER_WORD = "PAPAYA-42"  # in the clean transcript's final answer (and its Read tool result)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["transcript", *args])
    return result.exit_code, result.stdout, result.stderr


def record_of(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = invoke(*args, "--json")
    lines = out.splitlines()
    assert len(lines) == 1
    data: dict[str, Any] = json.loads(lines[0])
    return code, data


def test_help_documents_the_exit_codes_and_the_policy() -> None:
    code, out, _ = invoke("--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "Exit codes: 0 the status is `completed`; 1 any other status; 2 bad input" in flat
    unbroken = "".join(out.split())  # the help's wrapping may break a name at its hyphen
    for name in ("mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get", "mcp__doc-bridge__handoff_resolve"):
        assert name in unbroken
    for flag in ("--scenario", "--model", "--exit-code", "--timed-out", "--reservation-usd", "--containment",
                 "--json"):
        assert flag in flat


def test_clean_transcript_completes_with_the_seed_field_names() -> None:
    code, record = record_of(str(CLEAN), "--scenario", "repository-only", "--model", MODEL)
    assert code == 0
    assert record["status"] == "completed"
    assert record["statusReason"] is None
    assert record["setupProblem"] is None and record["costProblem"] is None
    assert record["cliReportedCostUsd"] == pytest.approx(0.0032)
    assert record["computedCostUsd"] == 0.0032
    assert record["chargedUsd"] == 0.0032  # the larger of the two
    assert record["reservedUsd"] == 0.1
    assert record["toolCalls"] == 1 and record["toolCallsByName"] == {"Read": 1}
    assert record["inputTokens"] == 2700 and record["usageComplete"] is True
    ledger_names = {info.alias or name for name, info in CliObservation.model_fields.items()}
    extra = set(record) - ledger_names
    assert extra == {"refusedOutOfExportReads"}
    missing = ledger_names - set(record)
    assert missing == {
        "taskId", "repetition", "cliVersion", "expectedCliVersion", "cumulativeCapExceeded",
        "wallTimeMs", "answer", "correctness", "adjudication",
        # A saved transcript has no export or child: provenance of a live attempt only.
        "exportFiles", "exportBytes", "exportTreeSha256", "isolationAchieved", "isolationNotAchieved",
        # A run keeps the transcript it judged (issue 28); a saved one is already where it is.
        "transcriptFile", "transcriptSha256",
        # Only a ledger seals its observations (issue 16), only a concurrent run times them (issue 19),
        # and only a Ray run names the node that ran the attempt (issue 20).
        "observationHash", "startedAt", "endedAt", "workerNode",
        # Only a failed or timed-out attempt says why (issue 33).
        "failureKind",
        # A run keeps the MCP server's stderr beside its transcript (issue 39), records the task's repository
        # (issue 41) and, in a randomised order, the attempt's position in its pair: none is in a saved stream.
        "serverStderrFile", "serverStderrSha256", "repository", "position",
    }
    assert ANSWER_WORD not in json.dumps(record)


def test_text_output_has_no_answer() -> None:
    code, out, _ = invoke(str(CLEAN), "--scenario", "repository-only", "--model", MODEL)
    assert code == 0
    assert out.splitlines()[0].split() == ["status", "completed"]
    assert any(line.split()[:2] == ["chargedUsd", "0.0032"] for line in out.splitlines())
    assert ANSWER_WORD not in out


def test_refused_attempt_shows_why_and_exits_1() -> None:
    code, record = record_of(str(MCP_RUN), "--scenario", "doc-bridge-mcp", "--model", MODEL)
    assert code == 1
    assert record["status"] == "invalid-setup"
    assert record["setupProblem"] == (
        "tool calls outside the allowed set ['Bash', 'mcp__doc-bridge__doc_write']"
    )
    assert record["statusReason"] == record["setupProblem"]
    assert record["chargedUsd"] == 0.1  # max(reservation, 0.00925, 0.00925)
    # The same file judged as the repository-only arm: the server and its tools are wrong too.
    code, record = record_of(str(MCP_RUN), "--scenario", "repository-only", "--model", MODEL)
    assert code == 1
    assert "an MCP server is present in the repository-only arm" in record["setupProblem"]
    code, out, _ = invoke(str(MCP_RUN), "--scenario", "doc-bridge-mcp", "--model", MODEL)
    assert code == 1
    assert "setupProblem" in out and "statusReason" not in out  # not shown twice


def test_exit_code_timeout_and_reservation() -> None:
    args = (str(CLEAN), "--scenario", "repository-only", "--model", MODEL)
    code, record = record_of(*args, "--exit-code", "1")
    assert (code, record["status"], record["statusReason"]) == (1, "failed", "exit code 1")
    assert record["exitCode"] == 1
    code, record = record_of(*args, "--exit-code", "1", "--reservation-usd", "0.25")
    assert record["chargedUsd"] == 0.25 and record["reservedUsd"] == 0.25
    code, record = record_of(*args, "--timed-out", "--exit-code", "-9")
    assert (code, record["status"]) == (1, "timed-out")
    # A success charged above its reservation is budget-exceeded (settlement).
    code, record = record_of(*args, "--reservation-usd", "0.001")
    assert (code, record["status"]) == (1, "budget-exceeded")
    assert record["chargedUsd"] == 0.0032
    assert record["statusReason"] == "charged 0.0032 USD is above the reservation of 0.001 USD"
    code, record = record_of(*args, "--reservation-usd", "0.1234567")
    assert record["reservedUsd"] == 0.123456 and record["attemptBudgetUsd"] == 0.1234567


def test_file_over_the_stdout_bound_is_failed(tmp_path: Path) -> None:
    lines = CLEAN.read_text(encoding="utf-8").splitlines(keepends=True)
    filler = json.dumps({"type": "system", "subtype": "status", "pad": "x" * 1000}) + "\n"
    big = tmp_path / "big.jsonl"
    big.write_text(lines[0] + filler * 4300 + "".join(lines[1:]), encoding="utf-8")
    assert big.stat().st_size > 4 * 1024 * 1024
    code, record = record_of(str(big), "--scenario", "repository-only", "--model", MODEL)
    assert (code, record["status"]) == (1, "failed")
    assert record["statusReason"] == "stdout went past its 4 MiB bound and was truncated"
    assert record["setupProblem"] is None
    small = tmp_path / "small.jsonl"
    small.write_text(lines[0] + filler * 100 + "".join(lines[1:]), encoding="utf-8")
    assert record_of(str(small), "--scenario", "repository-only", "--model", MODEL)[1]["status"] == "completed"


@pytest.mark.parametrize(
    "args",
    [
        ("{missing}", "--scenario", "repository-only", "--model", MODEL),
        ("{dir}", "--scenario", "repository-only", "--model", MODEL),
        (str(CLEAN), "--scenario", "repository-only", "--model", MODEL, "--reservation-usd", "abc"),
        (str(CLEAN), "--scenario", "repository-only", "--model", MODEL, "--reservation-usd", "0"),
        (str(CLEAN), "--scenario", "repository-only", "--model", MODEL, "--reservation-usd", "0.0000001"),
        (str(CLEAN), "--scenario", "both", "--model", MODEL),
        (str(CLEAN), "--scenario", "repository-only"),
        (str(CLEAN), "--scenario", "repository-only", "--model", MODEL, "--exit-code", "one"),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    filled = [a.replace("{missing}", str(tmp_path / "nope.jsonl")).replace("{dir}", str(tmp_path)) for a in args]
    code, out, err = invoke(*filled)
    assert code == 2
    assert out == ""
    assert err.strip()


def test_missing_file_error_is_one_line_from_the_installed_command(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    completed = subprocess.run(
        [sys.executable, "-m", "agentstudy", "transcript", str(missing), "--scenario", "repository-only",
         "--model", MODEL],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.splitlines() == [
        f"agentstudy: error: cannot read {missing}: No such file or directory"
    ]
