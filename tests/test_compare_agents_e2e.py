"""Comparing two server configurations on Claude Code and Codex, for real (issue 44, "Must show").

Nothing is mocked: the pinned Claude Code and Codex binaries under bubblewrap, the scripted model servers on
127.0.0.1, the example study's corpora, and two servers: the bundled one and ``tests/data/lookup_server.py``
(other tool names). Piloted: server A against server B (each arm's server probed, contained and recorded in
its own observations), and one server against its own description rewrite, where the rewrite reaches the
agent's request (the scripted agent searches with the tool the rewritten description recommends, and Claude
Code's first request grows by the longer description).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentstudy.rehearsal.example_study import build_example_study

from inprocess_cli import invoke_agentstudy
from study_files import EXAMPLE_STUDY

LOOKUP_SERVER = Path(__file__).resolve().parent / "data" / "lookup_server.py"
REWRITE = "Use this first for every lookup: matches lines of the documentation against a pattern."
AGENTS = {"claude-code": [], "codex": ["--agent", "codex", "--model", "rehearsal-scripted"]}


def _lookup(arm_id: str, label: str, **extra: Any) -> dict[str, Any]:
    server = {"command": sys.executable, "args": [str(LOOKUP_SERVER), "{root}"]}
    return {"id": arm_id, "label": label, "mcpConfig": {"mcpServers": {"lookup": server}},
            "tools": ["lookup.find_text", "lookup.grep", "lookup.read"],
            "probe": {"tool": "lookup.find_text", "arguments": {"query": "the"}}, "serverConfigCandidates": [],
            **extra}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[str]]:
    """The example study file's document and the ``--root`` flags of its corpora."""
    built = build_example_study(tmp_path_factory.mktemp("compare-example") / "study")
    return json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8")), [f"--root={n}={p}" for n, p in built.roots.items()]


def _names(tools: Any) -> set[str]:
    """Tool names as every agent records them (Claude Code's carry underscores for dots)."""
    return {name.replace(".", "_") for name in tools}


def _calls(record: dict[str, Any], tool: str) -> int:
    return sum(n for name, n in record["serverCallsByTool"].items() if name.replace(".", "_") == tool)


def _pilot(tmp_path: Path, document: dict[str, Any], roots: list[str], agent: str, claude_bin: Path
           ) -> dict[str, dict[str, Any]]:
    path, ledger = tmp_path / "study.json", tmp_path / "ledger.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    model = AGENTS[agent] or ["--model", "claude-haiku-5-5", "--claude-bin", str(claude_bin)]
    ran = invoke_agentstudy("study", "--manifest", str(path), "--pilot", "--rehearsal", "--transport", "cli", *roots,
                         "--budget-usd", "1", "--output", str(ledger), "--containment", "bwrap", *model)
    assert ran.returncode == 0, ran.stderr
    written = json.loads(ledger.read_text(encoding="utf-8"))
    observations = {o["scenario"]: o for o in written["observations"]}
    assert [o["status"] for o in observations.values()] == ["completed", "completed"], ran.stderr
    return {"ledger": written, **observations}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_server_a_against_server_b(tmp_path: Path, example: tuple[dict[str, Any], list[str]], agent: str,
                                   claude_bin: Path) -> None:
    document, roots = example
    document = {**document, "arms": {**document["arms"], "control": _lookup("lookup", "Repository tools + lookup")}}
    run = _pilot(tmp_path, document, roots, agent, claude_bin)
    control, treatment = run["repository-only"], run["doc-bridge-mcp"]
    assert control["treatment"]["server"] == "lookup" and control["treatment"]["serverCalls"] >= 1
    assert _names(control["treatment"]["offeredServerTools"]) <= {"lookup_find_text", "lookup_grep", "lookup_read"}
    assert treatment["treatment"]["server"] == "doc-bridge" and treatment["treatment"]["serverCalls"] >= 1
    assert not _names(control["treatment"]["serverCallsByTool"]) & _names(treatment["treatment"]["serverCallsByTool"])
    for observation in (control, treatment):  # each arm's server contained, said per attempt
        assert any("MCP server" in line for line in observation["isolationAchieved"]), observation
    arms = run["ledger"]["arms"]
    assert [arm.get("mcpServer") for arm in arms] == ["lookup", "doc-bridge"]
    assert all(len(arm["toolsListSha256"]) == 64 for arm in arms)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_server_against_its_own_description_rewrite(tmp_path: Path, example: tuple[dict[str, Any], list[str]],
                                                      agent: str, claude_bin: Path) -> None:
    document, roots = example
    document = {**document, "arms": {"control": _lookup("own", "lookup, own descriptions"),
                                     "treatment": _lookup("rewritten", "lookup, rewritten",
                                                          toolDescriptions={"lookup.grep": REWRITE})}}
    run = _pilot(tmp_path, document, roots, agent, claude_bin)
    control, treatment = run["repository-only"]["treatment"], run["doc-bridge-mcp"]["treatment"]
    assert _calls(control, "lookup_find_text") >= 1
    assert _calls(treatment, "lookup_grep") >= 1
    assert _calls(treatment, "lookup_find_text") == 0  # the rewrite reached the agent's request
    if agent == "claude-code":  # the longer description, in the first request's prompt tokens
        assert treatment["firstRequestInputTokens"] > control["firstRequestInputTokens"]
    arms = run["ledger"]["arms"]
    assert arms[1]["shownDescriptions"]["lookup.grep"] == REWRITE != arms[0]["shownDescriptions"]["lookup.grep"]
