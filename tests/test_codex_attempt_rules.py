"""Every Codex setup rule through the real attempt path with the real pinned binary (issue 21 item 6): a required
MCP server that fails to start, a declared tool approved, every MCP call erroring, a malformed line, a version
mismatch — each with its status and problem text."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.rehearsal.example_study import build_corpus_repository, build_example_study
from agentstudy.rehearsal.responses_variants import erroring_calls, first_call
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER

from codex_attempts import broken_server, codex_binary, run_codex_attempt


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("codex-rules") / "harbor-playbook"
    return root, build_corpus_repository("harbor-playbook", root)


def test_a_required_server_that_fails_to_start_is_invalid_setup(corpus: tuple[Path, str]) -> None:
    result, server = run_codex_attempt(*corpus, DOC_BRIDGE_MCP, spec=broken_server())
    assert result.status == "invalid-setup"
    assert result.exit_code == 1
    [problem, *_] = result.setup_problems
    assert problem.startswith("the required MCP server failed to start: ")
    # Codex words it by timing: "required MCP servers failed to initialize: doc-bridge", or the broken pipe of
    # its initialize request when the server has already died (seen under load)
    assert ("required MCP servers failed to initialize: doc-bridge" in problem
            or ("Broken pipe" in problem and "initialize request" in problem)), problem
    assert server.requests == ()  # Codex refused before asking the model anything


def test_a_declared_destructive_tool_never_reaches_the_server(corpus: tuple[Path, str]) -> None:
    # A spec that declares the bundled server's doc.write (annotated destructiveHint: true) past the preflight:
    # the attempt's relay holds the server's tools/list to the preflight's read-only rule, offers the agent no tool
    # of that server and ends the attempt invalid-setup naming the annotation (the server's word is checked where
    # it is used). Every other declared tool is approved for Codex: tests/test_any_server_both_agents_e2e.py.
    spec = McpServerSpec(name="doc-bridge", command=DEFAULT_MCP_SERVER.command,
                         read_only_tools=("doc.search", "doc.get", "doc.write"),
                         sandbox_binds=DEFAULT_MCP_SERVER.sandbox_binds)
    policy = first_call("mcp__doc_bridge__doc_write", {"path": "NOTES.md", "text": "x"})
    result, _ = run_codex_attempt(*corpus, DOC_BRIDGE_MCP, spec=spec, policy=policy)
    assert result.status == "invalid-setup", result.setup_problems
    problems = " ".join(result.setup_problems)
    assert "doc.write" in problems and "destructiveHint: true" in problems, problems
    assert "no tool of it was offered to the agent" in problems, problems


def test_every_mcp_call_erroring_loses_the_treatment(corpus: tuple[Path, str]) -> None:
    result, _ = run_codex_attempt(*corpus, DOC_BRIDGE_MCP, policy=erroring_calls)
    assert result.status == "invalid-setup"
    assert any(p.startswith("every MCP tool call returned an error (treatment lost): the first call answered ")
               for p in result.setup_problems), result.setup_problems
    assert result.fields["tool_errors_by_name"] == {"mcp__doc-bridge__doc_get": result.fields["tool_calls"]}


def test_a_malformed_line_is_invalid_setup(corpus: tuple[Path, str], tmp_path: Path) -> None:
    # A fake codex: the real binary, with one non-JSON line injected after its first event. Restricted
    # containment, because the wrapper calls the real binary by its path outside the wrapper's own install.
    wrapper = tmp_path / "codex"
    wrapper.write_text(f'#!/bin/sh\n"{codex_binary()}" "$@" | {{ IFS= read -r first; printf "%s\\n" "$first"; '
                       f'echo "Warning: not JSON"; cat; }}\n')
    wrapper.chmod(0o755)
    result, _ = run_codex_attempt(*corpus, REPOSITORY_ONLY, binary=wrapper, containment="restricted")
    assert result.status == "invalid-setup"
    assert result.setup_problems == ("line 2 is not JSON",)


def test_a_version_mismatch_refuses_the_run(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    roots = [arg for name, root in study.roots.items() for arg in ("--root", f"{name}={root}")]
    args = ["minimal", "--manifest", str(study.manifest_path), "--transport", "cli", "--agent", "codex",
            "--agent-version", "0.170.0", "--rehearsal", "--pilot", "--model", "rehearsal-scripted",
            "--budget-usd", "1", "--output", str(tmp_path / "ledger.json"), *roots]
    result = CliRunner().invoke(main, args, env={**os.environ, "OPENAI_API_KEY": "sk-parent-SENTINEL"})
    assert result.exit_code == 2, result.output
    assert "run refused, nothing reserved: codex --version printed 'codex-cli 0.171.0', not 'codex-cli 0.170.0'" \
        in result.output
    assert not (tmp_path / "ledger.json").exists()
    assert subprocess.run([str(codex_binary()), "--version"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, check=True).stdout.strip() \
        == "codex-cli 0.171.0"
