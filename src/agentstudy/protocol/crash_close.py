"""Closing a crashed run's ledger (issue 40: a crashed run can be continued). Pure.

A run killed before it closed leaves a ``running`` snapshot and a journal; rebuilt, it verifies. Its open
reservations are attempts whose outcome is unknown, so they stay charged in full (the seed's rule for an
attempt whose outcome is unknown: a failure preserves its reservation). :func:`closed_crash` turns that
rebuilt document into a closed one (``blocked``, with the reason and the time) without changing any
observation; the caller seals and writes it (``commands.ledger_close``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agentstudy.protocol.ledger_integrity import seal_ledger


def open_reservation_count(document: dict[str, Any]) -> int:
    """How many open reservations a ledger document holds (``openReservation`` and ``openReservations``)."""
    return (document.get("openReservation") is not None) + len(document.get("openReservations") or [])


def closed_crash(document: dict[str, Any], now: str) -> dict[str, Any]:
    """The sealed, closed form of a crashed run's rebuilt ledger ``document`` (its ``status`` ``running``):
    status ``blocked``, ``finishedAt`` ``now`` (ISO 8601 UTC ms), a ``stopReason`` naming the crash and the
    open reservations counted as spent; observations, budget and reservations unchanged.

    Raises:
        ValueError: the document is not a running ledger.
    """
    if document.get("status") != "running":
        raise ValueError(f"its status is {document.get('status')!r}, not running: only a crashed run is closed")
    opened = open_reservation_count(document)
    at_risk = sum((Decimal(repr(each.get(key, 0))) for each in
                   [document.get("openReservation") or {}, *(document.get("openReservations") or [])]
                   for key in ("reservedUsd", "chargedUsd")), Decimal(0))
    closed = {key: value for key, value in document.items() if key not in ("journal", "hashAlgo", "ledgerHash")}
    closed.update(status="blocked", finishedAt=now,
                  stopReason=f"crashed: the run ended without closing its ledger (closed by agentstudy ledger "
                             f"--close); {opened} open reservation(s), {at_risk} USD, counted as spent in full "
                             "(outcome unknown)")
    sealed: dict[str, Any] = seal_ledger(closed)
    return sealed


__all__ = ["closed_crash", "open_reservation_count"]
