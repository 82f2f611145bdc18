"""``agentstudy ledger`` redraws a sequential run's task order from its seed (issue 40, low note).

The break: the verifier checked the observations against ``sequential.taskOrder`` but never the order
against ``sequential.seed``, so a ledger whose seed or not-yet-reached task order was changed (and
resealed) verified. The ledger now records the study's task ids (``sequential.taskPool``) and the
verifier redraws ``taskOrder`` from them with the seed; an older ledger without the pool still reads.
Real run: the 20-task sequential rehearsal (http, one attempt at a time) against the scripted server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import seal_ledger
from concurrent_ledgers import verified


@pytest.fixture(scope="module")
def sequential_ledger(sequential_stopped: tuple[Any, Path, Path]) -> tuple[Path, Path]:
    """The ledger of the 20-task rehearsal and its study file (shared, read only)."""
    _, manifest, output = sequential_stopped
    verified(output)
    return output, manifest


def _ledger_command(tmp_path: Path, document: dict[str, Any]) -> Any:
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(seal_ledger(document)), encoding="utf-8")
    return CliRunner().invoke(main, ["ledger", str(changed)])


def test_the_ledger_records_the_pool_its_seed_permuted(sequential_ledger: tuple[Path, Path]) -> None:
    output, manifest = sequential_ledger
    block = json.loads(output.read_bytes())["sequential"]
    assert block["taskPool"] == [task["id"] for task in json.loads(manifest.read_text())["tasks"]]
    assert len(block["taskOrder"]) == block["maxTasks"] == 20 and set(block["taskOrder"]) <= set(block["taskPool"])
    assert CliRunner().invoke(main, ["ledger", str(output)]).exit_code == 0


@pytest.mark.parametrize("change", [
    lambda s: s.update(seed=s["seed"] + 1),
    lambda s: s.update(taskOrder=[*s["taskOrder"][:-2], s["taskOrder"][-1], s["taskOrder"][-2]]),
], ids=["another seed", "tasks not yet reached swapped"])
def test_an_order_its_seed_does_not_draw_is_refused(tmp_path: Path, sequential_ledger: tuple[Path, Path],
                                                     change: Any) -> None:
    document = json.loads(sequential_ledger[0].read_bytes())
    change(document["sequential"])
    result = _ledger_command(tmp_path, document)
    assert result.exit_code != 0
    assert "is not the order seed" in result.output, result.output


def test_an_older_ledger_without_a_pool_still_reads(tmp_path: Path, sequential_ledger: tuple[Path, Path]) -> None:
    document = json.loads(sequential_ledger[0].read_bytes())
    del document["sequential"]["taskPool"]
    result = _ledger_command(tmp_path, document)
    assert result.exit_code == 0, result.output
