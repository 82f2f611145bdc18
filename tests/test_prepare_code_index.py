"""Preparation steps with a real third-party MCP server that needs one (issue 32, deliverable 2).

Nothing is mocked: code-index-mcp 2.17.1 (PyPI; pinned by scripts/setup.sh in .tools/code-index-mcp)
annotates none of its 14 tools (no readOnlyHint) and its deep-index read tools (get_symbol_body,
get_file_summary) answer "deep index not built" until build_deep_index ran in the same process; it
keeps its index under its TMPDIR. Over a real git repository in a temp dir: ``init`` writes a draft;
settling it with --tool/--probe/--probe-arguments/--prepare gives a study whose ``--dry-run --probe``
passes; the read tool answers only after the preparation step; a failing step refuses the run (exit 2)
with the server's own words and nothing reserved or written; the prepared state lives in the run's
private state directory, never in the repository or the snapshot; and a pilot rehearsal on the pinned
Claude Code, and one on the pinned Codex (its own check of the declared tools first), reads the deep index
through the server in its treatment attempt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentstudy.io.git import head
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.io.server_prepare import PrepareError, run_prepare, state_digest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.prepare_steps import PrepareStep, prepare_line
from agentstudy.protocol.study_arms import TreatmentArm

from inprocess_cli import invoke_agentstudy

REPO = Path(__file__).resolve().parents[1]
TOOL_DIR = REPO / ".tools" / "code-index-mcp"
SERVER = TOOL_DIR / "bin" / "code-index-mcp"
COMMAND = f"{SERVER} --project-path {{root}}"
PLAIN_SERVER = Path(__file__).parent / "data" / "plain_server.py"
READ_TOOLS = ("search_code_advanced", "find_files", "get_file_summary", "get_symbol_body")
SYMBOL_PROBE = ["--probe", "get_symbol_body", "--probe-arguments",
                '{"file_path": "src/ledger.py", "symbol_name": "reserve_budget"}']
FILES = {
    "README.md": "# Ledger demo\n\nThe ledger reserves money before spending it.\n",
    "src/ledger.py": ('"""Ledger helpers."""\n\n\ndef reserve_budget(amount):\n    """Reserve twice the amount '
                      'before spending."""\n    return amount * 2\n'),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert SERVER.exists(), "run scripts/setup.sh: it installs code-index-mcp into .tools/code-index-mcp"
    root = tmp_path_factory.mktemp("corpus") / "ledger"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


def _init(directory: Path, repo: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``agentstudy init`` in this process (the tests read its draft, not its process)."""
    return invoke_agentstudy("init", str(directory), f"--repo=ledger={repo}", "--mcp-command", COMMAND, *flags)


def _study(directory: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((directory / "study.json").read_text(encoding="utf-8"))
    return loaded


def _untouched(repo: Path) -> None:
    """The checkout holds exactly its committed files: nothing the server wrote, not even an ignored file."""
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--ignored"], capture_output=True,
                            text=True, check=True)
    assert status.stdout == ""
    assert not [p for p in repo.rglob("*") if "code_indexer" in p.name or p.suffix == ".db"]


@pytest.fixture(scope="module")
def settled(tmp_path_factory: pytest.TempPathFactory, repo: Path) -> Iterator[Path]:
    """A study settled on the command line: the four read tools, the symbol probe, build_deep_index prepared."""
    directory = tmp_path_factory.mktemp("settled") / "study"
    tools = [flag for tool in READ_TOOLS for flag in ("--tool", tool)]
    done = _init(directory, repo, *tools, *SYMBOL_PROBE, "--prepare", "build_deep_index")
    assert done.returncode == 0, done.stderr
    yield directory


def test_init_writes_a_draft_and_names_the_preparation_tools(tmp_path: Path, repo: Path) -> None:
    done = _init(tmp_path / "draft", repo)
    assert done.returncode == 0, done.stderr
    treatment = _study(tmp_path / "draft")["arms"]["treatment"]
    [decision] = treatment["undecided"]  # unannotated: nothing is read-only until the operator says so
    assert decision["field"] == "arms.treatment.tools" and "--tool search_code_advanced" in decision["settleWith"]
    listing = json.loads((tmp_path / "draft" / "server-tools.json").read_text(encoding="utf-8"))
    roles = {row["name"]: row for row in listing["tools"]}
    assert len(roles) == 14 and all(row["readOnlyHint"] is None for row in roles.values())
    assert roles["build_deep_index"]["role"] == "prepare" and roles["get_symbol_body"]["role"] == "read"
    assert "prepare: refresh_index, build_deep_index, refresh_search_tools may build the server's own state" \
        in done.stdout
    _untouched(repo)


def test_inits_proposed_probe_greps_for_a_word_of_the_corpus(tmp_path: Path, repo: Path) -> None:
    """search_code_advanced's description speaks of a glob for file_pattern only: its pattern gets a corpus word."""
    done = _init(tmp_path / "search", repo, "--tool", "search_code_advanced")
    assert done.returncode == 0, done.stderr
    probe = _study(tmp_path / "search")["arms"]["treatment"]["probe"]
    assert probe["tool"] == "search_code_advanced" and probe["arguments"]["pattern"] != "**/*", probe
    word = probe["arguments"]["pattern"]
    assert any(word.lower() in text.lower() for text in FILES.values()), word
    answered = json.loads((tmp_path / "search" / "server-tools.json").read_text(encoding="utf-8"))["probe"]
    assert '"total_matches": 0' not in answered["answered"] and '"line":' in answered["answered"], answered


def test_the_read_tool_answers_only_after_the_preparation_step(tmp_path: Path, repo: Path, settled: Path) -> None:
    bare = _init(tmp_path / "bare", repo, "--tool", "get_symbol_body", *SYMBOL_PROBE)
    assert bare.returncode == 0, bare.stderr
    assert "deep index not built" in bare.stdout and "def reserve_budget" not in bare.stdout  # the server's refusal
    [decision] = _study(tmp_path / "bare")["arms"]["treatment"]["undecided"]  # its answer says: not ready
    assert decision["field"] == "arms.treatment.prepare"
    assert decision["settleWith"].startswith("--prepare refresh_index") and "build_deep_index" in decision["decision"]

    prepared = (settled / "study.json").read_text(encoding="utf-8")
    assert '"prepare": [' in prepared
    assert _study(settled)["arms"]["treatment"]["prepare"] == [
        {"tool": "build_deep_index", "arguments": {}, "scope": "server"}]
    assert "undecided" not in _study(settled)["arms"]["treatment"]
    listing = json.loads((settled / "server-tools.json").read_text(encoding="utf-8"))
    assert "def reserve_budget(amount)" in listing["probe"]["answered"]  # the same call, after build_deep_index


def test_a_settled_study_passes_the_dry_run_probe_with_its_state_kept_private(settled: Path, repo: Path) -> None:
    checked = invoke_agentstudy("minimal", "--manifest", str(settled / "study.json"), "--dry-run", "--probe",
                             f"--root=ledger={repo}")
    assert checked.returncode == 0, checked.stderr
    probe = json.loads(checked.stdout.strip().splitlines()[-1])["mcpProbe"]
    assert probe["probe"] == {"tool": "get_symbol_body", "ok": True}
    [state] = probe["prepared"]
    assert state["repository"] == "ledger" and state["steps"] == [{"step": "build_deep_index", "ok": True}]
    assert state["stateFiles"] >= 2 and len(state["stateSha256"]) == 64
    tools = {t["name"]: t for t in probe["tools"]}
    assert tools["get_symbol_body"]["readOnlyEvidence"] == "declared read-only by the operator"
    assert not tools["build_deep_index"]["allowed"]  # prepared by us, never offered to the agent
    _untouched(repo)


def test_the_prepared_state_lives_in_its_own_directory_never_in_the_snapshot(tmp_path: Path, repo: Path) -> None:
    spec = McpServerSpec(name="code-index", command=(str(SERVER), "--project-path", "{root}"),
                         read_only_tools=READ_TOOLS, probe_tool="get_symbol_body",
                         prepare=(PrepareStep(tool="build_deep_index"),))
    with ServerCorpora(spec, {"ledger": (repo, head(repo))}) as corpora:
        snapshot = Path(corpora.paths("ledger").root)
        before = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*"))
        state = corpora.state_directory("ledger")
        outcome = run_prepare(spec, "ledger", corpora.paths("ledger"), "bwrap", os.environ, state)
        after = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*"))
        assert after == before  # the snapshot is read-only to the server
        [index] = list(state.glob("tmp/code_indexer/*/index.db"))  # its TMPDIR, kept as the prepared state
        assert index.stat().st_size > 0
        assert (outcome.state_sha256, outcome.state_files) == state_digest(state)[:2]
    _untouched(repo)


def test_a_command_step_writes_the_servers_home_and_a_failing_one_quotes_it(tmp_path: Path, repo: Path) -> None:
    python = str(TOOL_DIR / "bin" / "python")
    write = "import os; open(os.path.join(os.environ['HOME'], 'made'), 'w').write('{root}')"
    spec = McpServerSpec(name="code-index", command=(str(SERVER), "--project-path", "{root}"),
                         prepare=(PrepareStep(command=[python, "-c", write]),))
    with ServerCorpora(spec, {"ledger": (repo, head(repo))}) as corpora:
        state = corpora.state_directory("ledger")
        run_prepare(spec, "ledger", corpora.paths("ledger"), "bwrap", os.environ, state)
        assert (state / "home" / "made").read_text(encoding="utf-8") == corpora.paths("ledger").root
        failing = McpServerSpec(name="code-index", command=spec.command,
                                prepare=(PrepareStep(command=[python, "-c", "import sys; sys.exit('no index here')"]),))
        with pytest.raises(PrepareError, match=r"command python exited 1: no index here"):
            run_prepare(failing, "ledger", corpora.paths("ledger"), "bwrap", os.environ,
                        corpora.state_directory("ledger"))


def test_a_step_the_server_does_not_list_or_that_reaches_the_network_is_refused(repo: Path) -> None:
    unlisted = McpServerSpec(name="code-index", command=(str(SERVER), "--project-path", "{root}"),
                             prepare=(PrepareStep(tool="build_the_index"),))
    plain = McpServerSpec(name="plain", command=(sys.executable, str(PLAIN_SERVER), "{root}"),
                          prepare=(PrepareStep(tool="clone_remote", arguments={"url": "https://example.invalid/r"}),))
    for spec, says in [(unlisted, "build_the_index {} is not a tool the server lists"),
                       (plain, 'clone_remote {"url": "https://example.invalid/r"} is annotated openWorldHint: true')]:
        pattern = "preparation step " + says.replace("{", r"\{").replace("}", r"\}")
        with ServerCorpora(spec, {"ledger": (repo, head(repo))}) as corpora, pytest.raises(PrepareError, match=pattern):
            run_prepare(spec, "ledger", corpora.paths("ledger"), "restricted", os.environ,
                        corpora.state_directory("ledger"))


def test_a_failing_step_refuses_the_run_with_the_servers_words_before_any_spend(
    tmp_path: Path, repo: Path, settled: Path, claude_bin: Path
) -> None:
    study = _study(settled)
    study["arms"]["treatment"]["prepare"] = [{"tool": "build_deep_index", "arguments": {"max_workers": "many"}}]
    path = tmp_path / "study.json"
    path.write_text(json.dumps(study), encoding="utf-8")
    ledger = tmp_path / "ledger.json"
    refused = invoke_agentstudy("minimal", "--manifest", str(path), "--pilot", "--rehearsal", "--transport", "cli",
                             f"--root=ledger={repo}", "--output", str(ledger), "--claude-bin", str(claude_bin),
                             "--model", "claude-haiku-5-5", "--budget-usd", "1")
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert "ledger: preparation step build_deep_index {\"max_workers\": \"many\"} answered an error" in line
    assert "Input should be a valid integer" in line  # the server's own words
    assert "nothing reserved" in line
    assert not ledger.exists() and not list(tmp_path.glob("ledger.json*"))


def test_a_pilot_rehearsal_on_claude_code_calls_the_prepared_server(
    tmp_path: Path, repo: Path, settled: Path, claude_bin: Path
) -> None:
    study = _study(settled)
    study["tasks"] = [{"id": "reserve", "repository": "ledger", "category": "lookup",
                       "question": "What does reserve_budget return?", "sources": ["src/ledger.py"],
                       "expected": ["twice the amount"]}]
    path = tmp_path / "study.json"
    path.write_text(json.dumps(study), encoding="utf-8")
    ledger = tmp_path / "out" / "ledger.json"
    ledger.parent.mkdir()
    ran = invoke_agentstudy("minimal", "--manifest", str(path), "--pilot", "--rehearsal", "--transport", "cli",
                         f"--root=ledger={repo}", "--output", str(ledger), "--claude-bin", str(claude_bin),
                         "--model", "claude-haiku-5-5", "--budget-usd", "1")
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ledger.read_text(encoding="utf-8"))
    [treated] = [o for o in document["observations"] if o["scenario"] == "doc-bridge-mcp"]
    assert treated["status"] == "completed"
    record = treated["treatment"]
    assert record["serverCalls"] > record["serverCallErrors"], record  # at least one call answered
    assert not any(name.endswith("build_deep_index") for name in treated["toolCallsByName"])
    [state] = document["mcpServer"]["prepared"]
    assert state["steps"] == [{"step": "build_deep_index", "ok": True}]
    reported = invoke_agentstudy("report", str(ledger))
    assert reported.returncode == 0, reported.stderr
    line = prepare_line(document["mcpServer"]["prepared"])
    assert line is not None and line in reported.stdout
    _untouched(repo)


def test_the_study_file_checks_its_preparation_steps() -> None:
    base: dict[str, Any] = {"id": "t", "label": "T", "tools": ["find_files"],
                            "probe": {"tool": "find_files", "arguments": {"pattern": "*"}}}
    arm = TreatmentArm.model_validate({**base, "prepare": [{"tool": "build_deep_index"},
                                                           {"command": ["/bin/true", "{root}"]}]})
    assert [step.scope for step in arm.prepare] == ["checkout", "checkout"]
    for steps, says in [
        ([{"tool": "a", "command": ["/bin/true"]}], "exactly one of"),
        ([{}], "exactly one of"),
        ([{"command": ["/bin/true"], "scope": "server"}], "only a tool step"),
        ([{"tool": "a", "arguments": {"path": "{home}"}}], "unknown placeholders ['{home}']"),
        ([{"tool": "a", "scope": "always"}], "scope"),
    ]:
        with pytest.raises(ValidationError, match=r"(?s)" + says.replace("[", r"\[").replace("]", r"\]")):
            TreatmentArm.model_validate({**base, "prepare": steps})
    assert prepare_line(None) is None
    line = prepare_line([{"repository": "r", "steps": [{"step": "build_deep_index", "ok": True}],
                          "stateSha256": "ab" * 32, "stateFiles": 2}])
    assert line == ("build_deep_index ran once per checkout before any reservation (1 checkout, all ok); "
                    "prepared state: r 2 files sha256 abababababab")


def test_a_pilot_rehearsal_on_codex_calls_the_prepared_server(tmp_path: Path, repo: Path, settled: Path) -> None:
    """Codex's MCP client gets the warm-up relay and the per-tool approvals: the deep index answers."""
    study = _study(settled)
    study["tasks"] = [{"id": "reserve", "repository": "ledger", "category": "lookup",
                       "question": "What does reserve_budget return?", "sources": ["src/ledger.py"],
                       "expected": ["twice the amount"]}]
    path = tmp_path / "study.json"
    path.write_text(json.dumps(study), encoding="utf-8")
    codex = ("--transport", "cli", f"--root=ledger={repo}", "--agent", "codex", "--model", "rehearsal-scripted")
    checked = invoke_agentstudy("minimal", "--manifest", str(path), "--dry-run", "--probe", *codex)
    assert checked.returncode == 0, checked.stderr
    probe = json.loads(checked.stdout.strip().splitlines()[-1])["mcpProbe"]
    assert probe["agentCheck"] == {"agent": "codex", "denied": []}  # Codex's own check of the declared tools
    ledger = tmp_path / "out" / "ledger.json"
    ledger.parent.mkdir()
    ran = invoke_agentstudy("minimal", "--manifest", str(path), "--pilot", "--rehearsal", *codex,
                         "--output", str(ledger), "--budget-usd", "1")
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ledger.read_text(encoding="utf-8"))
    assert [o["status"] for o in document["observations"]] == ["completed", "completed"], ran.stderr
    [treated] = [o for o in document["observations"] if o["scenario"] == "doc-bridge-mcp"]
    assert treated["agent"] == "codex" and not treated["permissionDenials"]
    record = treated["treatment"]
    assert record["serverCalls"] > record["serverCallErrors"], record  # at least one call answered
    assert record["serverCallsByTool"].get("get_file_summary"), record
    assert '"symbol_count":1' in treated["answer"], treated["answer"]  # the deep index's summary, quoted
    assert not any(name.endswith("build_deep_index") for name in treated["toolCallsByName"])
    assert document["mcpServer"]["prepared"][0]["steps"] == [{"step": "build_deep_index", "ok": True}]
    _untouched(repo)
