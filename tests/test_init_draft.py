"""``agentstudy init`` always writes a draft (issue 32 item 1, item 3's open-world default).

Against a real stdio MCP server written with the official SDK (tests/data/plain_server.py)
that annotates none of its useful tools, needs absolute paths, and lists one
``openWorldHint: true`` tool, over a real git repository: the draft lists every tool with its
annotations, input schema, role and reason; its open decisions block a run (exit 2, naming the
field) until settled with ``--tool``/``--probe``/``--probe-arguments``, after which
``--dry-run --probe`` passes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentstudy.commands.view import stopped_line

from checkout_run import run_agentstudy
from inprocess_cli import invoke_agentstudy

SERVER = Path(__file__).parent / "data" / "plain_server.py"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "repo"
    root.mkdir()
    (root / "README.md").write_text("# Demo\nRetention policies keep data for thirty days.\n", encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


def _init(directory: Path, repo: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``agentstudy init`` in this process (the test is about its draft, not its process)."""
    return invoke_agentstudy("init", str(directory), f"--repo=r={repo}", "--containment", "restricted",
                          "--mcp-command", f"{sys.executable} {SERVER} {{root}}", *flags)


def _load(directory: Path, name: str = "study.json") -> dict[str, object]:
    loaded: dict[str, object] = json.loads((directory / name).read_text(encoding="utf-8"))
    return loaded


def test_an_unannotated_server_gets_a_draft_whose_open_decision_blocks_a_run(tmp_path: Path, repo: Path) -> None:
    done = _init(tmp_path / "draft", repo)
    assert done.returncode == 0, done.stderr
    treatment = _load(tmp_path / "draft")["arms"]["treatment"]  # type: ignore[index]
    assert treatment["tools"] == [] and treatment["probe"] is None
    [decision] = treatment["undecided"]
    assert decision["field"] == "arms.treatment.tools"
    assert decision["settleWith"].startswith("--tool read_directory --tool search_text")
    assert '"tools": ["read_directory", "search_text"]' in decision["edit"]
    assert "open decisions (1;" in done.stdout and "--tool read_directory --tool search_text" in done.stdout
    listing = {row["name"]: row for row in _load(tmp_path / "draft", "server-tools.json")["tools"]}  # type: ignore[attr-defined]
    assert {name: row["role"] for name, row in listing.items()} == {
        "read_directory": "list", "search_text": "search", "build_index": "prepare", "clone_remote": "denied"}
    assert listing["search_text"]["inputSchema"]["required"] == ["query", "path"]
    assert listing["clone_remote"]["openWorldHint"] is True
    assert "openWorldHint: true" in listing["clone_remote"]["reason"]
    assert all(row["choice"] != "read-only (chosen)" for row in listing.values())

    for mode in ("--dry-run", "--run"):
        refused = invoke_agentstudy("minimal", "--manifest", str(tmp_path / "draft" / "study.json"), mode,
                                 f"--root=r={repo}", "--output", str(tmp_path / "ledger.json"))
        assert refused.returncode == 2, refused.stderr
        assert "arms.treatment.undecided holds 1 open decision" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ledger.json").exists()


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory, repo: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``init --tool read_directory --tool search_text``, once per module: (its study directory, its answer). The
    tests that take it only read the study (the probe test checks it, the blocked rehearsal runs it)."""
    directory = tmp_path_factory.mktemp("declared") / "study"
    return directory, _init(directory, repo, "--tool", "read_directory", "--tool", "search_text")


def test_declared_tools_give_a_study_whose_probe_passes(
    repo: Path, declared: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    directory, done = declared
    assert done.returncode == 0, done.stderr
    treatment = _load(directory)["arms"]["treatment"]  # type: ignore[index]
    assert treatment["tools"] == ["read_directory", "search_text"] and "undecided" not in treatment
    # the probe is proposed from the schema: the query a word of the corpus, the path the snapshot
    assert treatment["probe"] == {"tool": "search_text", "arguments": {"query": "policies", "path": "{root}"}}
    assert "answered 'README.md:2: Retention policies keep data for thirty days.'" in done.stdout
    checked = invoke_agentstudy("minimal", "--manifest", str(directory / "study.json"), "--dry-run",
                             "--probe", f"--root=r={repo}", "--containment", "restricted")
    assert checked.returncode == 0, checked.stderr
    plan = json.loads(checked.stdout.strip().splitlines()[-1])
    tools = {t["name"]: t for t in plan["mcpProbe"]["tools"]}
    assert plan["mcpProbe"]["probe"] == {"tool": "search_text", "ok": True}
    assert tools["search_text"]["readOnlyEvidence"] == "declared read-only by the operator"
    assert not tools["clone_remote"]["allowed"] and not tools["build_index"]["allowed"]


def test_a_given_probe_is_called_once_and_its_failure_is_an_open_decision(tmp_path: Path, repo: Path) -> None:
    good = _init(tmp_path / "good", repo, "--tool", "read_directory", "--probe", "read_directory",
                 "--probe-arguments", '{"path": "{cwd}"}')
    assert good.returncode == 0, good.stderr
    assert "probe: read_directory {\"path\": \"{cwd}\"} answered 'README.md'" in good.stdout
    assert _load(tmp_path / "good")["arms"]["treatment"]["probe"]["arguments"] == {"path": "{cwd}"}  # type: ignore[index]

    bad = _init(tmp_path / "bad", repo, "--tool", "read_directory", "--probe", "read_directory",
                "--probe-arguments", '{"path": "docs"}')
    assert bad.returncode == 0, bad.stderr
    assert "failed with" in bad.stdout and "Path must be absolute" in bad.stdout  # the server's own words
    undecided = _load(tmp_path / "bad")["arms"]["treatment"]["undecided"]  # type: ignore[index]
    # a listing tool alone cannot search or read files: that is an open decision of its own
    assert sorted(d["field"] for d in undecided) == ["arms.treatment.probe", "arms.treatment.tools"], undecided
    [decision] = [d for d in undecided if d["field"] == "arms.treatment.probe"]
    assert "Path must be absolute" in decision["decision"]
    # the suggestion follows the tool's schema and is not the call that failed
    assert decision["settleWith"].startswith("--probe read_directory --probe-arguments '{\"path\": \"{root}\"}'")

    for flags, says in [
        (["--probe-arguments", "{}"], "--probe-arguments needs --probe NAME"),
        (["--probe", "search_text", "--probe-arguments", "[]"], "must be a JSON object"),
        (["--probe", "search_text", "--probe-arguments", '{"path": "{home}"}'], "unknown placeholders {home}"),
        (["--probe", "search_text"], "--probe search_text is not one of the allowed tools"),
        (["--tool", "nope"], "--tool names nope, which the server does not list"),
        (["--allow-open-world", "search_text"], "does not annotate openWorldHint: true"),
    ]:
        refused = _init(tmp_path / "refused", repo, *flags)
        assert refused.returncode == 2 and says in refused.stderr, (flags, refused.stderr)
        assert len(refused.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "refused").exists()


def test_a_probe_that_never_touches_the_repository_is_an_open_decision(tmp_path: Path, repo: Path) -> None:
    # build_index takes no argument and answers "index built": it passes without reading anything
    done = _init(tmp_path / "blind", repo, "--tool", "build_index", "--probe", "build_index")
    assert done.returncode == 0, done.stderr
    assert "probe: build_index {} answered 'index built'" in done.stdout
    undecided = _load(tmp_path / "blind")["arms"]["treatment"]["undecided"]  # type: ignore[index]
    [decision] = [d for d in undecided if d["field"] == "arms.treatment.probe"]
    assert "shows nothing of the corpus" in decision["decision"]
    assert "shows nothing of the corpus" in done.stdout
    refused = invoke_agentstudy("minimal", "--manifest", str(tmp_path / "blind" / "study.json"), "--dry-run",
                             f"--root=r={repo}", "--containment", "restricted")
    assert refused.returncode == 2 and "arms.treatment.undecided" in refused.stderr


def test_an_open_world_tool_is_let_through_only_when_named(tmp_path: Path, repo: Path) -> None:
    done = _init(tmp_path / "open", repo, "--tool", "search_text", "--allow-open-world", "clone_remote")
    assert done.returncode == 0, done.stderr
    treatment = _load(tmp_path / "open")["arms"]["treatment"]  # type: ignore[index]
    assert treatment["tools"] == ["search_text", "clone_remote"]
    assert treatment["allowOpenWorld"] == ["clone_remote"]
    study_path = tmp_path / "open" / "study.json"
    ledger_path = tmp_path / "open" / "ledger.json"
    # in this process: the test reads the ledger's notes, not the run's process
    ran = invoke_agentstudy("minimal", "--manifest", str(study_path), "--pilot", "--rehearsal", "--transport", "http",
                            f"--root=r={repo}", "--containment", "restricted", "--output", str(ledger_path),
                            "--model", "claude-haiku-5-5", "--budget-usd", "1")
    assert ran.returncode == 0, ran.stderr
    notes = {o["scenario"]: o["isolationNotAchieved"] for o in json.loads(ledger_path.read_text())["observations"]}
    assert any("clone_remote is annotated openWorldHint: true" in n for n in notes["doc-bridge-mcp"])
    assert not any("openWorldHint" in n for n in notes["repository-only"])
    reported = invoke_agentstudy("report", str(ledger_path))
    assert reported.returncode == 0 and "clone_remote is annotated openWorldHint: true" in reported.stdout

    study = json.loads(study_path.read_text(encoding="utf-8"))
    del study["arms"]["treatment"]["allowOpenWorld"]  # named as a tool, but not let through: refused
    study_path.write_text(json.dumps(study), encoding="utf-8")
    refused = invoke_agentstudy("minimal", "--manifest", str(study_path), "--dry-run", "--probe", f"--root=r={repo}",
                             "--containment", "restricted")
    assert refused.returncode == 2 and "clone_remote, which the server annotates openWorldHint: true" in refused.stderr
    study["arms"]["treatment"]["allowOpenWorld"] = ["read_directory"]  # not among the tools
    study_path.write_text(json.dumps(study), encoding="utf-8")
    refused = invoke_agentstudy("minimal", "--manifest", str(study_path), "--dry-run", f"--root=r={repo}")
    assert refused.returncode == 2 and "allowOpenWorld names read_directory, not among" in refused.stderr


def test_a_blocked_rehearsal_prints_the_servers_refusal_on_the_terminal(
    tmp_path: Path, repo: Path, claude_bin: Path, declared: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    study_dir, made = declared
    assert made.returncode == 0, made.stderr
    # the schema asks for absolute paths, but Claude Code names no working directory in its requests and the
    # server never names its own: the scripted agent's paths stay relative, which this server refuses
    ledger_path = tmp_path / "ledger.json"
    planted = "sk-ant-planted-" + "x" * 20
    ran = run_agentstudy("minimal", "--manifest", str(study_dir / "study.json"), "--pilot", "--rehearsal",
                         "--transport", "cli", f"--root=r={repo}", "--containment", "restricted",
                         "--output", str(ledger_path), "--claude-bin", str(claude_bin), "--model", "claude-haiku-5-5",
                         "--budget-usd", "1", env={**os.environ, "ANTHROPIC_API_KEY": planted})
    assert ran.returncode != 0, ran.stderr
    [why] = [line for line in ran.stderr.splitlines() if line.startswith("why: ")]
    assert why.startswith("why: invalid-setup in task example-r (Repository tools + the plain-server MCP server, "
                          "repetition 1): every MCP tool "
                          "call returned an error"), why
    assert "the server answered 'Error executing tool search_text: Error: Path must be absolute'" in why
    summary = json.loads(ran.stdout.strip().splitlines()[-1])
    stopped = summary["stoppedBy"]
    assert stopped["status"] == "invalid-setup" and "Path must be absolute" in stopped["reason"]
    assert planted not in ran.stdout + ran.stderr


def test_the_why_line_redacts_every_credential_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-openai")
    line = stopped_line({"taskId": "t", "scenario": "doc-bridge-mcp", "repetition": 2, "status": "invalid-setup",
                         "reason": "the server answered 'bad key sk-planted-openai'"})
    assert line == ("why: invalid-setup in task t (Repository tools + the MCP server, repetition 2): the server "
                    "answered 'bad key [redacted]'")
