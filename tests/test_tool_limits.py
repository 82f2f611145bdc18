"""Limits known before spend, and one rule for tool names (issue 29, breaks 13 and 14).

Break 13: a server listing 10,000 tools passed ``--dry-run --probe`` and ``init``, then attempt 1
failed to start because ``--disallowedTools`` was one 260 KB argument (Linux allows 128 KiB per
argument): charged, exit 1. Now ``init``, ``--dry-run --probe`` and the run's preflight refuse it
(exit 2, nothing reserved). Break 14: ``init`` accepted tool names its own loader refuses (U+202E,
a newline, the empty name), printed them raw and wrote a study.json the loader refused. Now the
one rule of ``protocol.tool_names`` is checked by ``init``, the loader, the flags and the run, and
the terminal never gets a raw control or bidirectional character. Real servers (official SDK,
``tests/data/many_tools_server.py``), the real ``init`` and ``minimal`` commands.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from corpus_git import committed_repo
from fakes import FakeClaude
from inprocess_cli import invoke_agentstudy

SERVER = str(Path(__file__).resolve().parent / "data" / "many_tools_server.py")
ODD_NAMES = {"bidi": "notes.\u202eevil", "newline": "notes.a\nb", "empty": ""}
RAW = ("\u202e", "\x1b")


def _init(tmp_path: Path, *server_args: str) -> tuple[int, str, Path]:
    """``agentstudy init`` of a one-file repository against the many-tools server, in this process (the tests read
    its exit code, its stderr and what it wrote, not its process): (exit code, stderr, the study directory)."""
    repo = tmp_path / "repo"
    committed_repo(repo, {"notes.md": "Plain notes.\n"})
    study_dir = tmp_path / "study"
    words = " ".join(shlex.quote(a) for a in server_args)
    done = invoke_agentstudy("init", str(study_dir), f"--repo=r={repo}", "--containment", "restricted",
                             "--mcp-command", f"{sys.executable} {SERVER} {words}")
    return done.returncode, done.stderr, study_dir


def test_init_refuses_a_server_whose_deny_list_no_argument_can_carry(tmp_path: Path) -> None:
    code, stderr, study_dir = _init(tmp_path, "10000")
    assert code == 2, stderr[-2000:]
    [line] = stderr.strip().splitlines()
    assert "--disallowedTools" in line and "10001 tools" in line and "131,071 bytes" in line, line
    assert not study_dir.exists()


@pytest.mark.parametrize("kind", ["bidi", "empty"])
def test_init_refuses_tool_names_the_loader_refuses_and_prints_none_raw(tmp_path: Path, kind: str) -> None:
    code, stderr, study_dir = _init(tmp_path, "0", ODD_NAMES[kind])
    assert code == 2, stderr[-2000:]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "tool name" in lines[0], stderr
    assert not any(raw in stderr for raw in RAW)
    assert not study_dir.exists()


def _minimal(study: ExampleStudy, tmp_path: Path, server_args: list[str], *extra: str) -> object:
    config = tmp_path / "many.json"
    config.write_text(json.dumps({"mcpServers": {"many": {"command": sys.executable, "args": [SERVER, *server_args]}}}))
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    args = ["minimal", "--manifest", str(study.manifest_path), *roots, "--model", "claude-haiku-5-5",
            "--budget-usd", "1", "--output", str(tmp_path / "ledger.json"), "--containment", "restricted",
            "--mcp-config", str(config), "--mcp-tools", "notes.search", "--mcp-probe", "notes.search",
            "--mcp-probe-arguments", '{"query": "x"}', "--server-config-candidates", "", *extra]
    return CliRunner().invoke(main, args, env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def test_dry_run_probe_and_the_run_refuse_a_10000_tool_server_before_any_reservation(
    study: ExampleStudy, tmp_path: Path, fake_claude: FakeClaude
) -> None:
    # --pilot: the first task's one corpus, so one 10,000-tool server per command (the full schedule starts three)
    probe = _minimal(study, tmp_path, ["10000"], "--dry-run", "--probe", "--pilot")
    assert probe.exit_code == 2, probe.output  # type: ignore[attr-defined]
    assert "--disallowedTools" in probe.stderr and "131,071 bytes" in probe.stderr  # type: ignore[attr-defined]
    run = _minimal(study, tmp_path, ["10000"], "--pilot", "--transport", "cli", "--approve-budget",
                   "--claude-bin", str(fake_claude.path))
    assert run.exit_code == 2, run.output  # type: ignore[attr-defined]
    assert "--disallowedTools" in run.stderr  # type: ignore[attr-defined]
    assert not (tmp_path / "ledger.json").exists(), "nothing reserved"
    assert fake_claude.records == [], "no attempt started"


@pytest.mark.parametrize("kind", ["newline"])
def test_the_run_refuses_a_listed_tool_name_the_loader_refuses(study: ExampleStudy, tmp_path: Path, kind: str) -> None:
    result = _minimal(study, tmp_path, ["0", ODD_NAMES[kind]], "--dry-run", "--probe", "--pilot")  # one corpus
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert "tool name" in stderr and not any(raw in stderr for raw in RAW), stderr


@pytest.mark.parametrize("kind", ["bidi", "newline"])  # an empty entry of a comma list names nothing
def test_the_flags_share_the_rule(study: ExampleStudy, tmp_path: Path, kind: str) -> None:
    result = _minimal(study, tmp_path, ["0"], "--dry-run", "--mcp-tools", f"notes.search,{ODD_NAMES[kind]}")
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert not any(raw in result.stderr for raw in RAW)  # type: ignore[attr-defined]
