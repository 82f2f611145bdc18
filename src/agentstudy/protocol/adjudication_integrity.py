"""The invariants of a minimal-study adjudication companion's money and timing (issue 19, item 1).

Pure. ``companion_problems`` is what a reader checks after a crash or a stop: ``budget.spent`` is every
item's charge plus every open reservation (``openReservation`` or the ``openReservations`` list of a
concurrent adjudication), spent stays within the cap flag's word, and with ``concurrency`` set: the
list form only, every item with an attempt has ``startedAt`` / ``endedAt``, never more than
``concurrency`` attempts ran at once, and none started after an attempt that did not complete ended.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from agentstudy.protocol.adjudication import MinimalAdjudication
from agentstudy.protocol.ledger_concurrency import most_at_once, parse_span
from agentstudy.protocol.ledger_invariants import spent_matches


def companion_problems(companion: MinimalAdjudication) -> list[str]:
    """Every broken invariant of ``companion``, one line each (empty when it holds together)."""
    return list(_problems(companion))


def _problems(companion: MinimalAdjudication) -> Iterator[str]:
    budget = companion.budget
    opened = [*([companion.open_reservation] if companion.open_reservation else []),
              *(companion.open_reservations or [])]
    terms = [item.charged_usd for item in companion.items]
    terms += [reservation.reserved_usd for reservation in opened]
    if not spent_matches(budget.spent, terms):
        yield f"budget.spent {budget.spent!r} is not the items' charges plus the open reservations ({sum(terms)!r})"
    if (budget.cumulative_cap_exceeded and budget.spent < budget.cap) or (
            not budget.cumulative_cap_exceeded and budget.spent > budget.cap):
        yield f"budget.cumulativeCapExceeded is {budget.cumulative_cap_exceeded} with spent {budget.spent!r}"
    settled = {item.item_id for item in companion.items if item.attempt_status is not None}
    for reservation in opened:
        if reservation.item_id in settled:
            yield f"the open reservation of {reservation.item_id} belongs to a settled item"
    if companion.concurrency is None:
        if companion.open_reservations is not None:
            yield "openReservations without concurrency (only a concurrent adjudication keeps a list)"
        return
    if companion.concurrency < 1:
        yield f"concurrency {companion.concurrency} is not a positive number of attempts"
        return
    if companion.open_reservation is not None:
        yield "a concurrent adjudication keeps its open reservations in openReservations, not openReservation"
    spans: list[tuple[datetime, datetime, str]] = []
    for item in companion.items:
        if item.attempt_status is None:
            continue
        span = parse_span(item.started_at, item.ended_at)
        if span is None:
            yield f"item {item.item_id}: a concurrent adjudication records startedAt and endedAt (ISO 8601 UTC)"
            return
        spans.append((*span, item.attempt_status))
    peak = most_at_once([(start, end) for start, end, _ in spans])
    if peak > companion.concurrency:
        yield f"{peak} adjudicator attempts ran at once at concurrency {companion.concurrency}"
    stopping = [end for _, end, status in spans if status != "completed"]
    if stopping:
        late = [start for start, _, _ in spans if start > min(stopping)]
        if late:
            yield f"{len(late)} adjudicator attempt(s) started after one that did not complete ended"


__all__ = ["companion_problems"]
