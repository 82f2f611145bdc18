"""The ``--version`` probe child sees none of our secrets (issue 15, Must-show).

A fake ``claude`` dumps the names of its environment during the probe. Four sentinel secrets
are set in the parent: directly through ``check_cli_version``, and end to end through
``agentstudy minimal`` and ``agentstudy adjudicate`` run as subprocesses, the probe's
environment holds none of them, and its private ``HOME``, ``TMPDIR`` and working directory
are gone afterwards.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io.claude_cli import version_argv, version_environment
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.runners.preflight import PreflightError, check_cli_version

from checkout_run import bundled_server_config, run_agentstudy
from fakes import FakeClaude

SECRET = "sentinel-secret-value"
SENTINELS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY")
MODEL = "claude-haiku-5-5"


def _parent() -> dict[str, str]:
    return {**os.environ, **{name: f"{SECRET}-{name}" for name in SENTINELS}, "AWS_ACCESS_KEY_ID": SECRET}


def _watching(fake: FakeClaude, marker: Path) -> Path:
    """Make ``fake`` dump its probe environment into ``marker``; the dump's path."""
    marker.mkdir(exist_ok=True)
    fake.behave(mode="ok", marker=str(marker), secretMarker=SECRET)
    return marker / "version-env.json"


def _assert_hermetic(dump_path: Path, parent: dict[str, str]) -> dict[str, Any]:
    assert dump_path.exists(), "the fake was probed"
    dump: dict[str, Any] = json.loads(dump_path.read_text(encoding="utf-8"))
    assert not set(SENTINELS) & set(dump["names"])
    assert not [n for n in dump["names"] if n.startswith(("AWS_", "GITHUB_", "ANTHROPIC_", "OPENAI_"))]
    assert dump["valuesWithSecret"] == []
    assert dump["home"] != parent.get("HOME") and dump["tmpdir"] != parent.get("TMPDIR")
    for private in (dump["home"], dump["tmpdir"], dump["cwd"]):
        assert not Path(private).exists(), f"{private} was removed"
    assert dump["cwd"] != os.getcwd()
    return dump


def test_check_cli_version_probe_sees_no_secret(fake_claude: FakeClaude, tmp_path: Path) -> None:
    dump_path = _watching(fake_claude, tmp_path / "marker")
    parent = _parent()
    assert check_cli_version(fake_claude.path, "2.1.296", parent, "restricted") == "2.1.296 (Claude Code)"
    dump = _assert_hermetic(dump_path, parent)
    assert set(dump["names"]) <= {"PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "HOME", "TMPDIR", "PWD"}
    assert fake_claude.calls == [["--version"]]


def test_a_wrong_version_is_still_refused(fake_claude: FakeClaude) -> None:
    fake_claude.behave(mode="ok", version="9.9.9 (Claude Code)")
    with pytest.raises(PreflightError, match="not the expected"):
        check_cli_version(fake_claude.path, "2.1.296", _parent(), "restricted")


def test_the_version_environment_is_the_allowlist(tmp_path: Path) -> None:
    env = version_environment(_parent(), tmp_path)
    assert env["HOME"] == str(tmp_path / "home") and env["TMPDIR"] == str(tmp_path / "tmp")
    assert env["PATH"] == os.environ["PATH"]
    assert not any(SECRET in value for value in env.values())
    assert set(env) <= {"PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "HOME", "TMPDIR"}


def test_version_argv(tmp_path: Path) -> None:
    assert version_argv(tmp_path / "claude") == [str(tmp_path / "claude"), "--version"]
    assert version_argv(Path("claude")) == ["claude", "--version"]
    assert version_argv(Path("bin/claude")) == [str(Path.cwd() / "bin" / "claude"), "--version"]


def test_minimal_and_adjudicate_probes_see_no_secret(tmp_path: Path) -> None:
    """The fakes record beside themselves, which bubblewrap would mount read-only: restricted."""
    study = build_example_study(tmp_path / "study")
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    parent = _parent()
    agent = FakeClaude(tmp_path / "agent")
    dump_path = _watching(agent, tmp_path / "agent-marker")
    ledger = tmp_path / "out" / "ledger.json"
    ledger.parent.mkdir()
    completed = run_agentstudy(
        "minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "cli", "--rehearsal", *roots,
        "--output", str(ledger), "--claude-bin", str(agent.path), "--model", MODEL, "--budget-usd", "1",
        "--mcp-config", str(bundled_server_config(tmp_path)), "--containment", "restricted", env=parent,
    )
    assert completed.returncode == 0, completed.stderr
    _assert_hermetic(dump_path, parent)
    assert SECRET not in completed.stdout + completed.stderr

    adjudicator = FakeClaude(tmp_path / "adjudicator")
    adjudicator_dump = _watching(adjudicator, tmp_path / "adjudicator-marker")
    judged = run_agentstudy(
        "adjudicate", str(ledger), "--manifest", str(study.manifest_path), *roots, "--rehearsal",
        "--claude-bin", str(adjudicator.path), "--model", MODEL, "--budget-usd", "1", "--containment", "restricted",
        env=parent,
    )
    _assert_hermetic(adjudicator_dump, parent)
    assert adjudicator.calls[0] == ["--version"]
    assert SECRET not in judged.stdout + judged.stderr
