"""Ledger checkpoint (issue 19, item 4): the old full rewrite against the journal, 100 to 10,000 observations.

The ledger is the example pilot's real ledger with its two observations repeated (synthetic
observations, repetition numbers counting up; about 3.5 KB each). At each size, interleaved:

- full_rewrite: what every reservation and settlement cost before the journal —
  ``LedgerFile.checkpoint(seal_ledger(ledger.to_json()))``: serialise the model, hash every
  observation and the document, encode, temporary file, fsync, rename, directory fsync;
- journal: ``JournaledLedger.record(ledger)`` — one reservation or settlement (they alternate;
  a settlement appends one new observation) as one fsync'd, hash-chained journal line; the
  snapshot policy is set never to fire inside the timed runs (the snapshot is measured apart);
- snapshot: what a journaled run pays at each snapshot — ``protocol.ledger_journal.assemble`` of
  the kept top-level keys and sealed observations (the ledger hash over all of them; the
  observation hashes are kept, not recomputed), then ``LedgerFile.checkpoint`` (encode,
  temporary file, fsync, rename, directory fsync);
- write_fsync: open + write + fsync of the same bytes in place (the floor of a snapshot).

The journal's amortised cost per checkpoint (``journal_amortised_s``) adds a snapshot's
median share under the default policy: a snapshot when the journal has grown to the size of
the last snapshot, so one snapshot every ``snapshot bytes / record bytes`` records. The
target: the journal at 10,000 observations within 2× of the journal at 100 (issue 19's
Must-show); the rest is reported.
"""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Any

from agentstudy.io.ledger_journal import JournaledLedger, SnapshotPolicy
from agentstudy.io.ledger_store import LedgerFile
from agentstudy.io.ledger_store import _encode as encode  # the bytes LedgerFile writes for a document
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.ledger_journal import NOT_TOP_LEVEL, assemble
from agentstudy.protocol.records import MinimalLedger, OpenReservation
from bench.common import Stats, Timer, interleave, ratio, timed

SIZES = (100, 1_000, 10_000)
NEVER = SnapshotPolicy(min_bytes=1 << 50, growth=0, seconds=1e12)


def document(ledger: dict[str, Any], observations: int) -> dict[str, Any]:
    """``ledger`` with its observations repeated to ``observations`` (repetition numbers counting up)."""
    source = ledger["observations"]
    doc = copy.deepcopy(ledger)
    doc["plannedAttempts"] = observations * 2
    doc["observations"] = [
        {**copy.deepcopy(source[index % len(source)]), "repetition": index // len(source) + 1}
        for index in range(observations)
    ]
    return doc


def bare_write(path: Path, data: bytes) -> None:
    """Write ``data`` over ``path`` in place and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


class _Study:
    """A running ledger model of ``size`` observations that grows one attempt at a time."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.model = MinimalLedger.model_validate({**doc, "status": "running"})
        self.model.finished_at = self.model.stop_reason = self.model.hash_algo = self.model.ledger_hash = None
        self.model.open_reservation = None
        self.template = self.model.observations[0]
        self.next_repetition = max(o.repetition for o in self.model.observations) + 1

    def step(self) -> None:
        """A reservation (open marker) or, when one is open, its settlement (one new observation)."""
        model = self.model
        if model.open_reservation is None:
            model.open_reservation = OpenReservation(task_id=self.template.task_id, scenario=self.template.scenario,
                                                     repetition=self.next_repetition, reserved_usd=0.1)
            return
        model.observations.append(self.template.model_copy(update={"repetition": self.next_repetition,
                                                                   "observation_hash": None}))
        model.open_reservation = None
        self.next_repetition += 1


def _size(directory: Path, ledger: dict[str, Any], size: int, repeats: int) -> dict[str, Any]:
    doc = document(ledger, size)
    full_study, journal_study = _Study(doc), _Study(doc)
    sealed = seal_ledger(full_study.model.to_json())
    data = encode(sealed)
    old = LedgerFile(directory / f"full-{size}.json", sealed)
    journaled = JournaledLedger(directory / f"journal-{size}.json", journal_study.model, policy=NEVER)
    snapshot_store = LedgerFile(directory / f"snapshot-{size}.json", {"created": True})
    snapshot_store.checkpoint(sealed)
    if snapshot_store.path.read_bytes() != data:
        raise RuntimeError("the snapshot wrote other bytes than the bare write would")
    bare_path = directory / f"bare-{size}.json"
    top = {k: v for k, v in sealed.items() if k not in NOT_TOP_LEVEL}
    observations = sealed["observations"]

    def full_rewrite() -> None:
        full_study.step()
        old.checkpoint(seal_ledger(full_study.model.to_json()))

    def journal() -> None:
        journal_study.step()
        journaled.record(journal_study.model)

    methods: dict[str, Timer] = {
        "full_rewrite": lambda: timed(full_rewrite),
        "journal": lambda: timed(journal),
        "snapshot": lambda: timed(lambda: snapshot_store.checkpoint(assemble(top, observations))),
        "write_fsync": lambda: timed(lambda: bare_write(bare_path, data)),
    }
    slow = max(3, repeats // (size // 100))  # the full rewrite at 10,000 takes seconds each
    runs = {"full_rewrite": slow, "journal": repeats * 4, "snapshot": slow, "write_fsync": slow}
    stats = interleave(methods, runs)
    journal_bytes = os.path.getsize(journaled.journal)
    records = runs["journal"] + 1
    journaled.close()
    record_bytes = journal_bytes / records
    per_snapshot = max(1.0, len(data) / record_bytes)
    amortised = stats["journal"].median + stats["snapshot"].median / per_snapshot
    return {
        "observations": size,
        "bytes": len(data),
        "journal_record_bytes_mean": round(record_bytes),
        **{key: value.to_json() for key, value in stats.items()},
        "ratio_full_rewrite_to_journal": ratio(stats["full_rewrite"], stats["journal"]),
        "ratio_snapshot_to_write_fsync": ratio(stats["snapshot"], stats["write_fsync"]),
        "records_per_snapshot_default_policy": round(per_snapshot),
        "journal_amortised_s": round(amortised, 6),
    }


def run(ledger: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Time the four ways at each size of ``SIZES``; return the JSON section (with the 10,000 / 100 ratio)."""
    section: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="agentstudy-bench-ledger-") as name:
        for size in SIZES:
            section[str(size)] = _size(Path(name), ledger, size, repeats)
    small, large = section[str(SIZES[0])], section[str(SIZES[-1])]
    section["journal_growth"] = {
        "ratio_journal_10000_to_100": ratio(_stats(large["journal"]), _stats(small["journal"])),
        "target_max": 2.0,
        "ratio_amortised_10000_to_100": round(large["journal_amortised_s"] / small["journal_amortised_s"], 3),
        "ratio_full_rewrite_10000_to_100": ratio(_stats(large["full_rewrite"]), _stats(small["full_rewrite"])),
    }
    return section


def _stats(timing: dict[str, Any]) -> Stats:
    return Stats(timing["runs"], timing["min_s"], timing["median_s"], timing["max_s"])
