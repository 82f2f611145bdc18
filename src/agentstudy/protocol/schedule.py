"""Pilot and full schedules of a minimal study (seed 000; digest section 1.4; larger pilots: issue 17).

Counterbalancing: for task index ``t`` and repetition index ``r`` (both 0-based) the
scenarios run in the manifest's forward order when ``t + r`` is even and reversed when it
is odd. The list is task-major, then repetition, then the two scenarios; repetitions in
entries are 1-based.

Several agents (issue 21 item 6): within each task and repetition every agent of the study
(``protocol.study_agents.study_agents``, in the file's order) runs its two scenarios in that same
counterbalanced order, so each agent's entries alone are exactly the single-agent schedule and
its pairs alternate forward and reversed; agents are interleaved per task and repetition, never
run one after the other. A study of one agent has the schedule it always had.

Randomised order (issue 41 item 8): with an :class:`~agentstudy.protocol.arm_order.OrderRule` of ``randomized``
each task and repetition draws its order from the seed (``protocol.arm_order``) instead of the parity rule, and
every entry carries its ``position`` (1 or 2) in its arm pair; the default rule leaves every schedule as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agentstudy.protocol.arm_order import COUNTERBALANCED, OrderRule, reversed_pair
from agentstudy.protocol.manifest import StudyDefinition
from agentstudy.protocol.study_agents import DEFAULT_AGENT, study_agents

Mode = Literal["pilot", "full"]


@dataclass(frozen=True)
class PilotSize:
    """The pilot's first ``tasks`` tasks x ``repetitions`` repetitions (default the 2-attempt pilot, 1 x 1)."""

    tasks: int = 1
    repetitions: int = 1


def pilot_size(manifest: StudyDefinition, tasks: int, repetitions: int) -> PilotSize:
    """A checked :class:`PilotSize`: ``tasks`` in 1..len(manifest.tasks), ``repetitions`` in
    1..manifest.repetitions.

    Raises:
        ValueError: a number out of range (the message names the flag and the range).
    """
    if not 1 <= tasks <= len(manifest.tasks):
        raise ValueError(f"--pilot-tasks must be between 1 and {len(manifest.tasks)}, got {tasks}")
    if not 1 <= repetitions <= manifest.repetitions:
        raise ValueError(f"--pilot-repetitions must be between 1 and {manifest.repetitions}, got {repetitions}")
    return PilotSize(tasks, repetitions)


@dataclass(frozen=True)
class ScheduleEntry:
    """One planned attempt: ``task_id``, ``repository``, ``scenario``, 1-based ``repetition`` and the
    ``agent`` that runs it (``claude-code`` unless the study lists agents; issue 21); ``position`` (1 or 2) is its
    place in its arm pair, set only under randomised order (issue 41), ``None`` otherwise."""

    task_id: str
    repository: str
    scenario: str
    repetition: int
    agent: str = DEFAULT_AGENT
    position: int | None = None


def _pairs(manifest: StudyDefinition, tasks: list[tuple[int, str, str]], repetitions: int,
           rule: OrderRule) -> tuple[ScheduleEntry, ...]:
    """The entries of ``tasks`` (``(position, id, repository)``), task-major, then repetition, then each agent's
    pair in ``rule``'s order."""
    agents = study_agents(manifest)
    forward = tuple(manifest.scenarios)
    entries: list[ScheduleEntry] = []
    for t, task_id, repository in tasks:
        for r in range(repetitions):
            order = tuple(reversed(forward)) if reversed_pair(rule, t, task_id, r + 1) else forward
            randomized = rule.order == "randomized"
            entries.extend(ScheduleEntry(task_id, repository, scenario, r + 1, agent,
                                         index + 1 if randomized else None)
                           for agent in agents for index, scenario in enumerate(order))
    return tuple(entries)


def build_schedule(manifest: StudyDefinition, mode: Mode, pilot: PilotSize = PilotSize(),
                   rule: OrderRule = COUNTERBALANCED) -> tuple[ScheduleEntry, ...]:
    """Build the schedule for ``mode``.

    ``pilot``: the first ``pilot.tasks`` tasks x ``pilot.repetitions`` repetitions, both scenarios,
    ordered as the full schedule (2 entries for the default pilot); the entries are the
    full schedule's first ones of those tasks and repetitions.
    ``full``: every task, ``manifest.repetitions`` repetitions, both scenarios (36 entries
    for the seed manifest; tasks x repetitions x 2 x agents for a study file).
    ``rule``: the arms' order in each pair (counterbalanced unless the study declares ``design.order``).
    """
    tasks = manifest.tasks[: pilot.tasks] if mode == "pilot" else manifest.tasks
    repetitions = pilot.repetitions if mode == "pilot" else manifest.repetitions
    return _pairs(manifest, [(t, task.id, task.repository) for t, task in enumerate(tasks)], repetitions, rule)


def block_schedule(manifest: StudyDefinition, task_order: tuple[str, ...],
                   rule: OrderRule = COUNTERBALANCED) -> tuple[ScheduleEntry, ...]:
    """The sequential design's schedule (issue 35): the tasks of ``task_order`` (ids, the seeded random order
    of ``protocol.sequential_plan``) in that order, each as one complete block — every repetition of both
    arms — ordered within and across blocks exactly as :func:`build_schedule` with ``t`` the block's
    position (counterbalanced: forward order when ``t + r`` is even, reversed when odd; or ``rule``'s draw).
    Evidence accumulates block by block.

    Raises:
        KeyError: an id that is not a task of ``manifest``.
    """
    tasks = [(t, (task := manifest.task(task_id)).id, task.repository) for t, task_id in enumerate(task_order)]
    return _pairs(manifest, tasks, manifest.repetitions, rule)
