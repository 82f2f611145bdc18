"""Checks the concurrency tests share (issue 19): a closed concurrent ledger, and how many attempts overlapped.

``peak_overlap`` is the tests' own count from the observations' ``startedAt`` / ``endedAt``,
written independently of ``protocol.ledger_concurrency`` so that it can catch that module.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema

from agentstudy.io.ledger_journal import LedgerJournalError, read_ledger
from agentstudy.io.ledger_store import journal_path
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.schemas import json_schema


def moment(text: str | None) -> datetime:
    """An ISO 8601 UTC stamp (``...Z``) as an aware datetime; fails the test when it is missing."""
    assert text is not None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def peak_overlap(ledger: MinimalLedger) -> int:
    """The most observations whose [startedAt, endedAt] intervals hold one moment in common."""
    events = sorted([(moment(o.started_at), 1) for o in ledger.observations]
                    + [(moment(o.ended_at), -1) for o in ledger.observations])
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def verified(path: Path) -> MinimalLedger:
    """The closed ledger at ``path``: it verifies, fits the ledger schema and left no journal behind."""
    data = path.read_bytes()
    assert verify_ledger_bytes(data).problems == ()
    document = json.loads(data)
    jsonschema.validate(document, json_schema("ledger"))
    assert not journal_path(path).exists()  # a run that closed leaves only its ledger
    return MinimalLedger.model_validate(document)


def live_state(path: Path) -> dict[str, Any] | None:
    """The state of a ledger a running study is writing (its snapshot plus its journal), or ``None`` when the
    file is absent or the read fell between a snapshot's write and its journal's (a poller reads again)."""
    try:
        document: dict[str, Any] = json.loads(read_ledger(path, path.read_bytes()).data)
    except (OSError, ValueError, LedgerJournalError):
        return None
    return document
