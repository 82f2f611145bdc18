"""The minimal ledger's hashes and invariants (``protocol.ledger_integrity``): honest ledgers always verify.

Every document a real run writes — the first one, each checkpoint and the final one, i.e. what a
crash at any point would leave — is captured and verified, on both transports (http against the
rehearsal server; cli with the real Claude Code binary through ``run_demo``). Then the checks
are shown one by one on edited copies, re-sealed so the hashes match and only the invariant
can catch the edit.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.ledger_journal import JournaledLedger, read_ledger
from agentstudy.io.ledger_store import LedgerFile, _encode, journal_path
from agentstudy.protocol.controlled.hashing import sha256_normalized_v1
from agentstudy.protocol.ledger_integrity import (
    ledger_hash,
    observation_hash,
    seal_ledger,
    verify_ledger,
    verify_ledger_bytes,
)
from agentstudy.protocol.ledger_invariants import is_loopback_http, spent_matches
from agentstudy.protocol.ledger_journal import start_record
from agentstudy.protocol.records import MinimalLedger
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.demo import run_demo
from agentstudy.runners.progress import SilentProgress
from test_minimal_tamper import run_http_pilot


class Snapshots:
    """Every state a ledger reaches on disk: each ``LedgerFile`` write, and each journal record as a reader
    rebuilds it (snapshot + journal, issue 19)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.taken: list[bytes] = []
        create, checkpoint, record = LedgerFile.__init__, LedgerFile.checkpoint, JournaledLedger.record

        def recorded(store: JournaledLedger, ledger: MinimalLedger) -> None:
            record(store, ledger)
            self.taken.append(read_ledger(store.path, store.path.read_bytes()).data)

        monkeypatch.setattr(JournaledLedger, "record", recorded)

        def created(store: LedgerFile, path: Path, document: dict[str, Any]) -> None:
            create(store, path, document)
            self.taken.append(path.read_bytes())

        def checkpointed(store: LedgerFile, document: dict[str, Any]) -> None:
            checkpoint(store, document)
            self.taken.append(store.path.read_bytes())

        monkeypatch.setattr(LedgerFile, "__init__", created)
        monkeypatch.setattr(LedgerFile, "checkpoint", checkpointed)

    def documents(self) -> list[dict[str, Any]]:
        return [json.loads(data) for data in self.taken]


def _assert_every_snapshot_verifies(snapshots: Snapshots, tmp_path: Path) -> list[dict[str, Any]]:
    assert len(snapshots.taken) > 3
    for number, data in enumerate(snapshots.taken):
        verification = verify_ledger_bytes(data)
        assert verification.verified, (number, verification.problems)
    documents = snapshots.documents()
    # A crash inside an attempt leaves this ledger: it is honest, so it verifies and is reported as it is.
    crashed = tmp_path / "crashed.json"
    snapshot = next(data for data, document in zip(snapshots.taken, documents, strict=True)
                    if document.get("openReservation"))
    crashed.write_bytes(snapshot)  # with the journal its writer keeps beside it (a fresh one: just its start)
    journal_path(crashed).write_bytes(_encode(start_record(json.loads(snapshot)["ledgerHash"]), indent=None))
    result = CliRunner().invoke(main, ["report", str(crashed)])
    assert result.exit_code == 0, result.output
    assert re.search(r"^run status +running$", result.output, re.MULTILINE) and "UNVERIFIED" not in result.output
    assert "was never settled" in result.output
    assert "verified: ledgerHash and every observationHash match" in result.output
    return documents


def test_every_checkpoint_of_a_real_http_run_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots = Snapshots(monkeypatch)
    run_http_pilot(tmp_path)
    documents = _assert_every_snapshot_verifies(snapshots, tmp_path)
    assert documents[0]["status"] == "running" and documents[-1]["status"] == "awaiting-adjudication"
    # A crash after a settled call of an open attempt: spent holds that charge, no observation does.
    mid_attempt = [d for d in documents if d.get("openReservation", {}).get("chargedUsd", 0) > 0]
    assert mid_attempt, "the rehearsal attempts make several calls each"
    assert all(d["status"] == "running" for d in mid_attempt)


def test_a_blocked_http_run_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots = Snapshots(monkeypatch)
    run_http_pilot(tmp_path, fail_with_status=500)
    documents = _assert_every_snapshot_verifies(snapshots, tmp_path)
    final = documents[-1]
    assert final["status"] == "blocked" and final["stopReason"]
    assert [o["status"] for o in final["observations"]] == ["failed"]


def test_every_checkpoint_of_a_real_cli_run_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     claude_bin: Path) -> None:
    snapshots = Snapshots(monkeypatch)
    summary = run_demo(tmp_path, claude_bin, SilentProgress())
    assert summary.status == "awaiting-adjudication"
    documents = _assert_every_snapshot_verifies(snapshots, tmp_path)
    final = documents[-1]
    assert final["rehearsal"] is True and is_loopback_http(final["cli"]["baseUrl"])
    assert any(d.get("openReservation") for d in documents), "a crash inside an attempt leaves it open"


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _study, ledger = run_http_pilot(tmp_path_factory.mktemp("honest"))
    document: dict[str, Any] = json.loads(ledger.read_bytes())
    return document


def test_what_the_hashes_cover(honest: dict[str, Any]) -> None:
    observation = honest["observations"][0]
    body = {k: v for k, v in observation.items() if k != "observationHash"}
    assert observation["observationHash"] == observation_hash(observation) == sha256_normalized_v1(body)
    assert honest["ledgerHash"] == ledger_hash(honest) == sha256_normalized_v1(
        {k: v for k, v in honest.items() if k != "ledgerHash"})
    assert honest["hashAlgo"] == "sha256-normalized-v1"
    assert seal_ledger(honest) == honest, "sealing is idempotent"
    assert list(seal_ledger(honest))[-2:] == ["hashAlgo", "ledgerHash"]
    # The ledger hash chains the observation hashes: reordering alone changes it.
    swapped = copy.deepcopy(honest)
    swapped["observations"].reverse()
    assert ledger_hash(swapped) != honest["ledgerHash"]
    # An optional field added later is covered without a change to the hashing.
    grown = copy.deepcopy(honest)
    grown["observations"][0]["statusReason"] = "a later field"
    assert observation_hash(grown["observations"][0]) != observation["observationHash"]
    # The canonical form: 1 and 1.0 read the same, key order does not matter.
    reordered = dict(reversed(list(observation.items())))
    assert observation_hash(reordered) == observation["observationHash"]


Change = Callable[[dict[str, Any]], None]


def _resealed(document: dict[str, Any], change: Change) -> dict[str, Any]:
    edited = copy.deepcopy(document)
    change(edited)
    return seal_ledger(edited)


def _set(path: str, value: Any) -> Change:
    def change(document: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        target: Any = document
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(leaf) if leaf.isdigit() else leaf] = value

    return change


def _drop_last(document: dict[str, Any]) -> None:
    document["observations"].pop()


def _duplicate(document: dict[str, Any]) -> None:
    document["observations"][1] = {**document["observations"][0]}


def _open_again(document: dict[str, Any]) -> None:
    first = document["observations"][0]
    document["openReservation"] = {"taskId": first["taskId"], "scenario": first["scenario"],
                                   "repetition": first["repetition"], "reservedUsd": 0.0, "chargedUsd": 0.0}
    document["status"] = "running"
    del document["finishedAt"]


INVARIANTS: dict[str, tuple[Change, str]] = {
    "charge zeroed": (_set("observations.0.chargedUsd", 0), "budget.spent"),
    "spent zeroed": (_set("budget.spent", 0.0), "budget.spent"),
    "spent off by a millionth": (lambda d: d["budget"].update(spent=d["budget"]["spent"] + 1e-6), "budget.spent"),
    "observation dropped": (_drop_last, "awaiting-adjudication, but 1 of 1"),
    "observation duplicated": (_duplicate, "a second observation"),
    "status flipped to blocked": (_set("status", "blocked"), "blocked without a stopReason"),
    "status flipped to running": (_set("status", "running"), "status running, but"),
    "stop reason added": (_set("stopReason", "edited"), "with a stopReason"),
    "failure hidden": (_set("observations.0.status", "failed"), "the run goes on after"),
    "cap flag flipped": (_set("budget.cumulativeCapExceeded", True), "cumulativeCapExceeded"),
    "cap lowered": (_set("budget.cap", 0.0001), "cumulativeCapExceeded"),  # below the pilot's nominal spend
    "negative charge": (_set("observations.0.chargedUsd", -0.001), "not a finite amount >= 0"),
    "charge as text": (_set("observations.0.chargedUsd", "0.001"), "not a finite amount >= 0"),
    "rehearsal against the public API": (_set("http.apiBaseUrl", "https://api.anthropic.com"), "rehearsal is true"),
    "wrong transport": (_set("observations.0.transport", "cli"), "not a valid minimal-study ledger"),
    "more than planned": (_set("plannedAttempts", 1), "2 observations of 1 planned"),
    "open reservation of an observed attempt": (_open_again, "is already observed"),
    "unknown field": (_set("approvedBy", "me"), "approvedBy: unknown key"),
}


@pytest.mark.parametrize(("change", "expected"), list(INVARIANTS.values()), ids=list(INVARIANTS))
def test_each_invariant_catches_an_edit_even_with_recomputed_hashes(honest: dict[str, Any], change: Change,
                                                                    expected: str) -> None:
    assert verify_ledger(honest).verified
    verification = verify_ledger(_resealed(honest, change))
    assert not verification.verified
    assert any(expected in problem for problem in verification.problems), verification.problems


def test_an_edit_without_resealing_names_the_hash_first(honest: dict[str, Any]) -> None:
    edited = copy.deepcopy(honest)
    edited["observations"][1]["chargedUsd"] = 0
    verification = verify_ledger(edited)
    assert verification.problems[0].startswith("observations[1] (lantern-discovery doc-bridge-mcp repetition 1): "
                                               "observationHash does not match")
    assert "ledgerHash does not match" in verification.problems[1]
    assert "budget.spent" in verification.problems[2]
    assert verification.first().endswith("(and 2 more problems)")


def test_old_ledgers_without_hashes_do_not_verify(honest: dict[str, Any]) -> None:
    old = {k: v for k, v in honest.items() if k not in ("ledgerHash", "hashAlgo")}
    old["observations"] = [{k: v for k, v in o.items() if k != "observationHash"} for o in honest["observations"]]
    assert verify_ledger(old).problems == (
        "no ledgerHash or observationHash: written before minimal ledgers were hashed (or stripped since)",)
    assert verify_ledger(seal_ledger(old)).verified


@pytest.mark.parametrize(("text", "expected"), [
    ('{"budget": {"spent": NaN}}', "NaN is not JSON"),
    ('{"a": 1, "a": 2}', "duplicated key"),
    ("[]", "not a JSON object"),
    (b"\xff", "not UTF-8"),
])
def test_text_that_is_not_strict_json_does_not_verify(text: str | bytes, expected: str) -> None:
    verification = verify_ledger_bytes(text)
    assert not verification.verified and expected in verification.problems[0]


def test_spent_is_compared_exactly_after_undoing_the_float_conversion() -> None:
    # 0.1 + 0.2 as Decimals is 0.3; as floats the terms and the sum each carry their own rounding.
    assert spent_matches(0.3, [0.1, 0.2])
    assert spent_matches(0.1 + 0.2, [0.1, 0.2])
    assert not spent_matches(0.3 + 1e-12, [0.1, 0.2])
    assert spent_matches(0.0, []) and not spent_matches(1e-9, [])
    assert spent_matches(float(10**6), [float(10**6)])


def test_the_rehearsal_server_is_on_loopback() -> None:
    with RehearsalServer() as server:
        assert is_loopback_http(server.base_url)
    for url in ("https://127.0.0.1:1", "http://example.com", "http://10.0.0.1", None, "http://[::1]:8"):
        assert is_loopback_http(url) == (url == "http://[::1]:8")
