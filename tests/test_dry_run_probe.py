"""Issue 18, item 5: ``--dry-run --probe`` starts the real server once per checkout; a failed probe speaks.

Real servers only: the bundled doc-bridge and ``tests/data/broken_server.py`` (official SDK),
contained with bubblewrap exactly as the run's preflight contains them. A failed probe shows
the server's own error text on one line, bounded, with its configured secret redacted;
nothing is reserved or written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.io.mcp_child import SERVER_TEXT_BYTES
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

BROKEN = Path(__file__).resolve().parent / "data" / "broken_server.py"
SECRET = "s3cr3t-value-8841"
REASON = "Repository path '{root}' is outside the allowed repository /srv/allowed"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("probe") / "study")


def _invoke(args: list[str]) -> Result:
    env = {"STUDY_BUDGET_USD": None, "STUDY_MODEL": None, "AGENTSTUDY_CONTAINMENT": None,
           "ANTHROPIC_API_KEY": None}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _dry(study: ExampleStudy, *extra: str, roots: bool = True) -> list[str]:
    given = [f"--root={name}={path}" for name, path in study.roots.items()] if roots else []
    return ["minimal", "--manifest", str(study.manifest_path), "--dry-run", *given, *extra]


def _config(tmp_path: Path, command: str, *args: str) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"broken": {
        "command": command, "args": list(args), "env": {"BROKEN_TOKEN": SECRET}}}}), encoding="utf-8")
    return path


def _broken(tmp_path: Path, mode: str) -> list[str]:
    return ["--mcp-config", str(_config(tmp_path, sys.executable, str(BROKEN), mode)),
            "--mcp-tools", "repo.search,repo.read", "--mcp-probe", "repo.search"]


def _refused(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("agentstudy: error: "), line
    return line


def test_probe_lists_the_bundled_servers_tools_with_annotations_once_per_checkout(
    study: ExampleStudy, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.json"
    result = _invoke(_dry(study, "--probe", "--output", str(ledger)))
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    server = report["mcpProbe"]
    assert server["name"] == "doc-bridge" and server["containment"].startswith("bwrap ")
    assert server["serversStarted"] == 3 and server["checkouts"] == sorted(study.roots)
    tools = {tool["name"]: tool for tool in server["tools"]}
    assert sorted(tools) == ["doc.get", "doc.search", "doc.write", "handoff.resolve"]
    assert tools["doc.write"]["allowed"] is False and tools["doc.write"]["readOnlyEvidence"] is None
    assert tools["doc.write"]["annotations"]["destructiveHint"] is True
    assert tools["doc.search"] == {
        "name": "doc.search", "cliName": "mcp__doc-bridge__doc_search", "allowed": True,
        "readOnlyEvidence": "annotated read-only by the server",
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                        "openWorldHint": False},
    }
    assert server["probe"] == {"tool": "doc.search", "ok": True}
    assert report["claudeProcesses"] == 0
    assert "doc.write" in result.stderr and "no (denied)" in result.stderr
    assert "nothing was reserved or written" in result.stderr
    assert not ledger.exists()


def test_the_pilot_probe_starts_only_the_mcp_arms_checkout_and_empty_candidates_need_no_config_file(
    study: ExampleStudy,
) -> None:
    # One probe for both: which checkouts a pilot starts does not depend on the config candidates.
    result = _invoke(_dry(study, "--probe", "--pilot", "--server-config-candidates", ""))
    assert result.exit_code == 0, result.output
    server = json.loads(result.stdout)["mcpProbe"]
    assert server["serversStarted"] == 1 and server["checkouts"] == ["lantern-cache"]
    assert server["probe"]["ok"] is True


def test_probe_needs_dry_run_and_the_roots(study: ExampleStudy) -> None:
    without_dry_run = [arg for arg in _dry(study, "--probe", "--pilot") if arg != "--dry-run"]
    assert "--probe goes with --dry-run" in _refused(_invoke(without_dry_run))
    assert "missing --root" in _refused(_invoke(_dry(study, "--probe", roots=False)))


def test_without_probe_the_dry_run_starts_no_server(study: ExampleStudy, tmp_path: Path) -> None:
    result = _invoke(_dry(study, *_broken(tmp_path, "crash")))
    assert result.exit_code == 0, result.output
    assert "mcpProbe" not in json.loads(result.stdout)


@pytest.mark.parametrize("mode", ["refuse", "raise"])
def test_a_failed_probe_shows_the_servers_own_error_bounded_and_scrubbed(
    study: ExampleStudy, tmp_path: Path, mode: str
) -> None:
    line = _refused(_invoke(_dry(study, "--probe", "--pilot", *_broken(tmp_path, mode))))
    assert "MCP probe failed, nothing reserved or written: lantern-cache: MCP freshness probe repo.search " \
           "failed at the pin: " in line
    assert REASON in line
    assert SECRET not in line
    if mode == "refuse":
        assert "(token=[redacted]; env [redacted])" in line
        assert line.endswith("xxx…"), "the 5,000 bytes of padding are cut"
        assert len(line.encode()) < SERVER_TEXT_BYTES + 200


def test_a_server_that_dies_shows_its_stderr_scrubbed(study: ExampleStudy, tmp_path: Path) -> None:
    line = _refused(_invoke(_dry(study, "--probe", "--pilot", *_broken(tmp_path, "crash"))))
    assert "could not be probed: MCPError: Connection closed (server stderr: " in line
    assert line.endswith(f"{REASON} (token=[redacted]; env [redacted]))")
    assert SECRET not in line and len(line.encode()) < SERVER_TEXT_BYTES + 800


def test_config_placeholder_with_the_default_candidates_says_what_to_do(study: ExampleStudy, tmp_path: Path) -> None:
    config = _config(tmp_path, sys.executable, str(BROKEN), "refuse", "--config", "{config}")
    line = _refused(_invoke(_dry(study, "--probe", "--pilot", "--mcp-config", str(config),
                                 "--mcp-tools", "repo.search", "--mcp-probe", "repo.search")))
    assert "lantern-cache: no MCP server config file in the pinned corpus for {config} (tried " \
           "--server-config-candidates doc-bridge.config.ts," in line
    assert "pass --server-config-candidates FILE[,FILE...]" in line
    assert 'pass --server-config-candidates "" (no config file)' in line


def test_empty_candidates_refuse_a_config_placeholder(study: ExampleStudy, tmp_path: Path) -> None:
    config = _config(tmp_path, sys.executable, str(BROKEN), "refuse", "--config", "{config}")
    line = _refused(_invoke(_dry(study, "--mcp-config", str(config), "--server-config-candidates", "",
                                 "--mcp-tools", "repo.search", "--mcp-probe", "repo.search")))
    assert "name {config} but --server-config-candidates is empty" in line


def test_a_run_refused_by_its_preflight_shows_the_servers_words_too(study: ExampleStudy, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    args = [arg for arg in _dry(study, "--pilot", "--rehearsal", "--model", "claude-haiku-5-5", "--budget-usd", "1",
                                "--output", str(ledger), *_broken(tmp_path, "refuse")) if arg != "--dry-run"]
    line = _refused(_invoke(args))
    assert "run refused, nothing reserved: lantern-cache: MCP freshness probe repo.search failed at the pin: " \
           f"{REASON} (token=[redacted]; env [redacted])" in line
    assert SECRET not in line and not ledger.exists()
