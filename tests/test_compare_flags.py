"""A comparison study's servers are its study file's (issue 44): the ``--mcp-*`` flags replace the treatment arm's
values only, so with a study file whose control arm runs a server of its own each one is refused — one line, exit
2, nothing written — while a study file without one keeps taking them as before."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main

from study_files import study_document

CONTROL_SERVER = {"mcpConfig": {"mcpServers": {"kb2": {"command": "/usr/bin/kb2", "args": ["{root}"]}}},
                  "tools": ["kb2.find"], "probe": {"tool": "kb2.find", "arguments": {"term": "the"}}}


def _study(tmp_path: Path, control_server: bool) -> Path:
    document: dict[str, Any] = copy.deepcopy(study_document({"solo": 1}, 1))
    if control_server:
        document["arms"]["control"].update(CONTROL_SERVER)
    path = tmp_path / "study.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _dry_run(path: Path, *flags: str) -> Result:
    return CliRunner().invoke(main, ["study", "--manifest", str(path), "--dry-run", *flags],
                              env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)


@pytest.mark.parametrize(("flags", "named"), [
    (["--mcp-tools", "kb.search"], "--mcp-tools"),
    (["--mcp-probe", "kb.search"], "--mcp-probe"),
    (["--mcp-probe-arguments", "{}"], "--mcp-probe-arguments"),
    (["--server-config-candidates", ""], "--server-config-candidates"),
    (["--sandbox-bind", "/usr/share"], "--sandbox-bind"),
    (["--mcp-config", "mcp.json"], "--mcp-config"),
])
def test_an_mcp_flag_with_a_comparison_study_is_one_line_and_exit_2(tmp_path: Path, flags: list[str],
                                                                     named: str) -> None:
    output = tmp_path / "ledger.json"
    result = _dry_run(_study(tmp_path, control_server=True), *flags, "--output", str(output))
    assert result.exit_code == 2, result.output
    assert not result.stdout and not output.exists()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"agentstudy: error: {named} would change only the treatment arm of a comparison "
                               "study"), lines[0]
    assert "arms.control" in lines[0]


def test_without_a_control_server_the_flags_replace_the_treatment_arms_values(tmp_path: Path) -> None:
    path = _study(tmp_path, control_server=False)
    assert json.loads(path.read_text(encoding="utf-8"))["arms"]["treatment"]["tools"] != ["kb.search"]
    result = _dry_run(path, "--mcp-tools", "kb.search")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["mcpServer"]["tools"] == ["kb.search"]
    compared = _dry_run(_study(tmp_path, control_server=True))  # the file alone: both servers as written
    assert compared.exit_code == 0, compared.output
    control = json.loads(compared.stdout)["arms"][0]
    assert control["mcpServer"] == "kb2" and control["offeredTools"] == ["kb2.find"]


def test_the_help_says_which_arm_the_flags_change() -> None:
    shown = " ".join(CliRunner().invoke(main, ["study", "--help"]).output.split())
    assert "replace its treatment arm's values only" in shown and "(a comparison) refuses them" in shown
