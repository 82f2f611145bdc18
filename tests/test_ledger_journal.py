"""Issue 19, item 4: the ledger journal — every durable state rebuilds to exactly what a full rewrite writes.

Real files in tmp dirs; the ledger model is the example pilot's real ledger (http, rehearsal
server), replayed reservation by settlement into a ``JournaledLedger``. Crashes are made where
they can land: a torn last line, a snapshot announced whose replacement never happened, a
snapshot whose journal was never rotated. Damage before the last line is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.ledger_journal import JournaledLedger, LedgerJournalError, SnapshotPolicy, read_ledger
from agentstudy.io.ledger_store import CheckpointError, OutputPathError, _encode, journal_path, resolve_output
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger_bytes
from agentstudy.protocol.ledger_journal import rebuild_ledger
from agentstudy.protocol.records import JOURNAL_FORMAT, MinimalLedger
from agentstudy.protocol.run_records import OpenReservation
from test_minimal_tamper import run_http_pilot

EVERY_RECORD = SnapshotPolicy(min_bytes=1, growth=0, seconds=3600)
NEVER = SnapshotPolicy(min_bytes=1 << 40, seconds=1e9)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> MinimalLedger:
    """The example pilot's final ledger (two observations, awaiting adjudication)."""
    _study, ledger = run_http_pilot(tmp_path_factory.mktemp("journal"))
    return MinimalLedger.model_validate(json.loads(ledger.read_bytes()))


def _start(finished: MinimalLedger) -> MinimalLedger:
    start = finished.model_copy(deep=True)
    start.observations, start.status, start.finished_at = [], "running", None
    start.open_reservation = start.stop_reason = start.hash_algo = start.ledger_hash = None
    return start


def _steps(finished: MinimalLedger, ledger: MinimalLedger) -> Iterator[None]:
    """Move ``ledger`` through each attempt's reservation and settlement (yielding after each change)."""
    for observation in finished.observations:
        ledger.open_reservation = OpenReservation(task_id=observation.task_id, scenario=observation.scenario,
                                                  repetition=observation.repetition, reserved_usd=0.5)
        ledger.budget = ledger.budget.model_copy(update={"spent": _charged(ledger, Decimal("0.5"))})
        yield
        ledger.observations.append(observation.model_copy(update={"observation_hash": None}))
        ledger.open_reservation = None
        ledger.budget = ledger.budget.model_copy(update={"spent": _charged(ledger, Decimal(0))})
        yield


def _charged(ledger: MinimalLedger, reserved: Decimal) -> float:
    """``spent`` as the runner writes it: the observations' charges plus the open reservation, summed exactly."""
    return float(sum((Decimal(o.charged_usd) for o in ledger.observations), reserved))


def _full(ledger: MinimalLedger) -> bytes:
    """What the old full rewrite wrote for this state (a running one saying its journal is kept beside it)."""
    return _encode(seal_ledger(ledger.model_copy(update={"journal": JOURNAL_FORMAT}).to_json()))


def _read(path: Path) -> bytes:
    return read_ledger(path, path.read_bytes()).data


@pytest.mark.parametrize("policy", [EVERY_RECORD, NEVER], ids=["snapshot-every-record", "journal-only"])
def test_every_durable_state_reads_back_as_the_full_rewrite_and_the_close_removes_the_journal(
    tmp_path: Path, finished: MinimalLedger, policy: SnapshotPolicy
) -> None:
    path = tmp_path / "ledger.json"
    ledger = _start(finished)
    store = JournaledLedger(path, ledger, policy=policy)
    assert path.read_bytes() == _full(ledger) and journal_path(path).exists()
    for _ in _steps(finished, ledger):
        store.record(ledger)
        assert _read(path) == _full(ledger) == store.last_written
    snapshot_now = path.read_bytes() == _full(ledger)
    assert snapshot_now is (policy is EVERY_RECORD), "the journal-only policy never rewrote the ledger"
    ledger.status, ledger.finished_at = "awaiting-adjudication", "2026-12-01T00:00:00.000Z"
    store.checkpoint(seal_ledger(ledger.to_json()))
    assert not journal_path(path).exists(), "a clean end leaves exactly the ledger"
    assert path.read_bytes() == _full(ledger)
    assert verify_ledger_bytes(path.read_bytes()).verified


def _crashed(tmp_path: Path, finished: MinimalLedger, records: int) -> tuple[Path, MinimalLedger, list[bytes]]:
    path = tmp_path / "ledger.json"
    ledger = _start(finished)
    store = JournaledLedger(path, ledger, policy=NEVER)
    states = [_full(ledger)]
    for _, _step in zip(range(records), _steps(finished, ledger), strict=False):
        store.record(ledger)
        states.append(_full(ledger))
    store.close()
    return path, ledger, states


def test_a_torn_last_line_is_discarded_as_not_yet_written(tmp_path: Path, finished: MinimalLedger) -> None:
    path, _ledger, states = _crashed(tmp_path, finished, 3)
    journal = journal_path(path)
    lines = journal.read_bytes().split(b"\n")
    for cut in (1, len(lines[-2]) // 2, len(lines[-2])):  # the last record written only in part
        journal.write_bytes(b"\n".join(lines[:-2]) + b"\n" + lines[-2][:cut])
        read = read_ledger(path, path.read_bytes())
        assert read.data == states[2], "the state before the torn record"
        assert read.journal is not None and "torn last journal line" in read.journal.notes[0]


@pytest.mark.parametrize("damage", ["flip", "drop", "swap"])
def test_damage_before_the_last_line_is_refused(tmp_path: Path, finished: MinimalLedger, damage: str) -> None:
    path, _ledger, _states = _crashed(tmp_path, finished, 4)
    journal = journal_path(path)
    lines = journal.read_bytes().split(b"\n")[:-1]
    if damage == "flip":
        lines[1] = lines[1].replace(b'"reservedUsd":0.5', b'"reservedUsd":0.4')
    elif damage == "drop":
        del lines[2]
    else:
        lines[2], lines[3] = lines[3], lines[2]
    journal.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(LedgerJournalError, match=r"is refused: journal line (2|3)"):
        read_ledger(path, path.read_bytes())
    result = CliRunner().invoke(main, ["ledger", str(path)])
    assert result.exit_code == 2 and "is refused" in result.output


def test_a_journal_of_another_snapshot_is_refused(tmp_path: Path, finished: MinimalLedger) -> None:
    path, _ledger, states = _crashed(tmp_path, finished, 2)
    other = tmp_path / "other" / "ledger.json"
    other.parent.mkdir()
    other.write_bytes(states[1])  # a snapshot the journal does not start from
    journal_path(other).write_bytes(journal_path(path).read_bytes())
    with pytest.raises(LedgerJournalError, match="does not continue this ledger snapshot"):
        read_ledger(other, other.read_bytes())


def test_a_snapshot_announced_but_never_written_is_skipped(tmp_path: Path, finished: MinimalLedger,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ledger.json"
    ledger = _start(finished)
    store = JournaledLedger(path, ledger, policy=EVERY_RECORD)
    steps = _steps(finished, ledger)
    next(steps)

    def crash(document: object) -> None:
        raise CheckpointError(path, "simulated crash before the rename")

    monkeypatch.setattr(store._file, "checkpoint", crash)
    with pytest.raises(CheckpointError):
        store.record(ledger)  # the record is durable, the snapshot record too, the ledger is the old one
    assert _read(path) == _full(ledger)
    assert b'"kind":"snapshot"' in journal_path(path).read_bytes()


def test_a_snapshot_whose_journal_was_never_rotated_applies_nothing_twice(
    tmp_path: Path, finished: MinimalLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.json"
    ledger = _start(finished)
    store = JournaledLedger(path, ledger, policy=EVERY_RECORD)
    monkeypatch.setattr(store, "_rotate", lambda snapshot_hash: None)  # a crash right after the rename
    steps = _steps(finished, ledger)
    next(steps)
    store.record(ledger)
    assert path.read_bytes() == _full(ledger)
    rebuilt = rebuild_ledger(path.read_bytes(), journal_path(path).read_bytes())
    assert rebuilt.applied == 0 and rebuilt.document is not None
    assert _read(path) == _full(ledger)


def test_a_crashed_ledger_verifies_in_the_ledger_command_and_prints_rebuilt(
    tmp_path: Path, finished: MinimalLedger
) -> None:
    path, _ledger, states = _crashed(tmp_path, finished, 3)
    assert path.read_bytes() == states[0] != states[-1], "the snapshot alone is the start"
    result = CliRunner().invoke(main, ["ledger", str(path), "--rebuilt"])
    assert result.exit_code == 0, result.output
    assert result.output.encode() == states[-1]
    summary = CliRunner().invoke(main, ["ledger", str(path), "--json"])
    document = json.loads(summary.output)["ledger"]
    assert document["journal"].startswith("4 journal records, 3 changes applied")
    assert document["status"] == "running" and document["openReservation"]["reservedUsd"] == 0.5
    assert document["observations"] == 1
    text = CliRunner().invoke(main, ["ledger", str(path)]).output
    assert "Journal" in text and "the hash chain holds" in text and "verified up to its last record" in text
    assert "crashed (not closed)" in text and document["closed"] is False and document["journalRecords"] == 4


def test_the_next_run_refuses_a_path_whose_journal_exists(tmp_path: Path, finished: MinimalLedger) -> None:
    path, _ledger, _states = _crashed(tmp_path, finished, 1)
    path.unlink()  # even without its snapshot, a journal is never overwritten or resumed
    with pytest.raises(OutputPathError, match="a ledger journal already exists"):
        resolve_output(path, ())


def test_the_journal_exists_before_the_snapshot_that_names_it(tmp_path: Path, finished: MinimalLedger,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A kill between the two files can never leave a running ledger whose journal is missing (unreadable): the
    journal is created first, and a snapshot that cannot be created takes its journal away with it."""
    import agentstudy.io.ledger_journal as module

    path = tmp_path / "ledger.json"
    journal_seen: list[bool] = []

    def snapshot_fails(target: Path, document: dict[str, object]) -> None:
        journal_seen.append(journal_path(target).exists())
        raise OutputPathError(f"cannot create the ledger {target}: No space left on device")

    monkeypatch.setattr(module, "LedgerFile", snapshot_fails)
    with pytest.raises(OutputPathError, match="No space left"):
        JournaledLedger(path, finished)
    assert journal_seen == [True]
    assert sorted(tmp_path.iterdir()) == []


def test_an_existing_ledger_is_refused_before_any_journal_is_made(tmp_path: Path, finished: MinimalLedger) -> None:
    path = tmp_path / "ledger.json"
    path.write_bytes(b"{}")
    with pytest.raises(OutputPathError, match="output already exists, refusing to overwrite"):
        JournaledLedger(path, finished)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json"] and path.read_bytes() == b"{}"
