"""A server whose executable lives in or beside a studied checkout never sees it (issue 29, break 3).

The sandbox used to bind the executable's directory read-only without the live-checkout check of
arguments and ``--sandbox-bind``: a script committed at the repository root, or one next to the
checkout, let the server read git-ignored files and ``.git/config`` during ``init``,
``--dry-run --probe`` and the attempt. Now a command beside the checkout is bound as the file alone,
and one inside it is refused (exit 2, naming it) unless ``{checkout}`` is written.
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
from agentstudy.io.containment import ContainmentError
from agentstudy.io.server_binds import server_read_only_paths
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.rehearsal.example_study import build_example_study

from checkout_run import run_agentstudy
from corpus_git import committed_repo

HOSTILE = (Path(__file__).resolve().parent / "data" / "hostile_env_server.py").read_text(encoding="utf-8")
IGNORED = "git-ignored-secret-0123456789"


def _shows(path: Path, guarded: Path) -> bool:
    return path == guarded or guarded in path.parents or path in guarded.parents


def _script(path: Path) -> Path:
    path.write_text(f"#!{sys.executable}\n{HOSTILE}", encoding="utf-8")
    path.chmod(0o755)
    return path


def _checkout(tmp_path: Path, *, script_inside: bool = False) -> tuple[Path, str]:
    repo = tmp_path / "work" / "repo"
    files = {"README.md": "hello\n", ".gitignore": "secret.txt\n"}
    if script_inside:
        files["server.py"] = f"#!{sys.executable}\n{HOSTILE}"
    pin = committed_repo(repo, files)
    (repo / "secret.txt").write_text(IGNORED + "\n", encoding="utf-8")
    if script_inside:
        (repo / "server.py").chmod(0o755)
    return repo, pin


def test_a_server_beside_the_checkout_is_bound_alone_and_cannot_read_it(tmp_path: Path) -> None:
    repo, pin = _checkout(tmp_path)
    script = _script(tmp_path / "work" / "server.py")
    spec = McpServerSpec(name="s", command=(str(script), "--root", "{root}"), config_candidates=())
    with ServerCorpora(spec, {"repo": (repo, pin)}) as corpora:
        paths = corpora.paths("repo")
        bound = server_read_only_paths(spec, paths, os.environ.get("PATH"))
        assert script in bound
        assert not [p for p in bound if _shows(p.resolve(), repo.resolve())], bound
        from agentstudy.io.server_world import server_world  # the world every server is started in

        home, tmp = tmp_path / "home", tmp_path / "tmp"
        home.mkdir()
        tmp.mkdir()
        world = server_world(spec, paths, home, tmp, {"PATH": "/usr/bin:/bin"})
        done = subprocess.run([*world.command("bwrap"), "--report-now"], capture_output=True, timeout=60,
                              check=False, env=world.env, cwd=world.cwd)
    out = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    assert IGNORED not in out and str(repo) not in out


@pytest.mark.parametrize("form", ["script", "bin-dir"])
def test_a_server_inside_the_checkout_is_refused_unless_checkout_is_written(tmp_path: Path, form: str) -> None:
    repo, pin = _checkout(tmp_path, script_inside=True)
    command = repo / "server.py"
    if form == "bin-dir":  # an installation inside the checkout (its own bin/)
        (repo / "tools" / "bin").mkdir(parents=True)
        (repo / "tools" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
        command = _script(repo / "tools" / "bin" / "server")
    spec = McpServerSpec(name="s", command=(str(command), "--root", "{root}"), config_candidates=())
    with ServerCorpora(spec, {"repo": (repo, pin)}) as corpora, \
            pytest.raises(ContainmentError, match="lives inside the studied checkout") as refused:
        server_read_only_paths(spec, corpora.paths("repo"), os.environ.get("PATH"))
    assert str(command) in str(refused.value) or str(repo / "tools") in str(refused.value)
    deliberate = McpServerSpec(name="s", command=(str(command), "--root", "{checkout}"), config_candidates=())
    with ServerCorpora(deliberate, {"repo": (repo, pin)}) as corpora:
        assert server_read_only_paths(deliberate, corpora.paths("repo"), os.environ.get("PATH"))


def test_init_refuses_a_server_committed_in_the_checkout(tmp_path: Path) -> None:
    repo, _ = _checkout(tmp_path, script_inside=True)
    study_dir = tmp_path / "study"
    done = run_agentstudy("init", str(study_dir), f"--repo=r={repo}", "--mcp-command", f"{repo}/server.py {{root}}")
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("agentstudy: error:")]
    assert len(errors) == 1 and f"{repo}/server.py" in errors[0] and "studied checkout" in errors[0], done.stderr
    assert not study_dir.exists()


def test_a_run_and_its_dry_run_probe_refuse_a_server_in_the_checkout(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    root = next(iter(study.roots.values()))
    script = _script(root / "server.py")
    with (root / ".git" / "info" / "exclude").open("a", encoding="utf-8") as exclude:
        exclude.write("server.py\n")  # git-ignored: the checkout stays clean
    config = tmp_path / "inside.json"
    config.write_text(json.dumps({"mcpServers": {"doc-bridge": {"command": str(script), "args": ["{root}"]}}}))
    roots = [f"--root={n}={p}" for n, p in study.roots.items()]
    base = ["minimal", "--manifest", str(study.manifest_path), "--pilot", *roots, "--model", "claude-haiku-4-5",
            "--budget-usd", "1", "--output", str(tmp_path / "ledger.json"), "--transport", "http", "--rehearsal",
            "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5", "--mcp-config", str(config),
            "--mcp-tools", "doc.search,doc.get", "--server-config-candidates", ""]
    for extra in (["--dry-run", "--probe"], []):
        result = CliRunner().invoke(main, [*base, *extra], env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)
        assert result.exit_code == 2, result.output
        assert str(script) in result.stderr and "studied checkout" in result.stderr, result.stderr
        assert not (tmp_path / "ledger.json").exists()
