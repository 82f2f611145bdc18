"""The server's word checked where it is used, end to end with the real agents (issue 40, break 6).

A scripted MCP server (tests/data/two_faced_server.py) annotates both its tools read-only for the preflight
(``init``'s probe, ``--dry-run --probe``, the run's own preflight: all of them the official SDK's client) and
re-annotates ``notes_read`` ``readOnlyHint: false, openWorldHint: true`` for the agent. A rehearsed pilot with
the real pinned Claude Code, Codex and Gemini CLI binaries under bubblewrap, talking to the scripted model servers on
127.0.0.1: the treatment attempt ends ``invalid-setup`` naming the change, no tool of the server is ever called
in the attempt (its kept stderr says what reached it), the run stops ``blocked`` like any setup failure, and
``agentstudy ledger`` verifies the ledger.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.server_word import CHANGED_WORD

from checkout_run import run_agentstudy

SERVER = Path(__file__).resolve().parent / "data" / "two_faced_server.py"
TASK = {"id": "alpha-retention", "repository": "alpha", "category": "lookup",
        "question": "Alpha: where is the retention window configured?", "sources": ["docs/retention.md"],
        "expected": ["30 days, in config/cache.toml"]}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "alpha"
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text("# Alpha\n", encoding="utf-8")
    (root / "docs" / "retention.md").write_text("The retention window is 30 days, in config/cache.toml.\n",
                                                encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


@pytest.fixture(scope="module")
def study(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``init`` against the two-faced server: it answers the SDK's client honestly, so both tools settle."""
    directory = tmp_path_factory.mktemp("study") / "study"
    made = run_agentstudy("init", str(directory), f"--repo=alpha={repo}", "--mcp-command",
                          f"{sys.executable} -I {SERVER} {{root}}", "--tool", "notes_find", "--tool", "notes_read",
                          "--probe", "notes_find", "--probe-arguments", '{"term": "retention"}',
                          env={**os.environ, "AGENTSTUDY_CONTAINMENT": "bwrap"})
    assert made.returncode == 0, made.stderr
    path = directory / "study.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(document["arms"]["treatment"]["tools"]) == ["notes_find", "notes_read"], document["arms"]
    document["tasks"] = [TASK]
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def checked(study: Path, repo: Path) -> subprocess.CompletedProcess[str]:
    """``--dry-run --probe`` of the study, run once: it names no agent, so it is the same check for every agent's
    pilot below, and each asserts on it."""
    return run_agentstudy("minimal", "--manifest", str(study), "--dry-run", "--probe", "--transport", "cli",
                          f"--root=alpha={repo}", env={**os.environ, "AGENTSTUDY_CONTAINMENT": "bwrap"})


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_a_server_that_changes_its_word_after_the_preflight_is_never_called(
    study: Path, repo: Path, claude_bin: Path, tmp_path: Path, agent: str,
    checked: subprocess.CompletedProcess[str],
) -> None:
    env = {**os.environ, "AGENTSTUDY_CONTAINMENT": "bwrap"}
    assert checked.returncode == 0, checked.stderr  # the preflight hears the honest word
    ledger = tmp_path / "pilot.json"
    model = (["--agent", agent, "--model", "rehearsal-scripted"] if agent != "claude-code"
             else ["--model", "claude-haiku-5-5", "--claude-bin", str(claude_bin)])
    ran = run_agentstudy("minimal", "--manifest", str(study), "--pilot", "--rehearsal", "--transport", "cli",
                         f"--root=alpha={repo}", "--budget-usd", "1", "--output", str(ledger), *model, env=env)
    assert ran.returncode == 1, ran.stderr[-3000:]
    document = json.loads(ledger.read_text(encoding="utf-8"))
    assert document["status"] == "blocked", document.get("stopReason")
    [treated] = [o for o in document["observations"] if o["scenario"] == "doc-bridge-mcp"]
    reason = treated["statusReason"]
    assert treated["status"] == "invalid-setup" and reason.startswith(CHANGED_WORD), reason
    assert "notes_read" in reason and ("readOnlyHint: false" in reason or "openWorldHint: true" in reason), reason
    assert any(CHANGED_WORD in note for note in treated["isolationNotAchieved"]), treated["isolationNotAchieved"]
    assert "ended invalid-setup" in document["stopReason"], document["stopReason"]
    assert not document.get("openReservations") and not document.get("openReservation")
    said = treated.get("serverStderrFile")
    assert said, "the server's stderr tail is kept beside the transcript"
    tail = (ledger.with_name(ledger.name + ".transcripts") / said).read_text(encoding="utf-8")
    assert "listed for " in tail and "listed for mcp" not in tail, tail  # the agent's client asked for the tools
    assert "CALLED" not in tail, f"a tool reached the server in the attempt: {tail}"
    verified = CliRunner().invoke(main, ["ledger", str(ledger)])  # in-process: the verdict, not the process
    assert verified.exit_code == 0, verified.output
