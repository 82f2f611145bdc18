"""Shared fixtures: paths to the specification material beside the checkout and the pinned CLI."""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentstudy.cli import COMMANDS
from claude_versions import CLAUDE_CODE_VERSIONS, ClaudeCode, installed_claude_code

from fakes import FakeClaude

if TYPE_CHECKING:
    from agentstudy.rehearsal.example_study import ExampleStudy

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ORIGINAL_MANIFEST = SHARED / "reference" / "original-artifacts" / "minimal-study-v1.json"


@pytest.fixture
def claude_bin() -> Path:
    """The pinned Claude Code binary: ``AGENTSTUDY_CLAUDE_BIN`` or the project's install; fail if absent."""
    explicit = os.environ.get("AGENTSTUDY_CLAUDE_BIN")
    binary = Path(explicit) if explicit else REPO / ".tools" / "claude-code" / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        pytest.fail(f"Claude Code binary missing at {binary}: run scripts/setup.sh")
    return binary


@pytest.fixture(params=sorted(CLAUDE_CODE_VERSIONS), ids=lambda version: f"claude-{version}")
def claude_code(request: pytest.FixtureRequest) -> ClaudeCode:
    """Each pinned Claude Code in turn (2.1.296, then 2.1.328): a test taking this fixture runs once per
    version (issue 33 item 8); fail if one is absent or reports another version."""
    try:
        return installed_claude_code(str(request.param))
    except LookupError as error:
        pytest.fail(str(error))


@pytest.fixture
def original_manifest() -> Path:
    """The original project's manifest, unchanged."""
    if not ORIGINAL_MANIFEST.exists():
        pytest.fail(f"specification material missing: {ORIGINAL_MANIFEST}")
    return ORIGINAL_MANIFEST


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeClaude:
    """A fake ``claude`` executable (see ``tests/fakes.py``) in its own temporary directory.

    The fake keeps its records beside itself, which a bubblewrap sandbox mounts read-only, so
    commands run with it default to ``--containment restricted`` (``AGENTSTUDY_CONTAINMENT``);
    the containment tests run it under bwrap explicitly.
    """
    monkeypatch.setenv("AGENTSTUDY_CONTAINMENT", "restricted")
    return FakeClaude(tmp_path / "fake-claude")


@pytest.fixture
def no_processes_no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any child process or socket an immediate test failure (dry runs start nothing).

    Every command module is imported first: the command line imports them lazily, and an
    import evaluating ``subprocess.Popen[bytes]`` must not meet the patched stand-in.
    """
    for module in sorted(set(COMMANDS.values())):
        importlib.import_module(f"agentstudy.commands.{module}")

    def forbidden(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a dry run must not start a process or open a socket")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(socket, "socket", forbidden)
    monkeypatch.setattr(socket, "create_connection", forbidden)


@pytest.fixture(scope="session")
def sequential_stopped(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExampleStudy, Path, Path]:
    """The 20-task sequential rehearsal (``tests/sequential_study.py``) run once per worker to its efficacy stop:
    (the study, its study file, the ledger). Several files read it; none may change these files."""
    from sequential_study import run_stopped

    return run_stopped(tmp_path_factory.mktemp("sequential-stopped"))


HEAVY_FIRST = ("test_ray_executor", "test_sequential_resume", "test_server_world_e2e", "test_power_command",
               "test_demo_e2e", "test_ray_signals", "test_sequential_run", "test_arm_fidelity_e2e", "test_signals",
               "test_provider_gemini_e2e", "test_ray_compare", "test_tool_descriptions", "test_gemini_demo",
               "test_view_e2e", "test_http_transport", "test_chain_faults", "test_provider_claude_code_e2e",
               "test_provider_codex_e2e", "test_gemini_attempt", "test_third_party_server_e2e",
               "test_study_three_agents_e2e", "test_attack_init_server", "test_concurrency",
               "test_late_internal_errors",
               "test_report_screen", "test_init_command", "test_ledger_home", "test_attack_codex",
               "test_report_containment", "test_attempt_reasons", "test_ledger_full_disk",
               "test_report_honest_intervals", "test_server_word_e2e")
"""The test files that took longest (``--durations``, a measured parallel run): under ``pytest -n`` a file runs
on one worker (``--dist loadfile``, scripts/check.sh) and files are handed out in collection order, so these go
first and the run does not end waiting for one of them."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the files of :data:`HEAVY_FIRST` first, in that order; every other file and every file's own order
    stay as collected."""
    rank = {name: index for index, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))
