"""``agentstudy ledger --close CRASHED`` (issue 40): seal a crashed run's ledger as crashed, so it can be
continued (``--continue-from``) and reported without anyone editing a ledger by hand.

The ledger is read as every reader reads it (snapshot + journal, ``io.ledger_journal.read_ledger``) and must
verify and still be ``running``; its closed form (``protocol.crash_close``) must verify too. Then the journal is
kept beside it as ``FILE.journal.closed`` (evidence, never read again) and the closed ledger replaces the
snapshot atomically. Only for a run whose process is gone: a live run would go on writing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from agentstudy.commands.common import fail

CLOSED_SUFFIX = ".closed"


def close_crashed(file: Path) -> None:
    """Close the crashed ledger ``file`` in place (see the module docstring) and say so on stderr.

    Exits 2 with one line, nothing changed: unreadable, a journal that does not verify, a ledger that does not
    verify or is not ``running``, or a ``FILE.journal.closed`` already there.
    """
    from agentstudy.io.atomic import write_text_atomic
    from agentstudy.io.ledger_journal import LedgerJournalError, read_ledger
    from agentstudy.io.ledger_store import journal_path
    from agentstudy.protocol.crash_close import closed_crash, open_reservation_count
    from agentstudy.protocol.json_input import load_json
    from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
    try:
        data = file.read_bytes()
        read = read_ledger(file, data)
    except OSError as error:
        fail(f"{file}: cannot read it: {error.strerror or error}")
    except LedgerJournalError as error:
        fail(str(error))
    verification = verify_ledger_bytes(read.data)
    if not verification.verified:
        fail(f"{file}: does not verify: {verification.first()}; it is not closed")
    from agentstudy.runners.ledger_steps import now_iso

    document = load_json(read.data)
    try:
        closed = closed_crash(document, now_iso())
    except ValueError as error:
        fail(f"{file}: {error}")
    text = json.dumps(closed, indent=2, ensure_ascii=False) + "\n"
    problems = verify_ledger_bytes(text.encode("utf-8")).problems
    if problems:
        fail(f"{file}: its closed form does not verify: {problems[0]}; it is not closed")
    journal = journal_path(file)
    kept = journal.with_name(journal.name + CLOSED_SUFFIX)
    if kept.exists() or kept.is_symlink():
        fail(f"{kept} already exists; nothing was changed")
    try:
        if journal.exists():
            os.link(journal, kept)  # the journal stays as evidence; the original goes once the snapshot is closed
        write_text_atomic(file, text)
        journal.unlink(missing_ok=True)
    except OSError as error:
        fail(f"{file}: cannot close it: {error.strerror or error}")
    click.echo(f"closed {file} as crashed (blocked): {len(closed['observations'])} observation(s) unchanged, "
               f"{open_reservation_count(closed)} open reservation(s) counted as spent in full"
               + (f"; its journal is kept as {kept.name}" if kept.exists() else ""), err=True)
