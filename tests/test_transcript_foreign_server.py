"""Issue 18, item 4: ``agentstudy transcript`` checks a foreign server's transcript with a run's MCP options.

The transcript is the real Claude Code 2.1.296 capture of an MCP run (``15-mcp-calls-dontAsk``)
with the server renamed ``filesystem`` and its tools renamed to the filesystem server's; its
verdict under the filesystem options (or a study file naming that server) must be the original
verdict under doc-bridge's, while the built-in doc-bridge policy refuses it as a setup problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main

from study_files import study_document

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
MCP_RUN = TRANSCRIPTS / "15-mcp-calls-dontAsk.stdout.jsonl"
MODEL = "claude-haiku-4-5"
RENAMES = {
    "mcp__doc-bridge__doc_get": "mcp__filesystem__read_file",
    "mcp__doc-bridge__doc_search": "mcp__filesystem__search_files",
    "mcp__doc-bridge__handoff_resolve": "mcp__filesystem__list_directory",
    "mcp__doc-bridge__doc_write": "mcp__filesystem__write_file",
    '"doc-bridge"': '"filesystem"',
}
CONFIG = {"mcpServers": {"filesystem": {"command": "/usr/bin/env",
                                        "args": ["npx", "@modelcontextprotocol/server-filesystem", "{root}"]}}}
TOOLS = "read_file,search_files,list_directory"


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    text = MCP_RUN.read_text(encoding="utf-8")
    for old, new in RENAMES.items():
        text = text.replace(old, new)
    assert "doc-bridge" not in text
    path = tmp_path / "filesystem.stdout.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def _record(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["transcript", *args, "--model", MODEL, "--json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, data


def _refused(*args: str) -> str:
    result: Result = CliRunner().invoke(main, ["transcript", *args, "--model", MODEL], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    return line


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "filesystem-mcp.json"
    path.write_text(json.dumps(CONFIG), encoding="utf-8")
    return path


def _study(tmp_path: Path, **treatment: Any) -> Path:
    document = study_document({"corpus": 1}, 1)
    document["arms"]["treatment"] = {"id": "filesystem-server", "label": "Repository tools + filesystem",
                                     "mcpConfig": CONFIG, "tools": TOOLS.split(","),
                                     "probe": {"tool": "search_files", "arguments": {"pattern": "x"}}, **treatment}
    path = tmp_path / "study.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_built_in_policy_refuses_a_foreign_servers_transcript(foreign: Path) -> None:
    code, record = _record(str(foreign), "--scenario", "doc-bridge-mcp")
    assert code == 1 and record["status"] == "invalid-setup"
    assert "are not exactly one connected 'doc-bridge'" in record["setupProblem"]


def test_the_runs_mcp_options_check_it_as_the_run_would(foreign: Path, tmp_path: Path) -> None:
    _, original = _record(str(MCP_RUN), "--scenario", "doc-bridge-mcp")
    code, record = _record(str(foreign), "--scenario", "doc-bridge-mcp", "--mcp-config", str(_config(tmp_path)),
                           "--mcp-tools", TOOLS, "--mcp-probe", "search_files")
    assert code == 1 and record["status"] == original["status"] == "invalid-setup"
    assert original["setupProblem"] == "tool calls outside the allowed set ['Bash', 'mcp__doc-bridge__doc_write']"
    assert record["setupProblem"] == "tool calls outside the allowed set ['Bash', 'mcp__filesystem__write_file']"
    assert record["toolCalls"] == original["toolCalls"]


def test_a_study_file_gives_the_server_and_its_arm_ids_name_the_scenario(foreign: Path, tmp_path: Path) -> None:
    study = str(_study(tmp_path))
    _, by_flags = _record(str(foreign), "--scenario", "doc-bridge-mcp", "--mcp-config", str(_config(tmp_path)),
                          "--mcp-tools", TOOLS, "--mcp-probe", "search_files")
    _, by_study = _record(str(foreign), "--study", study, "--scenario", "filesystem-server")
    assert by_study == by_flags
    _, widened = _record(str(foreign), "--study", study, "--scenario", "filesystem-server",
                         "--mcp-tools", f"{TOOLS},write_file")
    assert widened["setupProblem"] == "missing tools ['mcp__filesystem__write_file']; tool calls outside the " \
                                      "allowed set ['Bash']", "a typed flag overrides the study file"
    _, control = _record(str(foreign), "--study", study, "--scenario", "plain")
    assert control["scenario"] == "repository-only"


def test_bad_scenarios_studies_and_mcp_options_are_one_line_refusals(foreign: Path, tmp_path: Path) -> None:
    assert "--scenario 'kb-server' is not one of repository-only, doc-bridge-mcp" in _refused(
        str(foreign), "--scenario", "kb-server")
    missing = tmp_path / "nope.json"
    assert _refused(str(foreign), "--scenario", "doc-bridge-mcp", "--study", str(missing)).startswith(
        "agentstudy: error: --study: ")
    assert "MCP config not found" in _refused(str(foreign), "--scenario", "doc-bridge-mcp",
                                              "--mcp-config", str(missing))
    assert "--mcp-probe" in _refused(str(foreign), "--scenario", "doc-bridge-mcp", "--mcp-tools", "a.b",
                                     "--mcp-probe", "c.d")
