"""``protocol.adjudication_integrity.companion_problems``: each invariant of a companion, broken one at a time."""

from __future__ import annotations

from typing import Any

import pytest

from agentstudy.protocol.adjudication import MinimalAdjudication
from agentstudy.protocol.adjudication_integrity import companion_problems


def _item(item_id: str, charged: float, status: str | None, started: str | None = None,
          ended: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"itemId": item_id, "observationIndex": int(item_id[-1]), "taskId": "t", "repetition": 1,
                            "status": "scored" if status == "completed" else "pending",
                            "citations": {"total": 0, "valid": 0, "failures": []}, "adjudicatorModel": "m",
                            "attemptStatus": status, "chargedUsd": charged, "reservedUsd": 0.1 if status else 0.0}
    if started is not None:
        item.update({"startedAt": started, "endedAt": ended})
    return item


def _companion(**changes: Any) -> dict[str, Any]:
    """A concurrent companion of three items (N = 2): two ran at once, the third after the first ended."""
    document: dict[str, Any] = {
        "ledgerSha256": "0" * 64, "adjudicator": {}, "blinding": {}, "status": "adjudicated",
        "startedAt": "2026-12-01T10:00:00.000Z", "missing": [], "concurrency": 2, "openReservations": [],
        "budget": {"cap": 1.0, "spent": 0.06, "reserved": 0.3, "measured": 0.06, "cumulativeCapExceeded": False},
        "items": [
            _item("item-0", 0.01, "completed", "2026-12-01T10:00:00.000Z", "2026-12-01T10:00:05.000Z"),
            _item("item-1", 0.02, "completed", "2026-12-01T10:00:00.100Z", "2026-12-01T10:00:06.000Z"),
            _item("item-2", 0.03, "completed", "2026-12-01T10:00:05.000Z", "2026-12-01T10:00:09.000Z"),
        ],
    }
    document.update(changes)
    return document


def _problems(document: dict[str, Any]) -> list[str]:
    return companion_problems(MinimalAdjudication.model_validate(document))


def test_a_companion_that_holds_together_has_no_problem() -> None:
    assert _problems(_companion()) == []
    sequential = _companion(concurrency=None, openReservations=None,
                            openReservation={"itemId": "item-2", "reservedUsd": 0.1},
                            budget={"cap": 1.0, "spent": 0.13, "reserved": 0.3, "measured": 0.03,
                                    "cumulativeCapExceeded": False})
    sequential["items"] = [_item("item-0", 0.01, "completed"), _item("item-1", 0.02, "completed"),
                           _item("item-2", 0.0, None)]
    assert _problems(sequential) == []


def _three_at_once() -> dict[str, Any]:
    document = _companion()
    document["items"][2].update({"startedAt": "2026-12-01T10:00:04.000Z"})
    return document


def _late_after_a_failure() -> dict[str, Any]:
    document = _companion()
    document["items"][0].update({"attemptStatus": "failed", "status": "pending"})
    document["items"][2].update({"startedAt": "2026-12-01T10:00:05.001Z"})  # 1 ms after the failure ended
    return document


@pytest.mark.parametrize(("document", "expected"), [
    (_companion(budget={"cap": 1.0, "spent": 0.05, "reserved": 0.3, "measured": 0.06,
                        "cumulativeCapExceeded": False}), "is not the items' charges plus the open reservations"),
    (_companion(openReservations=[{"itemId": "item-9", "reservedUsd": 0.1}]), "is not the items' charges"),
    (_companion(budget={"cap": 0.05, "spent": 0.06, "reserved": 0.3, "measured": 0.06,
                        "cumulativeCapExceeded": False}), "cumulativeCapExceeded is False"),
    (_companion(concurrency=None), "openReservations without concurrency"),
    (_companion(openReservation={"itemId": "item-9", "reservedUsd": 0.0}), "not openReservation"),
    (_three_at_once(), "3 adjudicator attempts ran at once at concurrency 2"),
    (_late_after_a_failure(), "1 adjudicator attempt(s) started after one that did not complete ended"),
])
def test_each_broken_invariant_is_named(document: dict[str, Any], expected: str) -> None:
    problems = _problems(document)
    assert any(expected in problem for problem in problems), problems


def test_an_item_without_its_times_is_named() -> None:
    document = _companion()
    del document["items"][1]["startedAt"]
    assert _problems(document) == ["item item-1: a concurrent adjudication records startedAt and endedAt "
                                   "(ISO 8601 UTC)"]
