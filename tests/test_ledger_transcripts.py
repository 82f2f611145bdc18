"""``agentstudy ledger`` verifies the private transcripts beside a ledger (issue 40 low note): a 0755 directory,
a transcript replaced by a symlink, one changed or missing, or a stray file is refused (exit 2, one line); the
untouched directory verifies. A real rehearsal run (http on 127.0.0.1) writes them."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.transcripts import transcript_dir
from agentstudy.rehearsal.example_study import build_example_study


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("transcripts")
    study = build_example_study(dest / "study")
    output = dest / "ledger.json"
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    result = CliRunner().invoke(main, ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--pilot-tasks",
                                       "2", "--transport", "http", "--rehearsal", *roots, "--output", str(output),
                                       "--model", "claude-haiku-5-5", "--budget-usd", "1"],
                                env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return output


def _ledger(path: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["ledger", str(path), *extra])
    return result.exit_code, result.output


def _first(path: Path) -> Path:
    name = json.loads(path.read_bytes())["observations"][0]["transcriptFile"]
    return transcript_dir(path) / name


def _symlinked(path: Path) -> None:
    target = _first(path)
    shutil.move(target, target.with_name("moved"))
    target.symlink_to(target.with_name("moved"))


def _changed(path: Path) -> None:
    target = _first(path)
    target.write_bytes(target.read_bytes() + b"\n")


CASES: list[tuple[Callable[[Path], None], str]] = [
    (lambda p: transcript_dir(p).chmod(0o755), "mode 0755"),
    (_symlinked, "not a regular file of mode 0600"),
    (_changed, "does not match the SHA-256"),
    (lambda p: _first(p).unlink(), "is missing"),
    (lambda p: os.close(os.open(transcript_dir(p) / "stray.jsonl", os.O_CREAT | os.O_WRONLY, 0o600)),
     "named by no observation"),
]


@pytest.mark.parametrize(("change", "says"), CASES)
def test_a_changed_transcripts_directory_is_refused(run: Path, tmp_path: Path, change: Callable[[Path], None],
                                                    says: str) -> None:
    assert _ledger(run)[0] == 0
    copy = tmp_path / run.name
    shutil.copy2(run, copy)
    shutil.copytree(transcript_dir(run), transcript_dir(copy), symlinks=True)
    assert _ledger(copy)[0] == 0
    change(copy)
    code, output = _ledger(copy)
    assert code == 2 and says in output and len(output.strip().splitlines()) == 1, output
    code, output = _ledger(copy, "--allow-unverified")
    assert code == 0 and says in output
