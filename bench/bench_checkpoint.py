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

All sizes and ways are interleaved in one set of rounds. The journal's amortised cost per
checkpoint (``journal_amortised_s``) adds a snapshot's median share under the default policy:
a snapshot when the journal has grown to the size of the last snapshot, so one snapshot every
``snapshot bytes / record bytes`` records. The
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
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.run_records import OpenReservation
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


class _Size:
    """Everything one size needs, built untimed: the two growing studies, the stores, the sealed document."""

    def __init__(self, directory: Path, ledger: dict[str, Any], size: int) -> None:
        self.size = size
        doc = document(ledger, size)
        self.full_study, self.journal_study = _Study(doc), _Study(doc)
        self.sealed = seal_ledger(self.full_study.model.to_json())
        self.data = encode(self.sealed)
        self.old = LedgerFile(directory / f"full-{size}.json", self.sealed)
        self.journaled = JournaledLedger(directory / f"journal-{size}.json", self.journal_study.model, policy=NEVER)
        self.snapshot_store = LedgerFile(directory / f"snapshot-{size}.json", {"created": True})
        self.snapshot_store.checkpoint(self.sealed)
        if self.snapshot_store.path.read_bytes() != self.data:
            raise RuntimeError("the snapshot wrote other bytes than the bare write would")
        self.bare_path = directory / f"bare-{size}.json"
        self.top = {k: v for k, v in self.sealed.items() if k not in NOT_TOP_LEVEL}

    def full_rewrite(self) -> None:
        self.full_study.step()
        self.old.checkpoint(seal_ledger(self.full_study.model.to_json()))

    def journal(self) -> None:
        self.journal_study.step()
        self.journaled.record(self.journal_study.model)

    def snapshot(self) -> None:
        self.snapshot_store.checkpoint(assemble(self.top, self.sealed["observations"]))

    def methods(self) -> dict[str, Timer]:
        return {
            f"{self.size}:full_rewrite": lambda: timed(self.full_rewrite),
            f"{self.size}:journal": lambda: timed(self.journal),
            f"{self.size}:snapshot": lambda: timed(self.snapshot),
            f"{self.size}:write_fsync": lambda: timed(lambda: bare_write(self.bare_path, self.data)),
        }

    def section(self, stats: dict[str, Stats], journal_runs: int) -> dict[str, Any]:
        mine = {name.split(":", 1)[1]: value for name, value in stats.items() if name.startswith(f"{self.size}:")}
        record_bytes = os.path.getsize(self.journaled.journal) / (journal_runs + 1)
        self.journaled.close()
        per_snapshot = max(1.0, len(self.data) / record_bytes)
        return {
            "observations": self.size,
            "bytes": len(self.data),
            "journal_record_bytes_mean": round(record_bytes),
            **{key: value.to_json() for key, value in mine.items()},
            "ratio_full_rewrite_to_journal": ratio(mine["full_rewrite"], mine["journal"]),
            "ratio_snapshot_to_write_fsync": ratio(mine["snapshot"], mine["write_fsync"]),
            "records_per_snapshot_default_policy": round(per_snapshot),
            "journal_amortised_s": round(mine["journal"].median + mine["snapshot"].median / per_snapshot, 6),
        }


def run(ledger: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Time the four ways at every size of ``SIZES``, all interleaved in one set of rounds; the JSON section.

    The slow ways (full rewrite, snapshot, write_fsync) run 3 times at each size, the journal
    record ``4 × repeats`` times; with the sizes interleaved, a drift of the machine's load hits
    the 100- and the 10,000-observation journal alike.
    """
    section: dict[str, Any] = {}
    journal_runs = repeats * 4
    with tempfile.TemporaryDirectory(prefix="agentstudy-bench-ledger-") as name:
        sizes = [_Size(Path(name), ledger, size) for size in SIZES]
        methods = {key: timer for size in sizes for key, timer in size.methods().items()}
        runs = {key: journal_runs if key.endswith(":journal") else 3 for key in methods}
        stats = interleave(methods, runs)
        for size in sizes:
            section[str(size.size)] = size.section(stats, journal_runs)
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
