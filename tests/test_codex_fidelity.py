"""Codex's treatment records compare the arms too (issue 28 items 2 and 3): a built-in tool set hash derived from
what decides Codex's tools, and an honest "not measurable" where Codex reports no per-request usage.

Real parts: ``agentstudy demo --agent codex`` (the real pinned Codex CLI against the scripted Responses API
server on 127.0.0.1, the bundled MCP server, bubblewrap) and the real report and ledger commands.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.treatment import tool_set_sha256
from agentstudy.transports.codex_args import builtin_tool_basis, codex_arguments, config_toml

from codex_attempts import SENTINELS

NOT_MEASURABLE = "not measurable for this agent"


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("codex-fidelity") / "demo"
    result = CliRunner().invoke(main, ["demo", "--agent", "codex", "--output-dir", str(directory)],
                                env={**os.environ, **SENTINELS})
    assert result.exit_code == 0, result.output
    return directory / "ledger.json"


def _document(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_basis_is_what_decides_codexs_tools_and_the_same_in_both_arms() -> None:
    basis = builtin_tool_basis(model="gpt-5.5", output_schema=False)
    config = tomllib.loads(config_toml(model="gpt-5.5", provider=None, mcp=None))
    assert basis["config"] == config  # the whole control configuration: model, features, web search, sub-agents
    assert basis["arguments"] == codex_arguments(export_dir="{export}", prompt="{prompt}")
    assert "-s" in basis["arguments"] and "read-only" in basis["arguments"]
    other = builtin_tool_basis(model="gpt-5.5", output_schema=True)
    assert tool_set_sha256(other) != tool_set_sha256(basis)  # a flag Codex is given changes the hash


def test_real_codex_records_the_builtin_tool_hash_and_no_first_request_size(ledger: Path) -> None:
    observations = {o["scenario"]: o["treatment"] for o in _document(ledger)["observations"]}
    model = _document(ledger)["model"]
    expected = tool_set_sha256(builtin_tool_basis(model=model, output_schema=False))
    assert observations["repository-only"]["builtinToolsSha256"] == expected
    assert observations["doc-bridge-mcp"]["builtinToolsSha256"] == expected
    assert all("firstRequestInputTokens" not in record for record in observations.values())


def test_every_report_format_says_why_codex_has_no_tool_definition_overhead(ledger: Path) -> None:
    report = json.loads(_run("report", str(ledger), "--format", "json"))
    assert report["treatment"]["toolDefinitionTokens"] is None
    assert NOT_MEASURABLE in report["treatment"]["toolDefinitionTokensNote"]
    assert report["treatment"]["armDifferences"] == []
    for output_format in ("text", "md", "html"):
        first_screen = _run("report", str(ledger), "--format", output_format).split("About this report")[0]
        assert NOT_MEASURABLE in first_screen, output_format


def test_codex_arms_with_different_builtin_tools_are_flagged(ledger: Path, tmp_path: Path) -> None:
    document = _document(ledger)
    control = next(o for o in document["observations"] if o["scenario"] == "repository-only")
    control["treatment"]["builtinToolsSha256"] = tool_set_sha256(builtin_tool_basis(model="gpt-other",
                                                                                   output_schema=False))
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(seal_ledger(document)), encoding="utf-8")
    flagged = "The agent's built-in tools differed between attempts (2 different tool sets"
    assert flagged in "\n".join(_run("report", str(changed), "--format", "md").splitlines()[:30])
    assert flagged in _run("ledger", str(changed))
