"""Fidelity per arm (issue 44): a control arm's own server is checked and reported exactly like the treatment's.

Real rehearsal pilots of server A (the bundled doc-bridge) against server B (``tests/data/lookup_server.py``) on
Claude Code, Codex (the pinned binaries under bubblewrap, the scripted model servers on 127.0.0.1) and the http
transport. Server B is broken after its health check (``--only-probe``: it answers the preflight's probe and
errors on every other call): the preflight passes, the control arm's attempts record every call to it failed
and end ``invalid-setup`` naming the control arm's server, and the report (every format), the end-of-run
summary and ``agentstudy ledger`` say, per arm, that the control arm's server was not delivered and that the
study cannot answer. (The same study with a healthy server B delivering both arms, on http:
``tests/test_tool_descriptions.py``, whose run of it asserts that too.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.server_word import CHANGED_WORD
from agentstudy.protocol.treatment import CONTROL_SERVER_LOST, TREATMENT_LOST
from agentstudy.rehearsal.example_study import build_example_study

from inprocess_cli import invoke_agentstudy
from study_files import EXAMPLE_STUDY

LOOKUP_SERVER = Path(__file__).resolve().parent / "data" / "lookup_server.py"
AGENTS = {"claude-code": ["--transport", "cli"], "codex": ["--transport", "cli", "--agent", "codex"],
          "http": ["--transport", "http", "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5"]}


def _lookup(*flags: str) -> dict[str, Any]:
    server = {"command": sys.executable, "args": [str(LOOKUP_SERVER), "{root}", *flags]}
    return {"id": "lookup", "label": "Repository tools + lookup", "mcpConfig": {"mcpServers": {"lookup": server}},
            "tools": ["lookup.find_text", "lookup.grep", "lookup.read"],
            "probe": {"tool": "lookup.find_text", "arguments": {"query": "the"}}, "serverConfigCandidates": []}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[str]]:
    """The example study file's document and the ``--root`` flags of its corpora."""
    built = build_example_study(tmp_path_factory.mktemp("arm-fidelity") / "study")
    return json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8")), [f"--root={n}={p}" for n, p in built.roots.items()]


def _pilot(tmp_path: Path, example: tuple[dict[str, Any], list[str]], agent: str, claude_bin: Path,
           *flags: str, concurrency: int = 1) -> tuple[Any, dict[str, Any], Path]:
    """A one-pair rehearsal pilot with server B (``flags``) in the control arm; ``concurrency`` 2 admits both arms'
    attempts at once, so both are recorded although one ends the run."""
    document, roots = example
    document = {**document, "arms": {**document["arms"], "control": _lookup(*flags)}}
    path, ledger = tmp_path / "study.json", tmp_path / "ledger.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    model = (["--model", "rehearsal-scripted"] if agent == "codex"
             else ["--model", "claude-haiku-5-5", "--claude-bin", str(claude_bin)])
    # In this process: what is read is the exit code, the output and the files, not the process itself.
    ran = invoke_agentstudy("study", "--manifest", str(path), "--pilot", "--rehearsal", *roots, "--budget-usd", "1",
                         "--output", str(ledger), "--containment", "bwrap", "--concurrency", str(concurrency),
                         *AGENTS[agent], *model)
    return ran, json.loads(ledger.read_text(encoding="utf-8")), ledger


def _report(ledger: Path, output_format: str) -> str:
    shown = invoke_agentstudy("report", str(ledger), "--format", output_format)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_control_server_broken_after_its_probe_is_not_delivered_and_said_per_arm(
        tmp_path: Path, example: tuple[dict[str, Any], list[str]], agent: str, claude_bin: Path) -> None:
    ran, written, ledger = _pilot(tmp_path, example, agent, claude_bin, "--only-probe", concurrency=2)
    assert ran.returncode == 1, ran.stderr  # an invalid setup stops the run, in either arm
    by_arm = {o["scenario"]: o for o in written["observations"]}
    control = by_arm["repository-only"]
    record = control["treatment"]
    assert control["status"] == "invalid-setup", control
    said = control.get("setupProblem") or control["statusReason"]  # the cli agents' setup problem, http's reason
    assert CONTROL_SERVER_LOST in said and TREATMENT_LOST not in said
    assert record["server"] == "lookup" and record["allCallsFailed"] is True
    assert record["serverCalls"] == record["serverCallErrors"] >= 1

    report = json.loads(_report(ledger, "json"))
    arms = report["treatment"]["arms"]
    assert arms["control"]["server"] == "lookup" and arms["control"]["delivered"] is False
    assert arms["control"]["attemptsUsingServer"] == 0 and arms["control"]["attemptsAllCallsFailed"] == 1
    assert arms["treatment"]["server"] == "doc-bridge"
    assert report["treatment"]["delivered"] is False and "cannot answer" in report["verdict"]
    assert by_arm["doc-bridge-mcp"]["status"] == "completed"  # admitted beside it, the treatment's server delivered
    assert arms["treatment"]["delivered"] is True
    assert report["verdict"].startswith("This study cannot answer whether doc-bridge helps against lookup: "
                                        "the control arm's server was not delivered")
    markdown = _report(ledger, "md")
    assert "The control arm's lookup was used in 0 of 1 control attempts" in markdown
    assert "NOT delivered" in markdown

    summary = json.loads(ran.stdout.strip().splitlines()[-1])["treatment"]
    assert summary["delivered"] is False and summary["control"]["delivered"] is False and "warning" in summary
    assert summary["notDeliveredArm"] == "control" and "WARNING: control arm's server not delivered" in ran.stderr
    shown = invoke_agentstudy("ledger", str(ledger), "--json")
    fidelity = json.loads(shown.stdout)["ledger"]["fidelity"]
    assert fidelity["control"] == arms["control"] and fidelity["notDelivered"]
    text = invoke_agentstudy("ledger", str(ledger)).stdout
    assert "Repository tools + lookup: lookup used in 0 of 1 attempts" in text and "NOT delivered" in text


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_control_servers_word_is_held_to_its_own_preflight(
        tmp_path: Path, example: tuple[dict[str, Any], list[str]], agent: str, claude_bin: Path) -> None:
    """Server B (the control's) passes its preflight, then annotates ``lookup.grep`` ``readOnlyHint: false`` in
    the attempts: the relay withholds that answer and the control's attempt ends ``invalid-setup`` naming B's
    changed tool — B's word held to B's own preflight, while the treatment's server (other tool names, which B
    never lists) is held to its own."""
    ran, written, ledger = _pilot(tmp_path, example, agent, claude_bin, "--changes-word")
    assert ran.returncode == 1, ran.stderr
    by_arm = {o["scenario"]: o for o in written["observations"]}
    control = by_arm["repository-only"]
    assert control["status"] == "invalid-setup", control
    assert control["statusReason"].startswith(CHANGED_WORD), control["statusReason"]
    assert "lookup.grep" in control["statusReason"] and "readOnlyHint: false" in control["statusReason"]
    assert "doc." not in control["statusReason"]  # not compared with the treatment's word
    assert control["treatment"]["serverCalls"] == 0
    if "doc-bridge-mcp" in by_arm:  # the treatment's server, held to its own word, unchanged
        assert by_arm["doc-bridge-mcp"]["status"] == "completed"
    report = json.loads(_report(ledger, "json"))
    assert report["treatment"]["arms"]["control"]["delivered"] is False
