"""Issue 15: the server's view of a corpus ({root}, {config}, {checkout}), --cli-base-url, --containment refusals.

Real parts throughout: example corpora in git repositories, the bundled MCP server through the
official SDK, the real pinned Claude Code binary against a scripted server on 127.0.0.1 playing
an LLM gateway.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.containment import ContainmentError, command_paths
from agentstudy.io.server_binds import server_read_only_paths
from agentstudy.io.server_corpus import ServerCorpora, ServerCorpusError
from agentstudy.protocol.mcp_spec import LIVE_CHECKOUT_NOTE, McpServerSpec
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer

from corpus_git import committed_repo, git

GATEWAY_TOKEN = "gw-token-0123456789abcdef"
HTTP_REHEARSAL = ("--transport", "http", "--rehearsal", "--input-usd-per-million", "0.5",
                  "--output-usd-per-million", "2.5")


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def test_root_is_a_filtered_snapshot_and_config_resolves_inside_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    pin = committed_repo(repo, {"tool.config.json": '{"committed": true}', "README.md": "hello\n",
                                ".env": "SECRET=1\n", "study/minimal-study/answers.md": "the key\n"})
    (repo / "untracked.config.json").write_text("{}", encoding="utf-8")
    spec = McpServerSpec(name="s", command=("srv", "--root", "{root}", "--config", "{config}"),
                         probe_arguments={"path": "{root}/README.md"},
                         config_candidates=("untracked.config.json", "tool.config.json"))
    with ServerCorpora(spec, {"repo": (repo, pin)}) as corpora:
        paths = corpora.paths("repo")
        snapshot = Path(paths.root)
        files = sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if p.is_file())
        assert files == ["README.md", "tool.config.json"], "no dotfile, no answer key, no untracked file"
        assert paths.config == str(snapshot / "tool.config.json")
        assert paths.checkout is None and paths.git is None
        assert spec.argv(paths) == ["srv", "--root", str(snapshot), "--config", str(snapshot / "tool.config.json")]
        assert spec.probe_arguments_for(paths) == {"path": f"{snapshot}/README.md"}
        assert not os.access(snapshot / "README.md", os.W_OK) or os.geteuid() == 0
        assert (snapshot.stat().st_mode & 0o222) == 0, "the snapshot is read-only"
    assert not snapshot.exists(), "removed when the run ends"


def test_a_config_only_in_the_working_tree_is_not_found(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    pin = committed_repo(repo, {"README.md": "hello\n"})
    (repo / "tool.config.json").write_text("{}", encoding="utf-8")
    spec = McpServerSpec(name="s", command=("srv", "{config}"), config_candidates=("tool.config.json",))
    with pytest.raises(ServerCorpusError, match="no MCP server config file in the pinned corpus"):
        ServerCorpora(spec, {"repo": (repo, pin)}).__enter__()


def _run_args(study: ExampleStudy, tmp_path: Path, *extra: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", *roots, "--model", "claude-haiku-4-5",
            "--budget-usd", "1", "--output", str(tmp_path / "ledger.json"), *extra]


def test_checkout_placeholder_is_recorded_as_not_isolated_in_every_mcp_attempt(study: ExampleStudy,
                                                                                tmp_path: Path) -> None:
    config = tmp_path / "live.json"
    config.write_text(json.dumps({"mcpServers": {"doc-bridge": {
        "command": sys.executable,
        "args": ["-I", "-m", "agentstudy.rehearsal.mcp_server", "--root", "{checkout}", "--pin", "{pin}"]}}}))
    result = CliRunner().invoke(main, [*_run_args(study, tmp_path, *HTTP_REHEARSAL,
                                                  "--mcp-config", str(config))],
                                env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ledger = json.loads((tmp_path / "ledger.json").read_text(encoding="utf-8"))
    by_arm = {o["scenario"]: o for o in ledger["observations"]}
    assert LIVE_CHECKOUT_NOTE in by_arm["doc-bridge-mcp"]["isolationNotAchieved"]
    assert LIVE_CHECKOUT_NOTE not in by_arm["repository-only"]["isolationNotAchieved"]
    report = CliRunner().invoke(main, ["report", str(tmp_path / "ledger.json"), "--format", "md"],
                                catch_exceptions=False)
    assert LIVE_CHECKOUT_NOTE in report.output


@pytest.mark.parametrize(("url", "extra", "message"), [
    ("http://example.com", [], "loopback"),
    ("ftp://127.0.0.1/x", [], "http(s)://"),
    ("https://user:pw@gateway.invalid", [], "credentials"),
    ("http://127.0.0.1:9", ["--rehearsal"], "exclude each other"),
    ("https://gateway.invalid", ["--transport", "http", "--rehearsal"], "cli transport"),
])
def test_bad_cli_base_url_is_refused_before_anything(study: ExampleStudy, tmp_path: Path, url: str,
                                                     extra: list[str], message: str) -> None:
    args = _run_args(study, tmp_path, "--transport", "cli", "--approve-budget", "--cli-base-url", url, *extra)
    result = CliRunner().invoke(main, args, env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ledger.json").exists()


def test_cli_base_url_routes_the_real_cli_through_a_gateway_with_its_token(study: ExampleStudy, tmp_path: Path,
                                                                          claude_bin: Path) -> None:
    with RehearsalServer() as gateway:
        args = _run_args(study, tmp_path, "--transport", "cli", "--approve-budget", "--claude-bin", str(claude_bin),
                         "--cli-base-url", gateway.base_url)
        env: dict[str, Any] = {"AGENTSTUDY_GATEWAY_TOKEN": GATEWAY_TOKEN, "ANTHROPIC_API_KEY": "sk-ant-not-for-child",
                               "HOME": str(tmp_path / "no-login-home")}
        result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
        requests = gateway.requests
    assert result.exit_code == 0, result.output
    raw = (tmp_path / "ledger.json").read_text(encoding="utf-8")
    ledger = json.loads(raw)
    assert ledger["cli"]["baseUrl"] == gateway.base_url
    assert ledger["rehearsal"] is False
    assert GATEWAY_TOKEN not in raw and GATEWAY_TOKEN not in result.output
    assert requests and all(r.has_authorization and not r.has_x_api_key for r in requests)
    assert [o["status"] for o in ledger["observations"]] == ["completed", "completed"]


def test_unknown_containment_is_refused(study: ExampleStudy, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [*_run_args(study, tmp_path, "--rehearsal", "--containment", "docker")],
                                catch_exceptions=False)
    assert result.exit_code == 2
    assert not (tmp_path / "ledger.json").exists()


def test_bwrap_that_cannot_run_refuses_the_run_naming_the_way_out(study: ExampleStudy, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agentstudy.io.containment.BWRAP_SEARCH_PATH", str(tmp_path / "nowhere"))
    result = CliRunner().invoke(main, [*_run_args(study, tmp_path, *HTTP_REHEARSAL)],
                                env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)
    assert result.exit_code == 2
    assert "bubblewrap" in result.stderr and "--containment restricted" in result.stderr
    assert not (tmp_path / "ledger.json").exists()


def test_git_placeholder_is_a_private_clone_of_the_pin_only(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    pin = committed_repo(repo, {"README.md": "one\n"})
    (repo / "README.md").write_text("two\n", encoding="utf-8")
    git(repo, "commit", "-qam", "two")
    spec = McpServerSpec(name="s", command=("srv", "--git", "{git}", "--at", "{pin}"))
    with ServerCorpora(spec, {"repo": (repo, pin)}) as corpora:
        paths = corpora.paths("repo")
        assert paths.git is not None and spec.argv(paths) == ["srv", "--git", paths.git, "--at", pin]
        assert git(Path(paths.git), "rev-parse", "HEAD") == pin
        assert git(Path(paths.git), "rev-list", "--all").split() == [pin], "nothing after the pin"
        clone = Path(paths.git)
    assert not clone.exists()


def test_an_install_in_home_bin_binds_the_file_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile tester's find: ``$HOME/bin/claude`` used to bind all of HOME read-only."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / ".ssh").mkdir()
    agent = home / "bin" / "claude"
    agent.write_bytes(b"\x7fELF not really")
    agent.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    assert command_paths(str(agent)) == (agent,)
    venv_python = Path(sys.executable)
    bound = command_paths(str(venv_python))
    assert Path(sys.prefix) in bound and Path(sys.base_prefix).resolve() in {p.resolve() for p in bound}


@pytest.mark.parametrize("argument", ["--cache-dir=/tmp", "/", "{live}", "{live}/src", "{live_parent}"])
def test_server_arguments_that_bind_too_much_are_refused(tmp_path: Path, argument: str) -> None:
    repo = tmp_path / "repo"
    pin = committed_repo(repo, {"README.md": "hello\n", "src/a.py": "x = 1\n"})
    filled = argument.replace("{live}", str(repo)).replace("{live_parent}", str(tmp_path))
    spec = McpServerSpec(name="s", command=(sys.executable, "--root", "{root}", filled))
    with ServerCorpora(spec, {"repo": (repo, pin)}) as corpora, pytest.raises(ContainmentError):
        server_read_only_paths(spec, corpora.paths("repo"), os.environ.get("PATH"))


def test_a_broad_server_argument_refuses_the_run(study: ExampleStudy, tmp_path: Path) -> None:
    config = tmp_path / "broad.json"
    config.write_text(json.dumps({"mcpServers": {"doc-bridge": {
        "command": sys.executable,
        "args": ["-I", "-m", "agentstudy.rehearsal.mcp_server", "--root", "{root}", "--pin", "{pin}",
                 "--cache=/tmp"]}}}))
    result = CliRunner().invoke(main, [*_run_args(study, tmp_path, *HTTP_REHEARSAL, "--mcp-config", str(config))],
                                env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)
    assert result.exit_code == 2
    assert "too broad" in result.stderr
    assert not (tmp_path / "ledger.json").exists()
