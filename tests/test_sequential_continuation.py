"""A stopped sequential study stays stopped (issue 40 break 1): the 20-task rehearsal study stops for efficacy,
and every continuation of it (with or without --sequential, alone or as the tail of its chain) is refused with
the stop's reason, before anything is written (real HTTP on 127.0.0.1, the scripted Messages API server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main

MODEL = "claude-haiku-5-5"


def _command(study: Any, manifest: Path, output: Path, *extra: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["study", "--manifest", str(manifest), "--run", "--rehearsal", *roots, "--output", str(output),
            "--model", MODEL, "--budget-usd", "1", *extra]


@pytest.fixture(scope="module")
def stopped(sequential_stopped: tuple[Any, Path, Path]) -> tuple[Any, Path, Path]:
    """The 20-task rehearsal run to its efficacy stop (shared, read only)."""
    return sequential_stopped


def test_every_continuation_of_a_stopped_sequential_study_is_refused_with_its_stop(
        stopped: tuple[Any, Path, Path], tmp_path: Path) -> None:
    study, manifest, ledger = stopped
    record: dict[str, Any] = json.loads(ledger.read_bytes())["sequential"]
    assert record["stopReason"] == "efficacy" and record["tasksCompleted"] < 20
    before = ledger.read_bytes()
    reason = f"stopped for efficacy after {record['tasksCompleted']} tasks"
    for extra in ((), ("--sequential",), ("--concurrency", "2", "--attempt-budget-usd", "0.1")):
        output = tmp_path / "next.json"
        result = CliRunner().invoke(main, _command(study, manifest, output, "--continue-from", str(ledger), *extra),
                                    catch_exceptions=False)
        assert result.exit_code == 2, (extra, result.output)
        assert reason in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
        assert not output.exists()
    assert ledger.read_bytes() == before
