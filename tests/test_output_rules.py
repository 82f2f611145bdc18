"""Output-path rules through the real command: each refusal is exit 2, before any agent starts or any spend."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from fakes import FakeClaude


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def _run(study: ExampleStudy, fake: FakeClaude, output: Path) -> subprocess.CompletedProcess[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return subprocess.run(
        [sys.executable, "-m", "agentstudy", "minimal", "--manifest", str(study.manifest_path), "--pilot",
         "--transport", "cli", "--approve-budget", *roots, "--output", str(output), "--claude-bin", str(fake.path),
         "--model", "claude-haiku-5-5", "--budget-usd", "1"],
        capture_output=True, text=True, check=False, timeout=120,
    )


def _refused(result: subprocess.CompletedProcess[str], fake: FakeClaude, reason: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and reason in result.stderr
    assert fake.records == [], "no agent was started"


def test_existing_file(tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude) -> None:
    output = tmp_path / "ledger.json"
    output.write_text("an earlier run\n", encoding="utf-8")
    _refused(_run(study, fake_claude, output), fake_claude, "already exists")
    assert output.read_text(encoding="utf-8") == "an earlier run\n"


def test_inside_a_corpus_checkout(study: ExampleStudy, fake_claude: FakeClaude) -> None:
    root = next(iter(study.roots.values()))
    output = root / "ledger.json"
    _refused(_run(study, fake_claude, output), fake_claude, "outside")
    assert not output.exists()


def test_through_a_symlinked_directory_into_a_checkout(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude
) -> None:
    link = tmp_path / "innocent"
    link.symlink_to(next(iter(study.roots.values())))
    _refused(_run(study, fake_claude, link / "ledger.json"), fake_claude, "outside")


def test_symlink_at_the_path(tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude) -> None:
    target = tmp_path / "elsewhere.json"
    output = tmp_path / "ledger.json"
    output.symlink_to(target)
    _refused(_run(study, fake_claude, output), fake_claude, "already exists")
    assert not target.exists()


@pytest.fixture
def immutable_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory nobody, root included, may write into (``chattr +i``)."""
    directory = tmp_path / "locked"
    directory.mkdir()
    subprocess.run(["chattr", "+i", str(directory)], check=True)
    yield directory
    subprocess.run(["chattr", "-i", str(directory)], check=True)


def test_unwritable_directory(immutable_dir: Path, study: ExampleStudy, fake_claude: FakeClaude) -> None:
    result = _run(study, fake_claude, immutable_dir / "ledger.json")
    assert result.returncode == 2, result.stderr
    assert "cannot create the ledger" in result.stderr or "not writable" in result.stderr
    assert fake_claude.records == []
    assert list(immutable_dir.iterdir()) == []


def test_the_agentstudy_checkout_itself(study: ExampleStudy, fake_claude: FakeClaude) -> None:
    output = Path(__file__).resolve().parents[1] / "ledger-should-not-exist.json"
    _refused(_run(study, fake_claude, output), fake_claude, "outside")
    assert not output.exists()
