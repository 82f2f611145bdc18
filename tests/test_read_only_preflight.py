"""Read-only is verified, not typed: ``agentstudy minimal`` reads the live annotations at preflight.

A real MCP server (``tests/data/annotated_server.py``, official SDK) lists tools annotated
read-only, destructive, ``readOnlyHint: false`` and not at all; the example study's corpora
serve as checkouts. Refusals are one line, exit 2, before any reservation, and write nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

SERVER = Path(__file__).resolve().parent / "data" / "annotated_server.py"
ANNOTATED, DECLARED = "annotated read-only by the server", "declared read-only by the operator"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("read-only") / "study")


def _mcp_config(tmp_path: Path, log: Path) -> Path:
    config = tmp_path / "notes-mcp.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {
        "type": "stdio", "command": sys.executable, "args": [str(SERVER)], "env": {"NOTES_LOG": str(log)}}}}),
        encoding="utf-8")
    return config


def _args(study: ExampleStudy, tmp_path: Path, tools: str, probe: str = "notes.find") -> list[str]:
    """The test server logs its calls to a host file, which a bubblewrap sandbox would hide: restricted."""
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", *roots, "--containment", "restricted",
            "--output", str(tmp_path / "ledger.json"), "--model", "claude-haiku-5-5", "--budget-usd", "1",
            "--rehearsal", "--mcp-config", str(_mcp_config(tmp_path, tmp_path / "calls.log")),
            "--mcp-tools", tools, "--mcp-probe", probe, "--mcp-probe-arguments", '{"term": "retry"}']


def _http(study: ExampleStudy, tmp_path: Path, tools: str, probe: str = "notes.find") -> Result:
    args = [*_args(study, tmp_path, tools, probe), "--transport", "http",
            "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5"]
    return CliRunner().invoke(main, args, env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)


@pytest.mark.parametrize(
    ("tools", "reason"),
    [
        ("notes.find,notes.purge", "--mcp-tools names notes.purge, which the server annotates destructiveHint: true"),
        ("notes.edit,notes.find", "--mcp-tools names notes.edit, which the server annotates readOnlyHint: false"),
    ],
)
def test_a_named_tool_annotated_as_not_read_only_refuses_the_run_before_anything(
    study: ExampleStudy, tmp_path: Path, tools: str, reason: str
) -> None:
    result = _http(study, tmp_path, tools)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("agentstudy: error: run refused, nothing reserved: ") and line.endswith(reason)
    assert not (tmp_path / "ledger.json").exists()
    assert not (tmp_path / "calls.log").exists(), "the freshness probe is never called"


def test_a_probe_outside_the_read_only_tools_is_refused_before_any_server_starts(
    study: ExampleStudy, tmp_path: Path
) -> None:
    result = _http(study, tmp_path, "notes.find,notes.raw", probe="notes.purge")
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line == "agentstudy: error: --mcp-probe notes.purge is not one of --mcp-tools (notes.find,notes.raw)"
    assert not (tmp_path / "ledger.json").exists() and not (tmp_path / "calls.log").exists()


def test_a_tool_named_twice_is_refused_before_any_server_starts(study: ExampleStudy, tmp_path: Path) -> None:
    result = _http(study, tmp_path, "notes.find,notes.raw,notes.find")
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line == "agentstudy: error: --mcp-tools names notes.find twice"
    assert not (tmp_path / "ledger.json").exists() and not (tmp_path / "calls.log").exists()


def _ledger(tmp_path: Path) -> dict[str, Any]:
    ledger: dict[str, Any] = json.loads((tmp_path / "ledger.json").read_text(encoding="utf-8"))
    assert ledger["rehearsal"] is True and ledger["status"] == "awaiting-adjudication"
    assert ledger["mcpServer"]["name"] == "notes"
    return ledger


def test_an_unannotated_tool_is_allowed_when_named_and_the_ledger_says_on_whose_word(
    study: ExampleStudy, tmp_path: Path
) -> None:
    result = _http(study, tmp_path, "notes.find,notes.raw")
    assert result.exit_code == 0, result.output
    server = _ledger(tmp_path)["mcpServer"]
    assert server["readOnlyEvidence"] == {"notes.find": ANNOTATED, "notes.raw": DECLARED}
    assert server["deniedTools"] == ["notes.edit", "notes.environment", "notes.purge"]
    assert (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines()[0] == "notes.find"


def test_the_cli_transport_records_the_same_evidence(study: ExampleStudy, tmp_path: Path, claude_bin: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("AGENTSTUDY_CLAUDE_BIN", None)
    result = subprocess.run(
        [sys.executable, "-m", "agentstudy", *_args(study, tmp_path, "notes.raw,notes.find"),
         "--transport", "cli", "--claude-bin", str(claude_bin)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    ledger = _ledger(tmp_path)
    assert ledger["mcpServer"]["readOnlyEvidence"] == {"notes.raw": DECLARED, "notes.find": ANNOTATED}
    assert ledger["mcpServer"]["deniedTools"] == [
        "mcp__notes__notes_edit", "mcp__notes__notes_environment", "mcp__notes__notes_purge"]
    assert sorted(ledger["observations"][1]["tools"]) == [
        "Glob", "Grep", "Read", "mcp__notes__notes_find", "mcp__notes__notes_raw"]
