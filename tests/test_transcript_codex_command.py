"""``agentstudy transcript --agent codex`` over the real Codex 0.171.0 transcripts (issue 21 item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main

REAL = Path(__file__).parent / "transcripts" / "codex-0.171.0"
MODEL = ("--model", "rehearsal-scripted")  # the rehearsal's model, priced by pricing/openai.py


def run(name: str, *extra: str, scenario: str | None = None, as_json: bool = True) -> tuple[int, Any, str]:
    """Check the real transcript ``name`` as a run would: its arm, exit code and saved stderr."""
    arm = scenario or ("doc-bridge-mcp" if name.startswith("treatment") else "repository-only")
    args = ["transcript", "--agent", "codex", str(REAL / f"{name}.jsonl"), "--scenario", arm, *MODEL,
            "--exit-code", (REAL / f"{name}.exit").read_text().strip()]
    if (REAL / f"{name}.stderr").exists():
        args += ["--stderr", str(REAL / f"{name}.stderr")]
    result = CliRunner().invoke(main, [*args, *extra, *(["--json"] if as_json else [])])
    if not as_json:
        return result.exit_code, result.stdout, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.output
    return result.exit_code, json.loads(lines[0]), result.stderr


@pytest.mark.parametrize(("name", "calls", "tokens"), [
    ("control-completed", {"shell:grep": 1, "shell:sed": 1}, (654, 126)),
    ("treatment-completed", {"mcp__doc-bridge__doc_search": 1, "mcp__doc-bridge__doc_get": 1}, (1200, 127)),
    ("control-write-refused-item", {"shell:touch": 1}, (344, 97)),
    ("control-write-refused", {}, None),
])
def test_completed_real_transcripts(name: str, calls: dict[str, int], tokens: tuple[int, int] | None) -> None:
    code, record, _ = run(name)
    assert code == 0
    assert (record["status"], record["statusReason"], record["setupProblem"]) == ("completed", None, None)
    assert record["agent"] == "codex" and record["usageComplete"] is True
    assert record["toolCallsByName"] == calls and record["toolCalls"] == sum(calls.values())
    if tokens is not None:
        assert (record["inputTokens"], record["outputTokens"]) == tokens
    # Codex reports no cost: a completed attempt is charged its computed cost (rehearsal-scripted's rates).
    assert record["cliReportedCostUsd"] is None
    assert record["chargedUsd"] == record["computedCostUsd"] > 0
    assert record["costBasis"]["pricing"] == "openai"


def test_the_computed_cost_is_the_rehearsal_rate_times_the_tokens() -> None:
    _, record, _ = run("control-completed")
    assert record["chargedUsd"] == pytest.approx((654 * 0.10 + 126 * 0.50) / 1e6)


@pytest.mark.parametrize(("name", "problem"), [
    ("treatment-all-calls-error", "every MCP tool call returned an error (treatment lost): the first call "
                                  "answered \"Error executing tool doc.get: unknown path: 'no/such/file.md' is not "
                                  "a servable file at 000000000000\""),
    ("treatment-cancelled-call", "MCP tool call doc-bridge/doc.write outside the allowed set; "
                                 "MCP tool call doc-bridge/doc.write was cancelled or denied: MCP tool call requires "
                                 "approval, but approval policy is never; every MCP tool call returned an error "
                                 "(treatment lost): the first call answered 'MCP tool call requires approval, but "
                                 "approval policy is never'"),
])
def test_treatment_setup_rules_are_invalid_setup_with_their_problem(name: str, problem: str) -> None:
    code, record, _ = run(name)
    assert code == 1
    assert record["status"] == "invalid-setup"
    assert record["setupProblem"] == problem
    assert record["chargedUsd"] == record["reservedUsd"] == 0.1  # max(reservation, computed)


def test_required_server_that_failed_is_read_from_the_saved_stderr() -> None:
    code, record, _ = run("treatment-required-server-fails")
    assert code == 1 and record["status"] == "invalid-setup"
    assert record["setupProblem"].startswith(
        "the required MCP server failed to start: Error: thread/start: thread/start failed")
    assert record["usageComplete"] is False and record["inputTokens"] is None
    # Without its stderr the stream alone still refuses (no event at all), but cannot say why.
    result = CliRunner().invoke(main, ["transcript", "--agent", "codex", "--scenario", "doc-bridge-mcp",
                                       "--exit-code", "1", "--json", *MODEL,
                                       str(REAL / "treatment-required-server-fails.jsonl")])
    alone = json.loads(result.stdout)
    assert result.exit_code == 1 and alone["status"] == "invalid-setup"
    assert "required MCP server" not in alone["setupProblem"]
    assert alone["setupProblem"].startswith("the first event is not thread.started")


def test_turn_failed_is_failed_and_charged_the_reservation() -> None:
    code, record, _ = run("turn-failed")
    assert code == 1
    assert (record["status"], record["setupProblem"], record["costProblem"]) == ("failed", None, None)
    assert (record["cliSubtype"], record["isError"], record["usageComplete"]) == ("turn.failed", True, False)
    assert record["chargedUsd"] == record["reservedUsd"] == 0.1


def test_mcp_calls_in_the_control_arm_are_invalid_setup() -> None:
    code, record, _ = run("treatment-completed", scenario="repository-only")
    assert code == 1
    assert "(doc-bridge/doc.search) in the repository-only arm" in record["setupProblem"]
    assert record["chargedUsd"] == 0.1


def test_study_file_restricting_the_tools_is_respected(tmp_path: Path) -> None:
    code, record, _ = run("treatment-completed", "--mcp-tools", "doc.search")
    assert code == 1
    assert record["setupProblem"] == "MCP tool call doc-bridge/doc.get outside the allowed set"


def test_malformed_line_is_a_setup_problem_not_skipped(tmp_path: Path) -> None:
    lines = (REAL / "control-completed.jsonl").read_text().splitlines()
    lines.insert(2, "{not json")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(main, ["transcript", "--agent", "codex", str(broken), "--scenario",
                                       "repository-only", "--json", *MODEL])
    record = json.loads(result.stdout)
    assert result.exit_code == 1
    assert (record["status"], record["setupProblem"]) == ("invalid-setup", "line 3 is not JSON")


def test_text_output_is_aligned_lines_naming_the_agent() -> None:
    code, out, _ = run("treatment-all-calls-error", as_json=False)
    assert code == 1
    assert out.splitlines()[0].split() == ["status", "invalid-setup"]
    assert any(line.split(None, 1)[:1] == ["setupProblem"] and line.split(None, 1)[1].startswith(
        "every MCP tool call returned an error (treatment lost): the first call answered") for line in out.splitlines())
    assert "statusReason" not in out  # the same words as setupProblem, shown once
    assert any(line.split()[:2] == ["agent", "codex"] for line in out.splitlines())


@pytest.mark.parametrize("args", [
    ["--agent", "codex", "{missing}", "--scenario", "repository-only", *MODEL],
    ["--agent", "codex", "{dir}", "--scenario", "repository-only", *MODEL],
    ["--agent", "codex", "{good}", "--scenario", "repository-only", "--stderr", "{missing}", *MODEL],
    ["--agent", "codex", "{good}", "--scenario", "repository-only"],  # no --model
    ["--agent", "aider", "{good}", "--scenario", "repository-only", *MODEL],
    ["{good}", "--scenario", "repository-only", "--model", "m", "--stderr", "{good}"],
])
def test_unreadable_input_and_bad_options_exit_2_with_one_error_line(tmp_path: Path, args: list[str]) -> None:
    fill = {"{missing}": str(tmp_path / "absent.jsonl"), "{dir}": str(tmp_path),
            "{good}": str(REAL / "control-completed.jsonl")}
    result = CliRunner().invoke(main, ["transcript", *(fill.get(a, a) for a in args)])
    assert result.exit_code == 2
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if "rror:" in line]  # ours, or click's usage error
    assert len(errors) == 1
