"""The runners' side of a sequential study (issue 35): its schedule and the hook that takes the looks.

Both walks (one at a time, and ``runners.concurrent_walk``) call the hook with each observation just before
its checkpoint, in the order they record (admission order: tasks complete in their block order). The hook
feeds ``protocol.sequential_plan.SequentialMonitor``, writes the ledger's ``sequential`` block, and says when
the schedule ends (the first look that stops the study); the walk then admits nothing more (no reservation
for any later attempt) while attempts in flight finish and are recorded outside the decision. A continuation of a
sequential study that had not stopped (issue 40) first carries the chain's completed observations into the
monitor, so the e-process goes on from where the chain left it.
"""

from __future__ import annotations

from collections.abc import Callable

from agentstudy.protocol.arm_order import order_rule
from agentstudy.protocol.continuation import Predecessor
from agentstudy.protocol.manifest import LoadedManifest
from agentstudy.protocol.records import CliObservation, HttpObservation, MinimalLedger
from agentstudy.protocol.schedule import Mode, PilotSize, ScheduleEntry, block_schedule, build_schedule
from agentstudy.protocol.sequential_plan import SequentialMonitor, SequentialPlan
from agentstudy.runners.ledger_steps import now_iso

Hook = Callable[[CliObservation | HttpObservation], bool]
"""Called with each recorded observation; ``True`` once, when the schedule ends (the study stopped)."""


def study_schedule(loaded: LoadedManifest, mode: Mode, pilot: PilotSize,
                   plan: SequentialPlan | None) -> tuple[ScheduleEntry, ...]:
    """The run's schedule: the sequential plan's task blocks (``protocol.schedule.block_schedule``), else the
    fixed design's pilot or full schedule, each pair in the study's ``design.order`` (issue 41 item 8)."""
    rule = order_rule(loaded.manifest, loaded.protocol_hash)
    if plan is not None:
        return block_schedule(loaded.manifest, plan.task_order, rule)
    return build_schedule(loaded.manifest, mode, pilot, rule)


def start_sequential(ledger: MinimalLedger, plan: SequentialPlan | None,
                     continuation: Predecessor | None = None) -> Hook | None:
    """Set up ``ledger`` for a sequential run (its ``sequential`` block, with the chain's carried observations for
    a ``continuation``; ``fullAttempts``, when recorded, is the sequential schedule's size: the attempts planned
    now plus those the chain completed) and return the walk's hook; ``None`` (and nothing changed) without a
    plan."""
    if plan is None:
        return None
    monitor = SequentialMonitor(plan)
    if continuation is not None:
        planned = set(plan.task_order)
        monitor.carry(observation for link in continuation.links() for observation in link.ledger.to_json()[
            "observations"] if observation.get("status") == "completed" and observation.get("taskId") in planned)
    ledger.sequential = monitor.record()
    if ledger.full_attempts is not None:
        before = (ledger.continues.completed_before or 0) if ledger.continues is not None else 0
        ledger.full_attempts = ledger.planned_attempts + before

    def recorded(observation: CliObservation | HttpObservation) -> bool:
        look = monitor.observe(observation.to_json(), now_iso())
        if look is None:
            return False
        ledger.sequential = monitor.record()
        return monitor.stopped

    return recorded


__all__ = ["Hook", "start_sequential", "study_schedule"]
