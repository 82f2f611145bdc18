"""N-at-once work recorded in admission order: the small shared piece of the concurrent walks (issue 19, item 1).

``drive_in_order`` is the coordinator loop the controlled runner and both adjudications use (the
minimal cli walk, ``runners/concurrent_walk.py``, keeps its own copy of the same rules). The
calling thread alone admits and records; worker threads of a ``ThreadPoolExecutor`` only run the
job an admission returned. The rules:

- admission in item order, at most ``concurrency`` jobs running: ``admit(item)`` is asked for the
  next item whenever a slot is free; it does its bookkeeping (reserve, checkpoint) and returns the
  job, or ``None`` to admit nothing now (the cap does not fit, a stop). A refusal while nothing is
  running ends the walk (no running job could free room);
- a finished job frees its slot at once, but it is recorded (``record``) only after every earlier
  one, so the records come out in admission order; ``seen(flight)`` is told of each finished
  job as soon as it is known, in any order (the stop rule's early ``halt``);
- a job that raised stops admission at once (its slot is not refilled; issue 29, break 6), and its
  exception reaches ``record`` (``flight.future.result()`` re-raises it) once it heads the queue; whatever
  ``admit`` or ``record`` raise ends the walk: ``abort`` is called (terminate the children), then
  the pool's exit waits for the jobs still running.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Generic, TypeVar

from agentstudy.io.signals import run_stop_hooks

Item = TypeVar("Item")
Result = TypeVar("Result")

WAIT_SLICE_S = 0.5
"""Seconds the coordinator waits for a job before it asks ``admit`` again (a stop flag may have changed)."""


@dataclass
class Flight(Generic[Item, Result]):
    """One admitted job: its 1-based admission ``index``, its ``item`` and the ``future`` of its result."""

    index: int
    item: Item
    future: Future[Result]


@dataclass
class DriveResult(Generic[Item]):
    """How the walk ended: the items never admitted (in order) and the most jobs ever running at once."""

    left: list[Item]
    peak_running: int


def drive_in_order(items: list[Item], *, concurrency: int, admit: Callable[[int, Item], Callable[[], Result] | None],
                   record: Callable[[Flight[Item, Result]], None],
                   seen: Callable[[Flight[Item, Result]], None] | None = None,
                   abort: Callable[[], None] | None = None, thread_name_prefix: str = "item") -> DriveResult[Item]:
    """Run ``items`` with at most ``concurrency`` jobs at once, recording them in admission order.

    Args:
        items: the work, in admission order.
        concurrency: the most jobs running at once (1 or more).
        admit: ``(index, item)`` -> the job to run in a worker, or ``None`` (nothing admitted now);
            ``index`` is the 1-based admission index the item would get.
        record: called in the calling thread with each finished flight, in admission order.
        seen: called once per finished flight as soon as it is known (any order), before its record.
        abort: called in the calling thread when anything raised, before the pool waits for the jobs
            still running (e.g. ``io.signals.terminate_children``).

    Returns:
        ``DriveResult``: the items left unadmitted and the peak number running.

    Raises:
        ValueError: ``concurrency`` below 1. Anything a job, ``admit`` or ``record`` raised.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    pending = deque(items)
    flights: deque[Flight[Item, Result]] = deque()
    told: set[int] = set()
    peak = 0

    def running() -> int:
        return sum(not flight.future.done() for flight in flights)

    admitted = 0
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=thread_name_prefix) as pool:
        try:
            while True:
                run_stop_hooks()  # after a stop, the remote jobs (Ray) are cancelled here (issue 29, break 7)
                while pending and running() < concurrency and not any(
                        flight.future.done() and flight.future.exception() is not None for flight in flights):
                    job = admit(admitted + 1, pending[0])
                    if job is None:
                        break
                    admitted += 1
                    flights.append(Flight(admitted, pending.popleft(), pool.submit(job)))
                    peak = max(peak, running())
                if not flights:
                    break
                busy = [flight.future for flight in flights if not flight.future.done()]
                if busy and not flights[0].future.done():
                    wait(busy, timeout=WAIT_SLICE_S, return_when=FIRST_COMPLETED)
                for flight in flights:
                    if flight.future.done() and flight.index not in told and flight.future.exception() is None:
                        told.add(flight.index)
                        if seen is not None:
                            seen(flight)
                while flights and flights[0].future.done():
                    record(flights.popleft())
        except BaseException:
            if abort is not None:
                abort()
            raise
    return DriveResult(list(pending), peak)


__all__ = ["WAIT_SLICE_S", "DriveResult", "Flight", "drive_in_order"]
