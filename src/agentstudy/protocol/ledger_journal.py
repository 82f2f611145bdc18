"""The minimal-study ledger's journal (issue 19, item 4): its records and the pure rebuild after a crash.

The ledger JSON (a *snapshot*, exactly the format of :mod:`agentstudy.protocol.ledger_integrity`)
is written at the start, at a bounded interval and at the end; between two snapshots every
reservation and settlement is one line appended to the journal beside it (``ledger.json.journal``,
JSON Lines, each line one compact JSON object ending ``\\n``). Three kinds of record:

- ``start`` (always line 0): ``{"journal": "agentstudy-ledger-journal-v1", "kind": "start", "seq": 0,
  "snapshotLedgerHash": H, "recordHash": R0}`` — the journal continues the snapshot whose
  ``ledgerHash`` is ``H``;
- ``change``: ``{"kind": "change", "seq": n, "prev": R(n-1), "set": {key: value}, "unset": [key],
  "append": [observation], "recordHash": Rn}`` — the top-level keys whose value changed (never
  ``observations``, ``hashAlgo``, ``ledgerHash``), the keys that disappeared (a settled open
  reservation) and the new observations, each with its ``observationHash``;
- ``snapshot``: ``{"kind": "snapshot", "seq": n, "prev": R(n-1), "ledgerHash": H', "recordHash": Rn}``
  — appended (durably) just before a snapshot whose ``ledgerHash`` is ``H'`` replaces the ledger,
  so a crash between that replacement and the journal's rotation is still understood.

``recordHash`` is ``sha256-normalized-v1`` of the record without ``recordHash``, and ``prev`` chains
each record to the one before: a record changed, dropped or moved in the middle breaks the
chain and the journal is refused. A last line without its ``\\n`` is a write the crash cut short:
it was never acknowledged (no child started on it), so it is discarded as not yet written.

Rebuild (:func:`rebuild_ledger`): a closed snapshot (``status`` not ``running``) is final, and a
journal beside it is a leftover of the close (reported, not applied); otherwise the snapshot's
``ledgerHash`` must be the start record's ``snapshotLedgerHash`` or a ``snapshot`` record's
``ledgerHash``, and the ``change`` records after the last such point are applied in order. The
result is sealed exactly as the runner would have written the same state, and every reader
then verifies it like any ledger. A running snapshot carries ``"journal":
"agentstudy-ledger-journal-v1"`` (issue 29), so its journal must exist and start with a record
bound to it: a deleted or emptied journal is refused. A journal cut at a record boundary still
reads as a prefix; the readers say the run never closed and that nothing after its last record
can be proven. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.controlled.hashing import JsonDocumentError, parse_json_text, sha256_normalized_v1
from agentstudy.protocol.ledger_integrity import (
    HASH_ALGO,
    HASH_ALGO_KEY,
    LEDGER_HASH_KEY,
    OBSERVATION_HASH_KEY,
    ledger_hash,
    observation_hash,
)
from agentstudy.protocol.records import JOURNAL_FORMAT, MinimalLedger

JOURNAL_KEY = "journal"
"""The running snapshot's key saying a journal is kept beside it (``MinimalLedger.journal``)."""
RECORD_HASH_KEY = "recordHash"
NOT_TOP_LEVEL = frozenset({"observations", HASH_ALGO_KEY, LEDGER_HASH_KEY})
KEY_ORDER: tuple[str, ...] = tuple(field.alias or name for name, field in MinimalLedger.model_fields.items())
"""The ledger's keys in the order ``MinimalLedger.to_json`` writes them."""


def _sealed(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, RECORD_HASH_KEY: sha256_normalized_v1(record)}


def start_record(snapshot_ledger_hash: str) -> dict[str, Any]:
    """Line 0 of a journal continuing the snapshot whose ``ledgerHash`` is given."""
    return _sealed({"journal": JOURNAL_FORMAT, "kind": "start", "seq": 0, "snapshotLedgerHash": snapshot_ledger_hash})


def change_record(previous: Mapping[str, Any], record_before: Mapping[str, Any], top: Mapping[str, Any],
                  appended: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``change`` record taking top-level keys ``previous`` to ``top`` and appending ``appended``.

    ``record_before`` is the journal's last record (its ``seq`` and ``recordHash`` are chained);
    ``appended`` are sealed observations (with ``observationHash``). Size: the changed keys and the
    new observations only, whatever the number of observations already written.
    """
    changed = {key: value for key, value in top.items()
               if key not in NOT_TOP_LEVEL and (key not in previous or previous[key] != value)}
    removed = [key for key in previous if key not in top]
    return _sealed({"kind": "change", "seq": record_before["seq"] + 1, "prev": record_before[RECORD_HASH_KEY],
                    "set": changed, "unset": removed, "append": list(appended)})


def snapshot_record(record_before: Mapping[str, Any], snapshot_ledger_hash: str) -> dict[str, Any]:
    """The ``snapshot`` record announcing the snapshot whose ``ledgerHash`` is given."""
    return _sealed({"kind": "snapshot", "seq": record_before["seq"] + 1, "prev": record_before[RECORD_HASH_KEY],
                    LEDGER_HASH_KEY: snapshot_ledger_hash})


def seal_observation(observation: Mapping[str, Any]) -> dict[str, Any]:
    """``observation`` with its ``observationHash`` (recomputed; last key)."""
    body = {k: v for k, v in observation.items() if k != OBSERVATION_HASH_KEY}
    return {**body, OBSERVATION_HASH_KEY: observation_hash(body)}


def assemble(top: Mapping[str, Any], observations: list[dict[str, Any]]) -> dict[str, Any]:
    """The sealed ledger document of top-level keys ``top`` and sealed ``observations``.

    Keys come in ``MinimalLedger.to_json``'s order, then ``hashAlgo`` and ``ledgerHash``, so the
    result is what ``seal_ledger(ledger.to_json())`` writes for the same state; the observations'
    hashes are kept as given (the ledger hash is computed over them: O(observations)).
    """
    merged = {k: v for k, v in top.items() if k not in NOT_TOP_LEVEL}
    merged["observations"] = observations
    rank = {key: index for index, key in enumerate(KEY_ORDER)}
    document = {key: merged[key] for key in sorted(merged, key=lambda k: rank.get(k, len(rank)))}
    document[HASH_ALGO_KEY] = HASH_ALGO
    document[LEDGER_HASH_KEY] = ledger_hash(document)
    return document


@dataclass(frozen=True)
class JournalRebuild:
    """What :func:`rebuild_ledger` found.

    ``document`` is the rebuilt sealed ledger (``None`` when ``problems``); ``applied`` the number
    of ``change`` records applied; ``notes`` facts worth telling (a torn last line discarded, a
    leftover journal of a closed ledger); ``problems`` why the journal is refused (first first).
    """

    document: dict[str, Any] | None
    applied: int
    records: int
    notes: tuple[str, ...]
    problems: tuple[str, ...]


def _refused(problem: str, records: int = 0) -> JournalRebuild:
    return JournalRebuild(None, 0, records, (), (problem,))


def parse_journal(data: bytes) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """The journal's verified records, the notes, and the first problem (``None``: the chain holds).

    A torn last line (no ``\\n``) is discarded with a note; any other bad line is a problem.
    """
    lines = data.split(b"\n")
    notes: list[str] = []
    if lines[-1]:
        notes.append(f"a torn last journal line ({len(lines[-1])} bytes) was discarded as not yet written")
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines[:-1], start=1):
        try:
            record = parse_json_text(line.decode("utf-8"))
        except (UnicodeDecodeError, JsonDocumentError):
            return records, notes, f"journal line {number} is not strict JSON"
        if not isinstance(record, dict) or not isinstance(record.get(RECORD_HASH_KEY), str):
            return records, notes, f"journal line {number} is not a journal record"
        body = {k: v for k, v in record.items() if k != RECORD_HASH_KEY}
        if sha256_normalized_v1(body) != record[RECORD_HASH_KEY]:
            return records, notes, f"journal line {number}: recordHash does not match (changed after it was written)"
        if number == 1:
            if record.get("kind") != "start" or record.get("journal") != JOURNAL_FORMAT or record.get("seq") != 0:
                return records, notes, f"journal line 1 is not a {JOURNAL_FORMAT} start record"
        elif record.get("seq") != number - 1 or record.get("prev") != records[-1][RECORD_HASH_KEY]:
            return records, notes, f"journal line {number} does not follow line {number - 1} (dropped or moved)"
        elif record.get("kind") not in ("change", "snapshot"):
            return records, notes, f"journal line {number}: unknown kind {record.get('kind')!r}"
        records.append(record)
    if not records:
        notes.append("the journal holds no complete record")
    return records, notes, None


def _apply(document: dict[str, Any], observations: list[dict[str, Any]], record: Mapping[str, Any],
           number: int) -> str | None:
    changed, removed, appended = record.get("set"), record.get("unset"), record.get("append")
    if not isinstance(changed, dict) or not isinstance(removed, list) or not isinstance(appended, list):
        return f"journal line {number}: a change record needs set, unset and append"
    if any(key in NOT_TOP_LEVEL for key in changed) or any(key in NOT_TOP_LEVEL for key in removed):
        return f"journal line {number}: a change record may not set observations or hashes"
    for key in removed:
        document.pop(key, None)
    document.update(changed)
    for offset, observation in enumerate(appended):
        if not isinstance(observation, dict) or observation.get(OBSERVATION_HASH_KEY) != observation_hash(observation):
            return f"journal line {number}: appended observation {offset}: observationHash does not match"
        observations.append(observation)
    return None


def rebuild_ledger(snapshot: bytes, journal: bytes) -> JournalRebuild:
    """Rebuild the ledger from its last snapshot (bytes of the ledger file) and the journal beside it.

    Returns a :class:`JournalRebuild`; never raises for bad input (its ``problems`` say why).
    """
    try:
        document = parse_json_text(snapshot.decode("utf-8"))
    except (UnicodeDecodeError, JsonDocumentError) as error:
        return _refused(f"the ledger snapshot is not strict JSON: {error}")
    if not isinstance(document, dict) or not isinstance(document.get("observations"), list):
        return _refused("the ledger snapshot is not a ledger")
    records, notes, problem = parse_journal(journal)
    if problem is not None:
        return _refused(problem, len(records))
    if document.get("status") != "running":
        notes.append("the ledger is closed; the journal beside it is a leftover of its last write (not applied)")
        return JournalRebuild(document, 0, len(records), tuple(notes), ())
    if not records:  # issue 29: an emptied journal is not "nothing happened since the snapshot"
        return _refused("the journal holds no start record (emptied or cut before its first line): what the run "
                        "did after its snapshot cannot be known")
    snapshot_hash = document.get(LEDGER_HASH_KEY)
    points = [i for i, r in enumerate(records) if (r.get("snapshotLedgerHash") if r["kind"] == "start"
                                                   else r.get(LEDGER_HASH_KEY)) == snapshot_hash]
    if not points:
        return _refused("the journal does not continue this ledger snapshot (no record names its ledgerHash)",
                        len(records))
    top = {k: v for k, v in document.items() if k not in NOT_TOP_LEVEL}
    observations = list(document["observations"])
    applied = 0
    for index in range(points[-1] + 1 if points else 0, len(records)):
        if records[index]["kind"] != "change":
            continue  # a snapshot announced whose replacement never landed: the state goes on
        if (failure := _apply(top, observations, records[index], index + 1)) is not None:
            return _refused(failure, len(records))
        applied += 1
    return JournalRebuild(assemble(top, observations) if applied else document, applied, len(records),
                          tuple(notes), ())
