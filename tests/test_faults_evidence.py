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
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.protocol.adjudication import MinimalAdjudication
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger_bytes
from agentstudy.protocol.records import MinimalLedger
from codex_fakes import example_study, fake_codex_stream, run_codex_study, usage_line
from test_report_builders import companion, full_study, ledger, write


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


def _sealed_companion(ledger_bytes: bytes, outcomes: dict[int, str | None]) -> dict[str, Any]:
    """A companion as the adjudicator writes it (``MinimalAdjudication.to_json``)."""
    built = companion(ledger_bytes, outcomes)
    return MinimalAdjudication.model_validate({k: v for k, v in built.items() if k != "adjudicationHash"}).to_json()


@pytest.mark.parametrize("command", ["report", "power"])
def test_a_forged_adjudication_companion_is_refused(tmp_path: Path, command: str) -> None:
    # Every item edited from incorrect to correct (score 1.0): `report LEDGER --adjudication FORGED` exited 0 and
    # showed "1.00 (correct)"; only the companion's money was checked.
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    honest = _sealed_companion(data, dict.fromkeys(range(36), "incorrect"))
    (tmp_path / "honest.json").write_text(json.dumps(honest))
    result = CliRunner().invoke(main, [command, str(tmp_path / "ledger.json"), "--adjudication",
                                       str(tmp_path / "honest.json")])
    assert result.exit_code == 0, result.output
    forged = json.loads(json.dumps(honest))
    for item in forged["items"]:
        item.update(rubric="correct", score=1.0)
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    stripped = {k: v for k, v in forged.items() if k != "adjudicationHash"}
    (tmp_path / "stripped.json").write_text(json.dumps(stripped))
    for name in ("forged.json", "stripped.json"):
        result = CliRunner().invoke(main, [command, str(tmp_path / "ledger.json"), "--adjudication",
                                           str(tmp_path / name)])
        assert result.exit_code == 2, (name, result.output)
        assert "the adjudication companion does not verify" in result.stderr
        assert "1.00 (correct)" not in result.output


def test_the_companion_hash_covers_its_ledger_binding(tmp_path: Path) -> None:
    from agentstudy.protocol.adjudication import companion_hash_problem

    data = write(tmp_path / "ledger.json", ledger(full_study()))
    honest = _sealed_companion(data, {0: "correct"})
    assert companion_hash_problem(honest) is None
    assert companion_hash_problem({**honest, "ledgerSha256": "0" * 64}) is not None


@pytest.mark.parametrize(("edit", "named"), [
    (lambda d: d.pop("version"), "version"),
    (lambda d: d.update(version=5), "version"),
    (lambda d: d["budget"].update(cap=float("nan")), "not strict JSON"),
])
def test_an_ill_formed_minimal_ledger_is_named_as_one(concurrent: dict[str, Any], tmp_path: Path,
                                                      edit: Any, named: str) -> None:
    # It was described as an "invalid controlled-study-observation-ledger".
    document = json.loads(json.dumps(concurrent))
    edit(document)
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(document))
    for text in (path.read_text(), path.read_text()[:300]):
        path.write_text(text)
        result = CliRunner().invoke(main, ["ledger", str(path)])
        assert result.exit_code == 2, result.output
        assert "controlled-study" not in result.stderr, result.stderr
        assert "does not verify" in result.stderr
    assert named in result.stderr or "not strict JSON" in result.stderr


def _journaled_crash(document: dict[str, Any], path: Path) -> None:
    """The ledger a run killed after settling both attempts leaves: its first (running) snapshot and a journal of
    a start record and two change records (one per settled attempt), written by the runner's own writer."""
    finished = MinimalLedger.model_validate(document)
    observations = list(finished.observations)
    budget = finished.budget

    def state(count: int) -> MinimalLedger:
        spent = sum(o.charged_usd for o in observations[:count])
        return finished.model_copy(update={
            "observations": observations[:count], "status": "running", "finished_at": None, "stop_reason": None,
            "budget": budget.model_copy(update={"spent": spent, "measured": spent})})

    store = JournaledLedger(path, state(0))
    try:
        store.record(state(1))
        store.record(state(2))
    finally:
        store.close()


@pytest.fixture
def crashed(concurrent: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "ledger.json"
    _journaled_crash(concurrent, path)
    summary = json.loads(CliRunner().invoke(main, ["ledger", str(path), "--json"]).output)["ledger"]
    assert summary["observations"] == 2 and summary["verified"] and summary["closed"] is False
    assert summary["journalRecords"] == 3
    assert "journal" in json.loads(path.read_text())
    return path


def test_a_journal_cut_at_a_record_boundary_is_summarised_as_crashed(crashed: Path) -> None:
    # Dropping the last two records printed "verified … the hash chain holds" (0 observations, spent 0.0).
    journal = crashed.with_name(crashed.name + ".journal")
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join(lines[:-3]) + b"\n")
    result = CliRunner().invoke(main, ["ledger", str(crashed), "--json"])
    summary = json.loads(result.output)["ledger"]
    assert summary["closed"] is False and summary["journalRecords"] == 1 and summary["observations"] == 0
    text = CliRunner().invoke(main, ["ledger", str(crashed)]).output
    assert "crashed (not closed)" in text
    assert "cannot be proven" in text and "verified up to its last record" in text


@pytest.mark.parametrize("damage", ["emptied", "deleted"])
def test_an_emptied_or_deleted_journal_is_refused(crashed: Path, damage: str) -> None:
    # Both gave "verified" with 0 observations and spent 0.0.
    journal = crashed.with_name(crashed.name + ".journal")
    if damage == "emptied":
        journal.write_bytes(b"")
    else:
        journal.unlink()
    for command in (["ledger", str(crashed)], ["report", str(crashed)], ["power", str(crashed)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, (command, result.output)
        assert "journal" in result.stderr and "cannot be known" in result.stderr, result.stderr
