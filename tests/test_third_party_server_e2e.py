"""Studying a real third-party MCP server end to end (issue 18, first Must-show).

Nothing is mocked: ``@modelcontextprotocol/server-filesystem`` (pinned by scripts/setup.sh in
.tools), two real git repositories, ``agentstudy init`` writing the study file, the real pinned
Claude Code binary under bubblewrap talking to the rehearsal Messages API server on 127.0.0.1,
and ``agentstudy report`` on the ledger. 4 tasks x 2 repetitions x 2 arms = 16 attempts.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from checkout_run import run_agentstudy

REPO = Path(__file__).resolve().parents[1]
SERVER_BIN = REPO / ".tools" / "mcp-server-filesystem" / "node_modules" / ".bin" / "mcp-server-filesystem"
WRITE_TOOLS = ("create_directory", "edit_file", "move_file", "write_file")
PLANTED_KEY = "sk-ant-planted-test-key-0123456789"

FILES = {
    "alpha": {
        "README.md": "# Alpha\n\nAlpha keeps a small cache of rendered pages.\n",
        "docs/retention.md": "# Retention\n\nThe retention window is 30 days, set in config/cache.toml.\n",
        "docs/jobs.md": "# Jobs\n\nA cron scheduler runs the nightly compaction at 02:00 UTC.\n",
    },
    "beta": {
        "README.md": "# Beta\n\nThe gateway listens on ports 8080 and 8443.\n",
        "docs/export.md": "# Export\n\nExported notes use UTF-8 encoding without a byte order mark.\n",
    },
}
TASKS = [  # (id, repository, question, source, expected)
    ("alpha-retention", "alpha", "Where is the retention window configured?", "docs/retention.md",
     "The retention window is 30 days"),
    ("alpha-compaction", "alpha", "Which scheduler runs the nightly compaction?", "docs/jobs.md",
     "A cron scheduler runs it at 02:00 UTC"),
    ("beta-encoding", "beta", "What encoding do exported notes use?", "docs/export.md", "UTF-8 without a BOM"),
    ("beta-ports", "beta", "Which ports does the gateway listen on?", "README.md", "8080 and 8443"),
]


def _repository(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


def _tasks() -> list[dict[str, Any]]:
    return [{"id": task_id, "repository": repository, "category": "lookup", "question": question,
             "sources": [source], "expected": [expected]}
            for task_id, repository, question, source, expected in TASKS]


def test_a_rehearsed_study_of_server_filesystem_uses_it_in_every_treatment_attempt(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert SERVER_BIN.exists(), "run scripts/setup.sh: it installs server-filesystem into .tools"
    monkeypatch.setenv("AGENTSTUDY_CONTAINMENT", "bwrap")
    roots = {name: _repository(tmp_path / name, files) for name, files in FILES.items()}
    root_flags = [f"--root={name}={path}" for name, path in roots.items()]
    made = run_agentstudy("init", str(tmp_path / "study"), *[f"--repo={n}={p}" for n, p in roots.items()],
                          "--mcp-command", f"{SERVER_BIN} {{root}}")
    assert made.returncode == 0, made.stderr
    study_path = tmp_path / "study" / "study.json"
    study = json.loads(study_path.read_text(encoding="utf-8"))
    treatment = study["arms"]["treatment"]
    assert list(treatment["mcpConfig"]["mcpServers"]) == ["filesystem"]
    assert not set(WRITE_TOOLS) & set(treatment["tools"]) and "search_files" in treatment["tools"]
    study["tasks"] = _tasks()
    study_path.write_text(json.dumps(study, indent=2), encoding="utf-8")

    ledger_path = tmp_path / "out" / "ledger.json"
    ledger_path.parent.mkdir()
    env = {**os.environ, "ANTHROPIC_API_KEY": PLANTED_KEY, "AGENTSTUDY_CONTAINMENT": "bwrap"}
    ran = run_agentstudy("minimal", "--manifest", str(study_path), "--run", "--rehearsal", "--transport", "cli",
                         *root_flags, "--output", str(ledger_path), "--claude-bin", str(claude_bin),
                         "--model", "claude-haiku-5-5", "--budget-usd", "5", env=env)
    assert ran.returncode == 0, ran.stderr
    ledger = json.loads(ledger_path.read_text(encoding="utf-8"))
    observations = ledger["observations"]
    assert len(observations) == 16
    assert all(o["status"] == "completed" for o in observations), [o["status"] for o in observations]
    control = [o for o in observations if o["scenario"] == "repository-only"]
    treated = [o for o in observations if o["scenario"] == "doc-bridge-mcp"]
    assert len(control) == len(treated) == 8
    for observation in control:
        assert not any(name.startswith("mcp__") for name in observation["toolCallsByName"])
    for observation in treated:
        server_calls = {k: v for k, v in observation["toolCallsByName"].items()
                        if k.startswith("mcp__filesystem__")}
        assert sum(server_calls.values()) >= 1, observation["toolCallsByName"]
        # the search and the read, then every other allowed tool once (the rehearsal agent tries them all)
        assert set(server_calls) == {f"mcp__filesystem__{tool}" for tool in treatment["tools"]}
        assert server_calls["mcp__filesystem__read_text_file"] >= 1
        assert not {f"mcp__filesystem__{tool}" for tool in WRITE_TOOLS} & set(observation["tools"])
        assert observation["mcp_servers"][0]["status"] == "connected"
    sources = {task_id: source for task_id, _, _, source, _ in TASKS}
    for observation in observations:  # each answer cites the line it read, whichever tools read it
        assert f"{sources[observation['taskId']]}:3)." in observation["answer"], observation["answer"]
    assert sorted(ledger["mcpServer"]["deniedTools"]) == [f"mcp__filesystem__{tool}" for tool in WRITE_TOOLS]
    for text in (ran.stdout, ran.stderr, ledger_path.read_text(encoding="utf-8")):
        assert PLANTED_KEY not in text

    reported = run_agentstudy("report", str(ledger_path))
    assert reported.returncode == 0, reported.stderr
    for name in ("filesystem", treatment["label"], study["arms"]["control"]["label"]):
        assert name in reported.stdout, name
