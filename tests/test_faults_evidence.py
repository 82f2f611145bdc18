"""Evidence under faults (round 3): open reservations of a concurrent run, a forged adjudication companion, a
journal cut, emptied or deleted, an ill-formed minimal ledger. Ledgers come from real runs of a fake codex
(``codex_fakes``); a crash is made from them the way a killed runner leaves one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger_bytes
from codex_fakes import example_study, fake_codex_stream, run_codex_study, usage_line


@pytest.fixture(scope="module")
def concurrent(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A finished ``--concurrency 2`` pilot of a fake codex with a plain usage."""
    base = tmp_path_factory.mktemp("faults-evidence")
    study = example_study(base)
    fake = fake_codex_stream(base / "fake", [usage_line(654, 126)])
    document = run_codex_study(study, fake, base / "ledger.json", "--concurrency", "2")
    assert verify_ledger_bytes((base / "ledger.json").read_bytes()).verified
    assert len(document["observations"]) == 2
    return document


def crashed_with_open(document: dict[str, Any], held: int) -> dict[str, Any]:
    """``document`` as a runner killed with its last ``held`` attempts reserved and unsettled leaves it: status
    running, the attempts in ``openReservations`` (still counted in ``spent``), resealed."""
    crashed = json.loads(json.dumps(document))
    kept, opened = crashed["observations"][:-held], crashed["observations"][-held:]
    crashed["observations"] = kept
    crashed["openReservations"] = [{"taskId": o["taskId"], "scenario": o["scenario"], "repetition": o["repetition"],
                                    "reservedUsd": o["reservedUsd"], "chargedUsd": 0.0} for o in opened]
    crashed["status"] = "running"
    for key in ("finishedAt", "stopReason"):
        crashed.pop(key, None)
    spent = sum(o["chargedUsd"] for o in kept) + sum(o["reservedUsd"] for o in opened)
    crashed["budget"]["spent"] = spent
    crashed["budget"]["cumulativeCapExceeded"] = spent > crashed["budget"]["cap"]
    return seal_ledger(crashed)


def test_the_ledger_summary_shows_every_open_reservation_of_a_concurrent_run(
        concurrent: dict[str, Any], tmp_path: Path) -> None:
    # It printed "Open reservation none" (openReservation: null) while openReservations held the money.
    crashed = crashed_with_open(concurrent, 2)
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(crashed))
    assert verify_ledger_bytes(path.read_bytes()).verified
    held = sum(each["reservedUsd"] for each in crashed["openReservations"])
    summary = json.loads(CliRunner().invoke(main, ["ledger", str(path), "--json"]).output)["ledger"]
    assert summary["openReservation"] is None
    assert [(o["taskId"], o["scenario"]) for o in summary["openReservations"]] == \
        [(o["taskId"], o["scenario"]) for o in crashed["openReservations"]]
    assert summary["openReservedUsd"] == pytest.approx(held)
    text = CliRunner().invoke(main, ["ledger", str(path)]).output
    line = next(line for line in text.splitlines() if line.startswith("Open reservation"))
    assert "none" not in line and line.startswith("Open reservations") and "2 open" in line
    for each in crashed["openReservations"]:
        assert each["taskId"] in line
