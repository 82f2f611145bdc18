"""One server world (issue 39): a server's probe passes exactly when its attempts can use it, on both agents.

Four small servers of ours each isolate one way a server used to pass the probe and then fail every
attempt (or fail without a word): one that works from its working directory and takes no ``{root}``;
a Node.js one that calls ``process.memoryUsage()`` (reads ``/proc``) before every answer; one whose
tools take absolute paths only; one that writes to stderr and exits during ``initialize``. Nothing is
mocked: real git corpora, the official MCP SDK, the real pinned Claude Code and Codex binaries under
bubblewrap, their scripted model servers on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io import server_world
from agentstudy.io.transcripts import transcript_dir
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.run_records import CLI_CORPUS_PATH
from agentstudy.runners.preflight import PreflightError
from world_attempts import AGENTS, probe, successful_server_calls, treatment_attempt

from checkout_run import run_agentstudy
from inprocess_cli import invoke_agentstudy

DATA = Path(__file__).resolve().parent / "data" / "world_servers"
FILES = {
    "README.md": "# Alpha\n\nAlpha keeps a small cache of rendered pages.\n",
    "docs/retention.md": "# Retention\n\nThe retention window is 30 days, set in config/cache.toml.\n",
}
TASK = {"id": "alpha-retention", "repository": "alpha", "category": "lookup",
        "question": "Alpha: where is the retention window configured?", "sources": ["docs/retention.md"],
        "expected": ["30 days, in config/cache.toml"]}
SERVERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "cwd": (f"{sys.executable} {DATA / 'cwd_server.py'}", "search_docs", {"query": "retention"}),
    "node-proc": (f"/usr/bin/node {DATA / 'memory_server.mjs'} {{root}}", "search_docs", {"query": "retention"}),
    "absolute": (f"{sys.executable} {DATA / 'abs_server.py'} {{root}}", "search_files",
                 {"directory": "{root}", "query": "retention"}),
}
DYING = f"{sys.executable} {DATA / 'dying_server.py'}"
DYING_LAST_LINE = "fatal: the index database /var/lib/docs-index is missing; run docs-index --build first"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("corpus") / "alpha"
    for path, content in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    pin = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True, capture_output=True,
                         text=True).stdout.strip()
    return root, pin


def _agent_flags(agent: str) -> tuple[str, ...]:
    return ("--agent", "codex", "--model", "rehearsal-scripted") if agent == "codex" else ()


def _study(directory: Path, root: Path, command: str, probe_tool: str, arguments: dict[str, Any]) -> Path:
    """``init`` (its own probe included) settles a study of the server; the task replaced; the study file."""
    made = invoke_agentstudy("init", str(directory), f"--repo=alpha={root}", "--mcp-command", command,
                          "--probe", probe_tool, "--probe-arguments", json.dumps(arguments))
    assert made.returncode == 0, made.stderr
    path = directory / "study.json"
    study = json.loads(path.read_text(encoding="utf-8"))
    study["tasks"] = [TASK]
    path.write_text(json.dumps(study, indent=2), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory, repo: tuple[Path, str]) -> Callable[[str], Path]:
    """The study file of each server of :data:`SERVERS`, made by ``init`` (under bubblewrap) once per module: the
    study does not depend on the agent, and the tests only read it, so both agents' tests share one ``init``."""
    made: dict[str, Path] = {}

    def study(server: str) -> Path:
        if server not in made:
            command, probe_tool, arguments = SERVERS[server]
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("AGENTSTUDY_CONTAINMENT", "bwrap")
                directory = tmp_path_factory.mktemp(f"study-{server}") / "study"
                made[server] = _study(directory, repo[0], command, probe_tool, arguments)
        return made[server]

    return study


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_the_probe_passes_and_the_rehearsed_treatment_attempt_uses_the_server(
    tmp_path: Path, repo: tuple[Path, str], server: str, agent: str, monkeypatch: pytest.MonkeyPatch,
    studies: Callable[[str], Path],
) -> None:
    monkeypatch.setenv("AGENTSTUDY_CONTAINMENT", "bwrap")
    root, _ = repo
    study = studies(server)
    checked = invoke_agentstudy("minimal", "--manifest", str(study), "--dry-run", "--probe", "--transport", "cli",
                             f"--root=alpha={root}", *_agent_flags(agent))
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout.strip().splitlines()[-1])["mcpProbe"]["probe"]["ok"]
    ledger = tmp_path / "pilot.json"
    model = () if agent == "codex" else ("--model", "claude-haiku-5-5")
    ran = run_agentstudy("minimal", "--manifest", str(study), "--pilot", "--rehearsal", "--transport", "cli",
                         f"--root=alpha={root}", "--budget-usd", "1", "--output", str(ledger),
                         *model, *_agent_flags(agent))
    assert ran.returncode == 0, ran.stderr
    written = json.loads(ledger.read_text(encoding="utf-8"))
    assert written["mcpServer"]["corpusPath"] == CLI_CORPUS_PATH
    observations = written["observations"]
    [treated] = [o for o in observations if o["scenario"] == "doc-bridge-mcp"]
    assert treated["status"] == "completed", treated.get("statusReason")
    record = treated["treatment"]
    assert record["serverCalls"] - record["serverCallErrors"] >= 1, record
    if server == "node-proc":  # its stderr is kept beside the transcript, hashed in the observation
        kept = transcript_dir(ledger) / treated["serverStderrFile"]
        assert hashlib.sha256(kept.read_bytes()).hexdigest() == treated["serverStderrSha256"]
        assert "answered tools/call with rss" in kept.read_text(encoding="utf-8")
        shown = invoke_agentstudy("transcript", "--ledger", str(ledger), "--task", TASK["id"], "--arm",
                               "doc-bridge-mcp", "--repetition", "1")
        assert shown.returncode == 0, shown.stderr
        assert "the MCP server's stderr ends" in shown.stderr and "with rss" in shown.stderr, shown.stderr


def test_a_server_that_dies_during_initialize_fails_init_and_the_probe_with_its_last_stderr_line(
    tmp_path: Path, repo: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSTUDY_CONTAINMENT", "bwrap")
    root, pin = repo
    refused = invoke_agentstudy("init", str(tmp_path / "study"), f"--repo=alpha={root}", "--mcp-command", DYING,
                             "--probe", "search_docs", "--probe-arguments", '{"query": "retention"}')
    assert refused.returncode != 0
    assert DYING_LAST_LINE in refused.stderr, refused.stderr
    spec = McpServerSpec(name="dying", command=tuple(shlex.split(DYING)), read_only_tools=("search_docs",),
                         probe_tool="search_docs", probe_arguments={"query": "retention"}, config_candidates=())
    with pytest.raises(PreflightError, match="docs-index --build first"):
        probe(spec, root, pin)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_server_that_dies_during_initialize_fails_the_attempt_with_its_last_stderr_line(
    repo: tuple[Path, str], agent: str
) -> None:
    root, pin = repo
    spec = McpServerSpec(name="dying", command=tuple(shlex.split(DYING)), read_only_tools=("search_docs",),
                         probe_tool="search_docs", probe_arguments={"query": "retention"}, config_candidates=())
    result = treatment_attempt(agent, spec, root, pin)
    assert result.status != "completed"
    assert successful_server_calls(result) == 0
    assert f"the MCP server's stderr ends: {DYING_LAST_LINE}" in (result.status_reason or ""), result.status_reason


@pytest.mark.parametrize("agent", AGENTS)
def test_a_property_of_the_server_world_changed_in_one_place_changes_the_probe_and_the_attempt_alike(
    repo: tuple[Path, str], agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, pin = repo
    command, probe_tool, arguments = SERVERS["node-proc"]
    spec = McpServerSpec(name="memory-docs", command=tuple(shlex.split(command)),
                         read_only_tools=("search_docs", "read_doc"), probe_tool=probe_tool,
                         probe_arguments=arguments, config_candidates=())
    probe(spec, root, pin)
    assert successful_server_calls(treatment_attempt(agent, spec, root, pin)) >= 1
    monkeypatch.setattr(server_world, "SERVER_PROC", False)  # the world without its private /proc
    with pytest.raises(PreflightError, match=r"uv_resident_set_memory.*the server needs /proc"):
        probe(spec, root, pin)
    result = treatment_attempt(agent, spec, root, pin)
    assert result.status != "completed" and successful_server_calls(result) == 0
    assert "the server needs /proc" in (result.status_reason or ""), result.status_reason
