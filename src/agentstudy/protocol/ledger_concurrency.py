"""A concurrent ledger's timing rules (issue 19): how many attempts ran at once, and none after a stop.

Pure: reads each observation's ``startedAt`` / ``endedAt`` (ISO 8601 UTC, ms) and status. Part of
``protocol.ledger_integrity``'s invariants.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from agentstudy.fsm.run import HTTP_STOPPING_STATUSES
from agentstudy.protocol.records import MinimalLedger


def continues(transport: str, status: str) -> bool:
    """Whether an attempt ending ``status`` lets the run go on (decision 9: cli only ``completed``;
    http anything but ``failed`` and ``budget-exceeded``)."""
    return status == "completed" if transport == "cli" else status not in HTTP_STOPPING_STATUSES


def concurrency_problems(ledger: MinimalLedger) -> Iterator[str]:
    """A concurrent run's rules (issue 19), from each observation's ``startedAt`` and ``endedAt``: never more
    than ``concurrency`` attempts ran at once, and none started after an attempt that stops the run ended
    (a finished attempt frees its slot at once, so a count of observations after it proves nothing)."""
    width = ledger.concurrency
    if width is None:
        if ledger.open_reservations is not None:
            yield "openReservations without concurrency (only a concurrent run keeps a list)"
        return
    if width < 1:
        yield f"concurrency {width} is not a positive number of attempts"
        return
    if ledger.open_reservation is not None:
        yield "a concurrent run keeps its open reservations in openReservations, not openReservation"
    spans = _spans(ledger)
    if spans is None:
        yield "a concurrent run records startedAt and endedAt (ISO 8601 UTC) of every observation"
        return
    peak = most_at_once([(start, end) for start, end, _ in spans])
    if peak > width:
        yield f"{peak} attempts ran at once at concurrency {width}"
    stopping = [(end, i) for i, (_, end, status) in enumerate(spans) if not continues(ledger.transport, status)]
    if stopping:
        ended_at, first = min(stopping)
        late = [i for i, (start, _, _) in enumerate(spans) if start > ended_at]
        if late:
            yield (f"observations[{late[0]}]: started after observations[{first}] ended "
                   f"{spans[first][2]}, which stops the run ({len(late)} such)")


def most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    """The most ``(start, end)`` intervals open at one instant; at one instant an end frees its slot before a
    start takes it. Shared with ``protocol.adjudication_integrity``."""
    events = sorted([(end, 0) for _, end in spans] + [(start, 1) for start, _ in spans])
    running = peak = 0
    for _, starts in events:
        running += 1 if starts else -1
        peak = max(peak, running)
    return peak


def parse_span(started: object, ended: object) -> tuple[datetime, datetime] | None:
    """``(startedAt, endedAt)`` as aware datetimes, or ``None`` when one is missing, not ISO 8601 with a zone,
    or the end is before the start."""
    if not isinstance(started, str) or not isinstance(ended, str):
        return None
    try:
        start, end = datetime.fromisoformat(started), datetime.fromisoformat(ended)
    except ValueError:
        return None
    if start.tzinfo is None or end.tzinfo is None or end < start:
        return None
    return start, end


def _spans(ledger: MinimalLedger) -> list[tuple[datetime, datetime, str]] | None:
    """Each observation's (startedAt, endedAt, status), or ``None`` when one lacks a time or it is not ISO 8601."""
    spans = []
    for observation in ledger.observations:
        span = parse_span(observation.started_at, observation.ended_at)
        if span is None:
            return None
        spans.append((*span, observation.status))
    return spans


__all__ = ["concurrency_problems", "continues", "most_at_once", "parse_span"]
