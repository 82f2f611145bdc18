"""A sequential study's plan and its running evidence (issue 35). Pure.

:func:`plan_sequential` turns a study's ``design.sequential`` (or, for ``--sequential`` without one, the
defaults: every task, alpha 0.05, futility 0.1) and its primary endpoint into a :class:`SequentialPlan`:
the design, the metric and its better direction, the seed and the seeded random task order (numpy's
PCG64, so the same seed gives the same order everywhere). :class:`SequentialMonitor` is fed the
observations in the order the runner records them (admission order, so tasks complete in their block
order, which was fixed by the seed before any outcome) and takes one look per completed task
(``protocol.sequential.looks``); after the first stopping look it takes no more, so attempts still in
flight at the stop are recorded but never enter the decision. :func:`replay` is the same monitor over a
ledger's observations: the ledger verifier recomputes the looks with it.

New plans use the one-sided ``magnitudeBet`` construction with the bet size planned from their ``maxTasks`` (issue 41
item 7, ``protocol.sequential.new_design``); a plan read back from a ledger's block (:func:`plan_from_record`: a
replay, or a continuation of a study that had not stopped, issue 40) keeps the construction, ``betSize``, seed and
order recorded there. A continuation's monitor first :meth:`~SequentialMonitor.carry`
the chain's completed observations, so its e-process goes on from the chain's, never restarted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentstudy.protocol.sequential import (
    LEGACY_CONSTRUCTION,
    SIDEDNESS,
    BetterWhen,
    Look,
    SequentialDesign,
    looks,
    new_design,
)
from agentstudy.protocol.sequential_record import CarriedObservation, LookRecord, SequentialRecord
from agentstudy.protocol.study_agents import study_agents
from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, REPOSITORY_ONLY

SEQUENTIAL_METRICS: Mapping[str, bool] = {
    "inputTokens": True, "outputTokens": True, "chargedUsd": True, "toolCalls": False, "wallTimeMs": False}
"""Primary metrics a sequential run can decide on while it runs (observation key -> needs complete usage);
correctness is known only after adjudication."""
DEFAULT_METRIC = "inputTokens"
DEFAULT_BETTER_WHEN: BetterWhen = "lower"
DEFAULT_ALPHA = 0.05
DEFAULT_FUTILITY = 0.1


@dataclass(frozen=True)
class SequentialPlan:
    """What a sequential run follows: ``design``, the primary ``metric`` (an observation key) and ``better_when``,
    ``seed``, ``task_order`` (task ids, ``design.max_tasks`` of them, in block order) and ``repetitions``."""

    design: SequentialDesign
    metric: str
    better_when: BetterWhen
    seed: int
    task_order: tuple[str, ...]
    repetitions: int
    task_pool: tuple[str, ...] | None = None
    """The study's task ids in its file's order, which ``seed`` permuted (issue 40; ``None`` replaying an older
    ledger that did not record them)."""


def task_order(task_ids: Sequence[str], seed: int, max_tasks: int) -> tuple[str, ...]:
    """The first ``max_tasks`` of a seeded random permutation of ``task_ids`` (numpy PCG64 from ``seed``)."""
    import numpy as np  # loaded when a plan is drawn, not with every study file (issue 42)

    permutation = np.random.default_rng(seed).permutation(len(task_ids))
    return tuple(task_ids[int(i)] for i in permutation[:max_tasks])


def seed_from_hash(protocol_hash: str) -> int:
    """The default seed: the protocol hash's first 15 hex digits as an integer (the study file fixes it)."""
    return int(protocol_hash[:15], 16)


def plan_sequential(manifest: Any, protocol_hash: str, *, metric: str = DEFAULT_METRIC,
                    better_when: BetterWhen = DEFAULT_BETTER_WHEN) -> SequentialPlan:
    """The plan of a sequential run of ``manifest`` (a loaded study definition) on ``metric``.

    Raises:
        ValueError: a metric that cannot be decided on while running, a study of several agents, or a
            default design that can never reach efficacy (too few tasks); one line.
    """
    if metric not in SEQUENTIAL_METRICS:
        raise ValueError(f"a sequential design decides on {', '.join(SEQUENTIAL_METRICS)}; not {metric}")
    if len(study_agents(manifest)) > 1:
        raise ValueError("a sequential design runs one agent; this study lists several")
    ids = [task.id for task in manifest.tasks]
    design_block = getattr(manifest, "design", None)
    settings = design_block.sequential if design_block is not None else None
    if settings is not None:
        design = settings.design()
        seed = settings.seed if settings.seed is not None else seed_from_hash(protocol_hash)
    else:
        design = new_design(len(ids), DEFAULT_ALPHA, DEFAULT_FUTILITY)
        seed = seed_from_hash(protocol_hash)
    return SequentialPlan(design, metric, better_when, seed, task_order(ids, seed, design.max_tasks),
                          manifest.repetitions, tuple(ids))


def _value(observation: Mapping[str, Any], metric: str) -> float | None:
    if observation.get("status") != "completed":
        return None
    if SEQUENTIAL_METRICS[metric] and observation.get("usageComplete") is False:
        return None
    value = observation.get(metric)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class SequentialMonitor:
    """The running evidence of one sequential run (see the module docstring). Feed it with :meth:`observe`."""

    plan: SequentialPlan
    looks: list[Look] = field(default_factory=list)
    differences: list[float | None] = field(default_factory=list)
    stopped_at: str | None = None
    carried: list[CarriedObservation] = field(default_factory=list)
    _arms: dict[str, list[tuple[str, float | None]]] = field(default_factory=dict)

    def carry(self, observations: Iterable[Mapping[str, Any]]) -> None:
        """Count the observations (their JSON) a continuation carries over from its chain, in the chain's order,
        before any of its own: the looks they complete are the chain's looks, recorded again in the new block
        (issue 40)."""
        self.carry_recorded(CarriedObservation(task_id=str(o.get("taskId")), scenario=str(o.get("scenario")),
                                               value=_value(o, self.plan.metric)) for o in observations)

    def carry_recorded(self, entries: Iterable[CarriedObservation]) -> None:
        """:meth:`carry` from a block's ``carried`` entries (the verifier's replay)."""
        for entry in entries:
            self.carried.append(entry)
            self.observe({"taskId": entry.task_id, "scenario": entry.scenario, "status": "completed",
                          self.plan.metric: entry.value})

    @property
    def stopped(self) -> bool:
        """Whether a look has stopped the study (nothing more may be admitted)."""
        return bool(self.looks) and self.looks[-1].decision != "continue"

    def observe(self, observation: Mapping[str, Any], now: str | None = None) -> Look | None:
        """Count one recorded observation (its JSON: ``taskId``, ``scenario``, ``status``, the metric); when it
        completes its task (every repetition of both arms) and no look has stopped yet, take the next look and
        return it (``now``, ISO 8601, is kept as ``stoppedAt`` when it stops). Otherwise ``None``."""
        task = str(observation.get("taskId"))
        arms = self._arms.setdefault(task, [])
        arms.append((str(observation.get("scenario")), _value(observation, self.plan.metric)))
        if len(arms) != 2 * self.plan.repetitions or self.stopped or len(self.looks) >= self.plan.design.max_tasks:
            return None
        self.differences.append(_difference(arms))
        look = looks(self.differences, self.plan.design, self.plan.better_when)[-1]
        self.looks.append(look)
        if self.stopped:
            self.stopped_at = now
        return look

    def record(self) -> SequentialRecord:
        """The ledger's ``sequential`` block for the looks so far."""
        reason = self.looks[-1].decision if self.stopped else None
        design = self.plan.design
        return SequentialRecord(
            looks=[LookRecord(tasks=look.tasks, e_value=look.e_value, decision=look.decision) for look in self.looks],
            stopped_early=reason in ("efficacy", "futility") and len(self.looks) < design.max_tasks,
            stop_reason=None if reason == "continue" else reason,
            tasks_completed=len(self.looks), max_tasks=design.max_tasks, alpha=design.alpha,
            futility=design.futility, metric=self.plan.metric, better_when=self.plan.better_when,
            seed=self.plan.seed, task_order=list(self.plan.task_order), stopped_at=self.stopped_at,
            direction=self.looks[-1].direction if reason == "efficacy" else None,
            task_pool=None if self.plan.task_pool is None else list(self.plan.task_pool),
            **_construction_fields(design), carried=list(self.carried) or None)


def _construction_fields(design: SequentialDesign) -> dict[str, Any]:
    """The block's ``construction``, ``sidedness`` and ``betSize``: absent for the legacy construction (older
    ledgers); ``betSize`` only with ``magnitudeBet``."""
    if design.construction == LEGACY_CONSTRUCTION:
        return {}
    return {"construction": design.construction, "sidedness": SIDEDNESS[design.construction],
            "bet_size": design.bet_size}


def _difference(arms: list[tuple[str, float | None]]) -> float | None:
    control = [v for scenario, v in arms if scenario == REPOSITORY_ONLY and v is not None]
    treatment = [v for scenario, v in arms if scenario == DOC_BRIDGE_MCP and v is not None]
    if not control or not treatment:
        return None
    return sum(treatment) / len(treatment) - sum(control) / len(control)


def plan_from_record(record: SequentialRecord, repetitions: int) -> SequentialPlan:
    """The plan ``record`` was written under: its design (with its construction, the legacy one when the block
    names none, and its recorded ``betSize``, never recomputed), metric, seed, task order and pool, with
    ``repetitions`` per arm.

    Raises:
        ValueError: the record's design is invalid (as :class:`SequentialDesign`: e.g. ``magnitudeBet`` without
            ``betSize``, or a ``betSize`` with another construction) or its metric is not one a sequential run
            decides on.
    """
    design = SequentialDesign(max_tasks=record.max_tasks, alpha=record.alpha, futility=record.futility,
                              construction=record.construction or LEGACY_CONSTRUCTION, bet_size=record.bet_size)
    if record.metric not in SEQUENTIAL_METRICS:
        raise ValueError(f"sequential.metric {record.metric!r} is not one a sequential run decides on")
    return SequentialPlan(design, record.metric, record.better_when, record.seed, tuple(record.task_order),
                          repetitions, None if record.task_pool is None else tuple(record.task_pool))


def replay(record: SequentialRecord, repetitions: int, observations: Iterable[Mapping[str, Any]]) -> SequentialMonitor:
    """The monitor a run with ``record``'s plan would hold after carrying ``record.carried`` (a continuation's)
    and recording ``observations`` in order.

    Raises:
        ValueError: as :func:`plan_from_record`.
    """
    monitor = SequentialMonitor(plan_from_record(record, repetitions))
    monitor.carry_recorded(record.carried or [])
    for observation in observations:
        monitor.observe(observation)
    return monitor


__all__ = ["DEFAULT_METRIC", "SEQUENTIAL_METRICS", "SequentialMonitor", "SequentialPlan", "plan_from_record",
           "plan_sequential", "replay", "seed_from_hash", "task_order"]
