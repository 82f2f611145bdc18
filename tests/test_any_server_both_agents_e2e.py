"""From ``init`` to a rehearsed pilot on both agents, for servers nobody on the project wrote (issue 32).

Nothing is mocked: ``@modelcontextprotocol/server-filesystem`` 2026.8.31 (installed by scripts/setup.sh in
.tools) and a small stdio server written here with the official ``mcp`` SDK whose tools carry no
``readOnlyHint`` and whose read needs an id an earlier search returned; a real git repository; the real
pinned Claude Code and Codex binaries under bubblewrap talking to the scripted model servers on 127.0.0.1.
Each study is drafted by ``init``, settled on the command line, checked with ``--dry-run --probe``
(with Codex's own check of the tool set) and piloted; the ledger's treatment record shows the server used.
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

REPO = Path(__file__).resolve().parents[1]
FILESYSTEM = REPO / ".tools" / "mcp-server-filesystem" / "node_modules" / ".bin" / "mcp-server-filesystem"
FILES = {
    "README.md": "# Alpha\n\nAlpha keeps a small cache of rendered pages.\n",
    "docs/retention.md": "# Retention\n\nThe retention window is 30 days, set in config/cache.toml.\n",
}
TASK = {"id": "alpha-retention", "repository": "alpha", "category": "lookup",
        "question": "Alpha: where is the retention window configured?", "sources": ["docs/retention.md"],
        "expected": ["30 days, in config/cache.toml"]}
NOTES_SERVER = '''
import json, os, sys
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

root = os.path.realpath(sys.argv[1])
files = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
server = MCPServer("notes")


def text(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as handle:
        return handle.read()


@server.tool(name="search_notes", structured_output=False)
def search_notes(query: str) -> str:
    """Search the notes for a word; answers the matching note ids."""
    return json.dumps({"hits": [{"note_id": f"n{i}", "title": rel} for i, rel in enumerate(files)
                                if query.lower() in text(rel).lower()]})


@server.tool(name="get_note", structured_output=False)
def get_note(note_id: str) -> str:
    """Get the text of a note by the note_id a search returned."""
    if not note_id[1:].isdigit() or int(note_id[1:]) >= len(files):
        raise ToolError(f"unknown note_id {note_id}")
    return text(files[int(note_id[1:])])


server.run()
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "alpha"
    for path, content in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


def _agentstudy(*args: str) -> Result:
    """``agentstudy args`` in this process (the commands' outcomes are the point, not a process of their own; the
    servers and agents they start are real processes): the worker imports the MCP SDK once, not each command."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _settled(directory: Path, repo: Path, command: str, *flags: str) -> Path:
    """``init`` writes a draft (exit 0), settled by ``flags``; the task replaced; the study file's path."""
    made = _agentstudy("init", str(directory), f"--repo=alpha={repo}", "--mcp-command", command, *flags)
    assert made.exit_code == 0, made.output
    assert (directory / "server-tools.json").is_file()
    path = directory / "study.json"
    study = json.loads(path.read_text(encoding="utf-8"))
    assert "undecided" not in study["arms"]["treatment"], study["arms"]["treatment"]
    study["tasks"] = [TASK]
    path.write_text(json.dumps(study, indent=2), encoding="utf-8")
    return path


def _dry_run(study: Path, repo: Path, *agent: str) -> dict[str, Any]:
    checked = _agentstudy("minimal", "--manifest", str(study), "--dry-run", "--probe", "--transport", "cli",
                          f"--root=alpha={repo}", *agent)
    assert checked.exit_code == 0, checked.output
    plan: dict[str, Any] = json.loads(checked.stdout.strip().splitlines()[-1])
    return plan


def _pilot(study: Path, repo: Path, ledger: Path, claude_bin: Path, *agent: str) -> dict[str, Any]:
    """A ``--pilot --rehearsal``; the treatment attempt's record, after checking every attempt completed."""
    model = ["--model", "rehearsal-scripted"] if agent else ["--model", "claude-haiku-5-5",
                                                             "--claude-bin", str(claude_bin)]
    ran = _agentstudy("minimal", "--manifest", str(study), "--pilot", "--rehearsal", "--transport", "cli",
                      f"--root=alpha={repo}", "--budget-usd", "1", "--output", str(ledger), *model, *agent)
    assert ran.exit_code == 0, ran.output
    observations = json.loads(ledger.read_text(encoding="utf-8"))["observations"]
    assert [o["status"] for o in observations] == ["completed", "completed"], ran.stderr
    [treated] = [o for o in observations if o["scenario"] == "doc-bridge-mcp"]
    record: dict[str, Any] = treated["treatment"]
    return record


def test_server_filesystem_from_init_to_a_pilot_on_claude_code_and_codex(
    tmp_path: Path, repo: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert FILESYSTEM.exists(), "run scripts/setup.sh: it installs server-filesystem into .tools"
    monkeypatch.setenv("AGENTSTUDY_CONTAINMENT", "bwrap")
    study = _settled(tmp_path / "study", repo, f"{FILESYSTEM} {{root}}", "--probe", "read_text_file",
                     "--probe-arguments", '{"path": "{root}/README.md"}')
    treatment = json.loads(study.read_text(encoding="utf-8"))["arms"]["treatment"]
    assert treatment["probe"] == {"tool": "read_text_file", "arguments": {"path": "{root}/README.md"}}
    assert _dry_run(study, repo)["mcpProbe"]["probe"]["ok"]
    codex_check = _dry_run(study, repo, "--agent", "codex", "--model", "rehearsal-scripted")["mcpProbe"]
    assert codex_check["agentCheck"] == {"agent": "codex", "denied": []}

    for name, agent in (("claude", ()), ("codex", ("--agent", "codex"))):
        record = _pilot(study, repo, tmp_path / f"{name}.json", claude_bin, *agent)
        assert record["serverCalls"] > 0 and record["serverCallErrors"] < record["serverCalls"], (name, record)
        # every allowed tool of the server is tried once besides the search and the read
        assert set(record["serverCallsByTool"]) == set(treatment["tools"]), (name, record["serverCallsByTool"])


def test_an_unannotated_server_declared_read_only_works_through_codex(
    tmp_path: Path, repo: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSTUDY_CONTAINMENT", "bwrap")
    server = tmp_path / "notes_server.py"
    server.write_text(NOTES_SERVER, encoding="utf-8")
    study = _settled(tmp_path / "study", repo, f"{sys.executable} {server} {{root}}",
                     "--tool", "search_notes", "--tool", "get_note")
    listing = json.loads((tmp_path / "study" / "server-tools.json").read_text(encoding="utf-8"))["tools"]
    assert not any(row.get("readOnlyHint") for row in listing)  # nothing annotated: the operator's word only
    assert _dry_run(study, repo, "--agent", "codex", "--model", "rehearsal-scripted")["mcpProbe"]["agentCheck"] == {
        "agent": "codex", "denied": []}
    record = _pilot(study, repo, tmp_path / "codex.json", claude_bin, "--agent", "codex")
    # the search's id is followed by the read: both calls succeed, none cancelled by Codex's approval gate
    assert record["serverCallsByTool"] == {"search_notes": 1, "get_note": 1}, record
    assert record["serverCallErrors"] == 0
    ledger = json.loads((tmp_path / "codex.json").read_text(encoding="utf-8"))
    [treated] = [o for o in ledger["observations"] if o["scenario"] == "doc-bridge-mcp"]
    assert treated["answer"].endswith("(docs/retention.md:3)."), treated["answer"]
