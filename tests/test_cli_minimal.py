"""`agentstudy minimal`: dry runs start nothing; bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.rehearsal.example_study import build_example_study


def _invoke(args: list[str], env: dict[str, str] | None = None) -> Any:
    runner = CliRunner()
    return runner.invoke(main, args, env=env or {}, catch_exceptions=False)




@pytest.mark.usefixtures("no_processes_no_sockets")
@pytest.mark.parametrize(("flags", "attempts"), [([], 36), (["--pilot"], 2)])
def test_dry_run_counts_without_any_process(original_manifest: Path, flags: list[str], attempts: int) -> None:
    result = _invoke(["minimal", "--dry-run", "--manifest", str(original_manifest), *flags])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["attempts"] == attempts
    assert report["scenarios"] == {"repository-only": attempts // 2, "doc-bridge-mcp": attempts // 2}
    assert report["claudeProcesses"] == 0 and report["networkCalls"] == 0
    assert report["transport"] == "http"
    assert report["repositoriesChecked"] == []


@pytest.mark.usefixtures("no_processes_no_sockets")
def test_dry_run_cli_transport_needs_no_credentials(original_manifest: Path) -> None:
    result = _invoke(["minimal", "--dry-run", "--transport", "cli", "--manifest", str(original_manifest)])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["transport"] == "cli"


def test_shipped_command_dry_run(original_manifest: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "agentstudy", "minimal", "--dry-run", "--manifest", str(original_manifest)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["attempts"] == 36


def test_dry_run_with_roots_checks_the_checkouts(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    result = _invoke(["minimal", "--dry-run", "--manifest", str(study.manifest_path), *roots])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["repositoriesChecked"] == list(study.roots)
    first = next(iter(study.roots.values()))
    (first / "README.md").write_text("dirty\n", encoding="utf-8")
    dirty = _invoke(["minimal", "--dry-run", "--manifest", str(study.manifest_path), *roots])
    assert dirty.exit_code == 2
    assert "not clean" in dirty.stderr


def _bad_input_cases(tmp_path: Path, manifest: Path) -> list[tuple[list[str], str]]:
    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"version": ', encoding="utf-8")
    short_pin = tmp_path / "short-pin.json"
    document = json.loads(manifest.read_text(encoding="utf-8"))
    document["repositories"]["doc-bridge"] = "948e8b22"
    short_pin.write_text(json.dumps(document), encoding="utf-8")
    existing = tmp_path / "existing-ledger.json"
    existing.write_text("keep me\n", encoding="utf-8")
    run = ["--pilot", "--transport", "cli", "--model", "claude-haiku-5-5", "--budget-usd", "1"]
    return [
        (["minimal", "--dry-run", "--manifest", str(tmp_path / "missing.json")], "manifest not found"),
        (["minimal", "--dry-run", "--manifest", str(malformed)], "not valid JSON"),
        (["minimal", "--dry-run", "--manifest", str(short_pin)], "40 lowercase hex"),
        (
            ["minimal", "--manifest", str(manifest), *run, "--approve-budget", "--output", str(existing)],
            "already exists",
        ),
        (["minimal", "--manifest", str(manifest), *run, "--output", str(tmp_path / "new.json")], "--approve-budget"),
        (["minimal", "--manifest", str(manifest), "--pilot", "--run", "--dry-run"], "mutually exclusive"),
        (
            ["minimal", "--manifest", str(manifest), *run[:-2], "--budget-usd", "NaN", "--approve-budget"],
            "finite amount above zero",
        ),
        (["minimal", "--manifest", str(manifest), "--dry-run", "--root", "doc-bridge"], "NAME=PATH"),
    ]


def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, original_manifest: Path) -> None:
    cases = _bad_input_cases(tmp_path, original_manifest)
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    for args, reason in cases:
        result = _invoke(args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("agentstudy: error: ") and reason in lines[0]
    after = {p: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before


def test_help_names_every_seed_flag() -> None:
    result = _invoke(["minimal", "--help"])
    for flag in ["--manifest", "--dry-run", "--pilot", "--run", "--approve-budget", "--transport", "--root",
                 "--output", "--claude-bin", "--attempt-budget-usd", "--cli-version", "STUDY_MODEL",
                 "STUDY_BUDGET_USD"]:
        assert flag in result.stdout


@pytest.mark.usefixtures("no_processes_no_sockets")
def test_dry_run_cli_never_calls_the_binary(original_manifest: Path, fake_claude: Any) -> None:
    result = _invoke(["minimal", "--dry-run", "--transport", "cli", "--pilot", "--claude-bin", str(fake_claude.path),
                      "--manifest", str(original_manifest)])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["claudeProcesses"] == 0
    assert fake_claude.calls == [], "not even a --version probe"
