"""``runners.ordered_flights.drive_in_order``: slots, admission order, records in order, refusals, errors.

Jobs are real worker threads held by events the test releases, so the order of finishing is chosen
by the test, never by a clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from agentstudy.runners.ordered_flights import Flight, drive_in_order


class Gate:
    """Jobs that block until released; counts how many run at once."""

    def __init__(self, count: int) -> None:
        self.release = [threading.Event() for _ in range(count)]
        self.lock = threading.Lock()
        self.running = self.peak = 0
        self.started: list[int] = []

    def job(self, item: int) -> Callable[[], int]:
        def run() -> int:
            with self.lock:
                self.running += 1
                self.peak = max(self.peak, self.running)
                self.started.append(item)
                if len(self.started) == 3:
                    for later in (2, 1, 0):  # the third starts: free the first three, last one first
                        self.release[later].set()
            assert self.release[item].wait(timeout=60)
            with self.lock:
                self.running -= 1
                if item + 3 < len(self.release):
                    self.release[item + 3].set()
            return item * 10
        return run


def test_at_most_n_run_and_records_come_in_admission_order() -> None:
    gate = Gate(8)
    recorded: list[tuple[int, int, int]] = []
    seen: list[int] = []

    def record(flight: Flight[int, int]) -> None:
        recorded.append((flight.index, flight.item, flight.future.result()))

    done = drive_in_order(list(range(8)), concurrency=3, admit=lambda _, item: gate.job(item), record=record,
                          seen=lambda flight: seen.append(flight.item))
    assert recorded == [(i + 1, i, i * 10) for i in range(8)]
    assert sorted(seen) == list(range(8))
    assert gate.peak == 3 and done.peak_running == 3 and done.left == []
    assert gate.started[:3] == [0, 1, 2] and sorted(gate.started) == list(range(8))


def test_a_refusal_with_nothing_running_ends_the_walk_and_leaves_the_rest() -> None:
    budget = {"room": 2}

    def admit(index: int, item: str) -> Callable[[], str] | None:
        if budget["room"] == 0:
            return None
        budget["room"] -= 1
        return lambda: item.upper()

    recorded: list[str] = []
    done = drive_in_order(["a", "b", "c", "d"], concurrency=4, admit=admit,
                          record=lambda flight: recorded.append(flight.future.result()))
    assert recorded == ["A", "B"] and done.left == ["c", "d"]


def test_a_refusal_waits_for_running_jobs_that_free_room() -> None:
    room = {"free": 1}
    recorded: list[int] = []

    def admit(index: int, item: int) -> Callable[[], int] | None:
        if room["free"] == 0:
            return None
        room["free"] -= 1
        return lambda: item

    def record(flight: Flight[int, int]) -> None:
        room["free"] += 1  # a settlement frees room for the next admission
        recorded.append(flight.future.result())

    done = drive_in_order([1, 2, 3], concurrency=3, admit=admit, record=record)
    assert recorded == [1, 2, 3] and done.peak_running == 1 and done.left == []


def test_an_error_in_record_aborts_then_propagates() -> None:
    aborted: list[bool] = []

    def record(flight: Flight[int, int]) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        drive_in_order([1, 2], concurrency=2, admit=lambda _, item: lambda: item, record=record,
                       abort=lambda: aborted.append(True))
    assert aborted == [True]
    with pytest.raises(ValueError, match="at least 1"):
        drive_in_order([1], concurrency=0, admit=lambda _, item: lambda: item, record=lambda flight: None)


def test_a_job_that_raised_stops_admission_at_once_and_its_slot_is_not_refilled() -> None:
    """Issue 29, break 6: a raised job behind a slow head was noticed only at the head, its slot refilled."""
    head_release = threading.Event()
    raised = threading.Event()
    admitted: list[int] = []

    def admit(index: int, item: int) -> Callable[[], int]:
        admitted.append(item)

        def run() -> int:
            if item == 0:  # the head: held until the second job has raised
                assert raised.wait(timeout=60)
                assert head_release.wait(timeout=60)
                return 0
            if item == 1:
                raised.set()
                raise OSError(28, "No space left on device")
            return item

        return run

    def seen(flight: Flight[int, int]) -> None:
        pass

    def record(flight: Flight[int, int]) -> None:
        flight.future.result()

    waiter = threading.Thread(target=lambda: (raised.wait(60), threading.Event().wait(1.5), head_release.set()))
    waiter.start()
    with pytest.raises(OSError, match="No space left"):
        drive_in_order(list(range(8)), concurrency=2, admit=admit, record=record, seen=seen)
    waiter.join()
    assert admitted == [0, 1], "no job was admitted after one raised"
