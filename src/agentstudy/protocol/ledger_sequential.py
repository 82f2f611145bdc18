"""The ledger verifier's checks of a sequential run's ``sequential`` block (issue 35). Pure.

Part of ``protocol.ledger_integrity``: the looks are numbered 1, 2, … with ``continue`` before the last; the
stop reason, ``stoppedEarly``, ``tasksCompleted`` and ``stoppedAt`` agree with them; ``plannedAttempts`` is
``maxTasks`` complete blocks; the observations come in the planned block order (admission follows task
blocks); the looks are exactly what the observations give when replayed through the run's own monitor
(``protocol.sequential_plan.replay``); ``taskOrder`` is what ``seed`` draws from ``taskPool`` (issue 40;
older ledgers record no pool); and no attempt started after the stop (``startedAt`` at most
``stoppedAt`` in a concurrent run; none beyond the decided tasks' blocks in a one-at-a-time run).

A continuation (issue 40) verifies on its own: its ``plannedAttempts`` plus ``continues.completedBefore`` are the
``maxTasks`` blocks, and the replay first carries the block's ``carried`` observations (the chain's), so its
looks, which go on after the earlier runs' tasks, are recomputed too. Each block replays with its own
``construction`` (absent: the legacy two-sided one); a ``sidedness`` that does not belong to it is refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.sequential import LEGACY_CONSTRUCTION, SIDEDNESS
from agentstudy.protocol.sequential_plan import replay, task_order
from agentstudy.protocol.sequential_record import SequentialRecord
from agentstudy.protocol.study_arms import SCENARIOS

_E_TOLERANCE = 1e-9


def early_stop(ledger: MinimalLedger) -> bool:
    """Whether the ledger's sequential test stopped the study before its last planned attempt (efficacy or
    futility at a look before ``maxTasks``): such a run may end ``awaiting-adjudication`` with fewer
    observations than planned."""
    return ledger.sequential is not None and ledger.sequential.stopped_early


def sequential_problems(ledger: MinimalLedger, document: Mapping[str, Any]) -> Iterator[str]:
    """Every problem of ``ledger.sequential`` (none when absent); ``document`` is the ledger as written."""
    record = ledger.sequential
    if record is None:
        return
    yield from _look_problems(record)
    construction = record.construction or LEGACY_CONSTRUCTION
    if record.construction is not None and record.sidedness != SIDEDNESS[construction]:
        yield f"sequential.sidedness {record.sidedness!r} is not the {construction} construction's"
    blocks = 2 * record.max_tasks
    before = (ledger.continues.completed_before or 0) if ledger.continues is not None else 0
    if (ledger.planned_attempts + before) % blocks:
        yield f"sequential: plannedAttempts {ledger.planned_attempts} is not maxTasks {record.max_tasks} whole blocks"
        return
    if record.carried and ledger.continues is None:
        yield "sequential.carried in a run that continues none"
    repetitions = (ledger.planned_attempts + before) // blocks
    position = {task: index for index, task in enumerate(record.task_order)}
    if len(position) != record.max_tasks or len(record.task_order) != record.max_tasks:
        yield f"sequential.taskOrder must list {record.max_tasks} distinct tasks"
        return
    yield from _order_problems(record)
    observations = document["observations"]
    last = -1
    for index, observation in enumerate(observations):
        where = position.get(observation.get("taskId"))
        if where is None:
            yield f"observations[{index}]: task {observation.get('taskId')!r} is not in sequential.taskOrder"
            return
        if where < last:
            yield f"observations[{index}]: task {observation.get('taskId')!r} out of the planned block order"
        last = max(last, where)
    try:
        replayed = replay(record, repetitions, observations)
    except ValueError as error:
        yield f"sequential: {error}"
        return
    if [(a.tasks, a.decision) for a in replayed.looks] != [(b.tasks, b.decision) for b in record.looks]:
        yield "sequential.looks are not what the observations give"
    elif any(not math.isclose(a.e_value, b.e_value, rel_tol=_E_TOLERANCE)
             for a, b in zip(replayed.looks, record.looks, strict=True)):
        yield "sequential.looks: an eValue is not what the observations give"
    elif replayed.record().direction != record.direction:
        yield f"sequential.direction {record.direction!r} is not what the observations give"
    yield from _after_stop_problems(ledger, record, document, repetitions)


def _order_problems(record: SequentialRecord) -> Iterator[str]:
    """``taskOrder`` is what ``seed`` draws from ``taskPool`` (issue 40); an older ledger without a pool is not
    checked here."""
    pool = record.task_pool
    if pool is None:
        return
    if len(set(pool)) != len(pool) or len(pool) < record.max_tasks:
        yield f"sequential.taskPool must list at least maxTasks {record.max_tasks} distinct tasks"
    elif task_order(pool, record.seed, record.max_tasks) != tuple(record.task_order):
        yield f"sequential.taskOrder is not the order seed {record.seed} draws from sequential.taskPool"


def _look_problems(record: SequentialRecord) -> Iterator[str]:
    looks = record.looks
    if [look.tasks for look in looks] != list(range(1, len(looks) + 1)):
        yield "sequential.looks must be numbered 1, 2, … by task"
    if any(look.decision != "continue" for look in looks[:-1]):
        yield "sequential.looks: a look after one that stopped the study"
    if any(not (math.isfinite(look.e_value) and look.e_value > 0) for look in looks):
        yield "sequential.looks: an eValue is not a finite number > 0"
    if record.tasks_completed != len(looks) or len(looks) > record.max_tasks:
        yield (f"sequential.tasksCompleted {record.tasks_completed} with {len(looks)} looks "
               f"of maxTasks {record.max_tasks}")
    decided = looks[-1].decision if looks and looks[-1].decision != "continue" else None
    if record.stop_reason != decided:
        yield f"sequential.stopReason {record.stop_reason!r}, but the last look decided {decided!r}"
    early = decided in ("efficacy", "futility") and len(looks) < record.max_tasks
    if record.stopped_early != early:
        yield (f"sequential.stoppedEarly is {str(record.stopped_early).lower()} with {len(looks)} looks "
               f"ending {decided!r}")
    if (record.stopped_at is not None) != (decided is not None):
        yield "sequential.stoppedAt is set exactly when a look stopped the study"


def _after_stop_problems(ledger: MinimalLedger, record: SequentialRecord, document: Mapping[str, Any],
                         repetitions: int) -> Iterator[str]:
    if record.stop_reason is None:
        return
    if ledger.concurrency is None:
        decided = record.tasks_completed * repetitions * len(SCENARIOS) - len(record.carried or [])
        if len(document["observations"]) > decided or ledger.open_reservation is not None:
            yield f"an attempt after the sequential stop at {record.tasks_completed} tasks"
        return
    try:
        stopped = datetime.fromisoformat(record.stopped_at or "")
    except ValueError:
        yield f"sequential.stoppedAt {record.stopped_at!r} is not ISO 8601"
        return
    for index, observation in enumerate(document["observations"]):
        started = observation.get("startedAt")
        if isinstance(started, str) and datetime.fromisoformat(started) > stopped:
            yield f"observations[{index}] started after the sequential stop ({record.stopped_at})"


__all__ = ["early_stop", "sequential_problems"]
