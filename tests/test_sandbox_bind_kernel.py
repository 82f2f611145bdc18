"""``--sandbox-bind`` never shows the host's /proc, /sys or /dev to a server (issue 39 item 3).

The server has a private /proc of its own pid namespace (``io.server_world``), so the old workaround
``--sandbox-bind /proc`` is refused with its reason, exit 2, before anything is written or started —
by ``init``, by the run commands' flags, and in a study file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentstudy.protocol.sandbox_binds import kernel_bind_problem
from agentstudy.rehearsal.example_study import build_example_study

from checkout_run import run_agentstudy
from corpus_git import committed_repo


@pytest.mark.parametrize("path", ["/proc", "/proc/self/environ", "/sys", "/sys/fs", "/dev", "/dev/shm",
                                  "/tmp/../proc", "//proc"])
def test_kernel_paths_are_refused(path: str) -> None:
    problem = kernel_bind_problem(path)
    assert problem is not None and "never shown to the server" in problem and "\n" not in problem


@pytest.mark.parametrize("path", ["/usr/share", "/procedures", "/devices", "/etc/ssl", "/system"])
def test_other_paths_are_not_refused_for_that_reason(path: str) -> None:
    assert kernel_bind_problem(path) is None


@pytest.mark.parametrize("bind", ["/proc", "/sys/kernel", "/dev/null"])
def test_init_refuses_a_kernel_bind_with_exit_2_and_writes_nothing(tmp_path: Path, bind: str) -> None:
    repo = tmp_path / "repo"
    committed_repo(repo, {"README.md": "hello\n"})
    study = tmp_path / "study"
    done = run_agentstudy("init", str(study), f"--repo=r={repo}", "--mcp-command", "/usr/bin/true {root}",
                          "--sandbox-bind", bind)
    assert done.returncode == 2, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.strip()]
    assert f"--sandbox-bind {bind} is refused" in line and "private /proc" in line, line
    assert not study.exists()


def test_a_run_refuses_sandbox_bind_proc_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    ledger = tmp_path / "ledger.json"
    done = run_agentstudy("minimal", "--manifest", str(study.manifest_path), "--pilot", *roots, "--rehearsal",
                          "--budget-usd", "1", "--output", str(ledger), "--sandbox-bind", "/proc")
    assert done.returncode == 2, done.stderr
    assert "--sandbox-bind /proc is refused" in done.stderr, done.stderr
    assert not ledger.exists()
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
