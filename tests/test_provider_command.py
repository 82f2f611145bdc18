"""``agentstudy provider``'s refusals of bad arguments and bad requests (exit 2, nothing on stdout; issue 34)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from test_controlled_run_support import cli


def _run(*args: str, stdin: bytes) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["provider", *args], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("args", "stdin", "says"), [
    (["codex"], b"{}", "--model is required"),
    (["codex", "--model", "GPT 5"], b"{}", "not a model reference"),
    (["codex", "--rehearsal", "--max-usd", "-1"], b"{}", "--max-usd must be a positive number"),
    (["codex", "--rehearsal"], b"not json", "is not valid JSON"),
    (["claude-code", "--rehearsal"], json.dumps({"protocol": "doc-bridge.study-adjudicator.v1"}).encode(),
     "not a doc-bridge.study-provider.v1 request"),
    (["claude-code", "--rehearsal", "--adjudicator"], json.dumps({"protocol": "doc-bridge.study-provider.v1"}).encode(),
     "not a doc-bridge.study-adjudicator.v1 request"),
])
def test_bad_arguments_and_requests_are_refused_in_one_line(args: list[str], stdin: bytes, says: str) -> None:
    code, stdout, stderr = _run(*args, stdin=stdin)
    assert (code, stdout) == (2, "")
    lines = [line for line in stderr.splitlines() if line.startswith("agentstudy: error: ")]
    assert len(lines) == 1 and says in lines[0], stderr


def test_the_command_is_listed_without_an_issue_number() -> None:
    listing = cli("--help").stdout
    assert "provider" in listing
    help_text = cli("provider", "--help").stdout
    assert "issue" not in help_text.lower() and "--rehearsal" in help_text and "--adjudicator" in help_text
    unknown = cli("provider", "aider")
    assert unknown.exit_code == 2 and "'aider' is not one of 'claude-code', 'codex', 'gemini'" in unknown.stderr
