"""The journaled ledger on disk (issue 19, item 4): snapshot + append-only journal, and the reader that rebuilds.

:class:`JournaledLedger` writes the ledger file (:class:`~agentstudy.io.ledger_store.LedgerFile`,
the unchanged format) at the start, then one fsync'd journal line per reservation and settlement
(:mod:`agentstudy.protocol.ledger_journal`): a checkpoint costs the changed keys and the new
observation, not the whole ledger. A new snapshot replaces the ledger when the journal has grown
to the size of the last snapshot (at least ``SnapshotPolicy.min_bytes``, 256 KiB) or
``SnapshotPolicy.seconds`` (300 s) have passed since the last one: the bytes written stay
linear in the study (at most about three times what the journal alone would write), and a
rebuild reads at most about twice the ledger. A snapshot is announced by a ``snapshot`` record
first, then the ledger is replaced atomically, then the journal is replaced by a fresh one
starting from that snapshot. The final (closed) ledger is a snapshot like any other, after
which the journal is removed: a run that ends cleanly leaves exactly today's ledger. A crash
leaves the last snapshot and its journal; :func:`read_ledger` rebuilds the state from them, and
the next run refuses the path while either exists (``resolve_output``).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.io.ledger_store import (
    CheckpointError,
    LedgerFile,
    OutputExistsError,
    _encode,
    _fsync_directory,
    _unlink_quietly,
    _write_all,
    create_new_file,
    journal_path,
)
from agentstudy.protocol.ledger_integrity import LEDGER_HASH_KEY
from agentstudy.protocol.ledger_journal import (
    JOURNAL_KEY,
    NOT_TOP_LEVEL,
    JournalRebuild,
    assemble,
    change_record,
    rebuild_ledger,
    seal_observation,
    snapshot_record,
    start_record,
)
from agentstudy.protocol.records import JOURNAL_FORMAT, MinimalLedger

Transform = Callable[[Any], Any]
MAX_JOURNAL_BYTES = 512 * 1024 * 1024


class LedgerJournalError(ValueError):
    """A journal beside a ledger that cannot be read or does not continue it (one line naming the problem)."""


@dataclass(frozen=True)
class SnapshotPolicy:
    """When a running ledger is rewritten whole: journal bytes >= max(``min_bytes``, ``growth`` × the last
    snapshot's bytes), or ``seconds`` since the last snapshot (and at least one record since)."""

    min_bytes: int = 256 * 1024
    growth: float = 1.0
    seconds: float = 300.0


def _identity(value: Any) -> Any:
    return value


def _journaled(top: dict[str, Any]) -> dict[str, Any]:
    """A running snapshot's top-level keys with ``"journal"`` set: it says its journal must exist (issue 29)."""
    return {**top, JOURNAL_KEY: JOURNAL_FORMAT} if top.get("status") == "running" else top


_SAYS_JOURNALED = re.compile(rb'"journal"\s*:\s*"' + JOURNAL_FORMAT.encode() + rb'"')
"""A running snapshot's ``journal`` key (only a key can be an unescaped quoted word followed by a colon)."""


class JournaledLedger:
    """A minimal-study ledger written as snapshots plus a journal (see the module docstring).

    ``record(ledger)`` is the per-reservation / per-settlement checkpoint (durable when it returns);
    ``checkpoint(document)`` writes a whole sealed document as a snapshot (the close and the
    salvage of ``runners.ledger_steps``); ``last_written`` is the last durable state's bytes as a
    ledger file would hold them. ``transform`` is applied to everything written (the http
    runner's key redaction).
    """

    def __init__(self, path: Path, ledger: MinimalLedger, *, transform: Transform = _identity,
                 policy: SnapshotPolicy = SnapshotPolicy(), clock: Callable[[], float] = time.monotonic) -> None:
        """Create the journal, then the ledger (first snapshot) that names it, both exclusively (0600, fsynced).

        Raises:
            OutputPathError: either path exists or cannot be created; nothing is left behind.
            TypeError, ValueError: a value JSON cannot hold (nothing is written).
        """
        self.transform, self.policy, self.clock = transform, policy, clock
        self._top: dict[str, Any] = _journaled(transform(ledger.header_json()))
        self._observations = [seal_observation(transform(o.to_json())) for o in ledger.observations]
        document = assemble(self._top, self._observations)
        self.path, self.journal = path, journal_path(path)
        if os.path.lexists(path):
            raise OutputExistsError(f"output already exists, refusing to overwrite: {path}")
        # The journal before the snapshot that names it: a kill between the two files leaves a journal
        # without a ledger (the path stays free of a ledger), never a running ledger that cannot be read.
        start = start_record(document[LEDGER_HASH_KEY])
        create_new_file(self.journal, _encode(start, indent=None), shown=path)
        try:
            self._file = LedgerFile(path, document)
        except BaseException:
            _unlink_quietly(self.journal)
            raise
        self._last_record, self._journal_bytes = start, 0
        self._snapshot_bytes, self._snapshot_at = len(self._file.last_written), clock()
        self._fd: int | None = os.open(self.journal, os.O_WRONLY | os.O_APPEND)
        self._size = os.fstat(self._fd).st_size

    @property
    def last_written(self) -> bytes:
        """The last durable state as the ledger file's bytes (sealed, pretty JSON)."""
        return _encode(assemble(self._top, self._observations))

    def record(self, ledger: MinimalLedger) -> None:
        """Append the change from the last durable state to ``ledger`` (one fsync'd journal line); maybe snapshot.

        Raises:
            CheckpointError: the line could not be written (the journal is cut back to its last
                complete record) or a due snapshot failed (the line itself is durable).
        """
        top = _journaled(self.transform(ledger.header_json()))
        new = [seal_observation(self.transform(o.to_json())) for o in ledger.observations[len(self._observations):]]
        record = change_record(self._top, self._last_record, top, new)
        self._append(_encode(record, indent=None))
        self._top, self._last_record = top, record
        self._observations.extend(new)
        if self._due():
            self._snapshot(assemble(self._top, self._observations))

    def checkpoint(self, document: dict[str, Any]) -> None:
        """Write the sealed ``document`` as the ledger now; a closed one (not ``running``) also removes the journal.

        Raises:
            CheckpointError: as ``LedgerFile.checkpoint``; the last good state stays readable.
            TypeError, ValueError: a value JSON cannot hold.
        """
        self._snapshot(document)
        self._top = {k: v for k, v in document.items() if k not in NOT_TOP_LEVEL}
        self._observations = list(document["observations"])

    def close(self) -> None:
        """Close the journal's file descriptor (idempotent); nothing is written."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _due(self) -> bool:
        grown = self._journal_bytes >= max(self.policy.min_bytes, self.policy.growth * self._snapshot_bytes)
        return grown or (self._journal_bytes > 0 and self.clock() - self._snapshot_at >= self.policy.seconds)

    def _append(self, line: bytes) -> None:
        if self._fd is None:
            raise CheckpointError(self.path, "the journal is closed")
        try:
            _write_all(self._fd, line)
            os.fsync(self._fd)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)  # no torn line stays behind a failed append
            raise CheckpointError(self.path, error.strerror or str(error)) from None
        self._size += len(line)
        self._journal_bytes += len(line)

    def _snapshot(self, document: dict[str, Any]) -> None:
        closed = document.get("status") != "running"
        if not closed and self._fd is not None:
            announced = snapshot_record(self._last_record, document[LEDGER_HASH_KEY])
            self._append(_encode(announced, indent=None))
            self._last_record = announced
        self._file.checkpoint(document)
        self._snapshot_bytes, self._snapshot_at = len(self._file.last_written), self.clock()
        if closed:
            self.close()
            _unlink_quietly(self.journal)
            with contextlib.suppress(OSError):
                _fsync_directory(self.path.parent)
            return
        self._rotate(document[LEDGER_HASH_KEY])

    def _rotate(self, snapshot_hash: str) -> None:
        start = start_record(snapshot_hash)
        fresh = self.journal.with_name(f".{self.journal.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(fresh, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            try:
                _write_all(fd, _encode(start, indent=None))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(fresh, self.journal)
        except OSError as error:
            _unlink_quietly(fresh)  # the old journal (its snapshot record names the new snapshot) goes on
            raise CheckpointError(self.path, error.strerror or str(error)) from None
        self.close()
        self._fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND)
        self._size, self._journal_bytes, self._last_record = os.fstat(self._fd).st_size, 0, start
        try:
            _fsync_directory(self.path.parent)
        except OSError as error:
            raise CheckpointError(self.path, error.strerror or str(error)) from None


@dataclass(frozen=True)
class LedgerRead:
    """A ledger as read: the bytes to verify and parse, and what its journal added (``None``: no journal)."""

    data: bytes
    journal: JournalRebuild | None


def read_ledger(path: Path, data: bytes) -> LedgerRead:
    """The ledger state of ``path`` whose file bytes are ``data``: rebuilt from the journal beside it, if any.

    Without a journal, ``data`` unchanged. With one, the snapshot plus the journal's records
    (:func:`agentstudy.protocol.ledger_journal.rebuild_ledger`), encoded as a ledger file.

    Raises:
        LedgerJournalError: the journal cannot be read, is larger than 512 MiB, is corrupt before its
            last line, does not continue the snapshot, holds no start record, or is missing beside a
            running snapshot that says it keeps one (issue 29).
    """
    journal = journal_path(path)
    try:
        if journal.stat().st_size > MAX_JOURNAL_BYTES:
            raise LedgerJournalError(f"the ledger journal {journal} is larger than {MAX_JOURNAL_BYTES} bytes")
        text = journal.read_bytes()
    except FileNotFoundError:
        if _SAYS_JOURNALED.search(data):
            raise LedgerJournalError(f"the ledger journal {journal} is missing: the ledger is a running snapshot "
                                     f"that keeps one, so what the run did after the snapshot cannot be known"
                                     ) from None
        return LedgerRead(data, None)
    except OSError as error:
        raise LedgerJournalError(f"cannot read the ledger journal {journal}: {error.strerror or error}") from None
    rebuilt = rebuild_ledger(data, text)
    if rebuilt.document is None:
        raise LedgerJournalError(f"the ledger journal {journal} is refused: {rebuilt.problems[0]}")
    return LedgerRead(data if rebuilt.applied == 0 else _encode(rebuilt.document), rebuilt)


def describe_journal(rebuilt: JournalRebuild) -> str:
    """One line on what a journal contributed (for ``agentstudy ledger`` and warnings)."""
    notes = "; ".join(rebuilt.notes)
    return (f"{rebuilt.records} journal records, {rebuilt.applied} changes applied after the snapshot"
            + (f" ({notes})" if notes else ""))

