"""Pilot and full schedules of a minimal study (seed 000; digest section 1.4; larger pilots: issue 17).

Counterbalancing: for task index ``t`` and repetition index ``r`` (both 0-based) the
scenarios run in the manifest's forward order when ``t + r`` is even and reversed when it
is odd. The list is task-major, then repetition, then the two scenarios; repetitions in
entries are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agentstudy.protocol.manifest import StudyDefinition

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
    """One planned attempt: ``task_id``, ``repository``, ``scenario``, 1-based ``repetition``."""

    task_id: str
    repository: str
    scenario: str
    repetition: int


def build_schedule(manifest: StudyDefinition, mode: Mode, pilot: PilotSize = PilotSize()) -> tuple[ScheduleEntry, ...]:
    """Build the schedule for ``mode``.

    ``pilot``: the first ``pilot.tasks`` tasks x ``pilot.repetitions`` repetitions, both scenarios,
    counterbalanced as the full schedule (2 entries for the default pilot); the entries are the
    full schedule's first ones of those tasks and repetitions.
    ``full``: every task, ``manifest.repetitions`` repetitions, both scenarios (36 entries
    for the seed manifest; tasks x repetitions x 2 for a study file).
    """
    tasks = manifest.tasks[: pilot.tasks] if mode == "pilot" else manifest.tasks
    repetitions = pilot.repetitions if mode == "pilot" else manifest.repetitions
    entries: list[ScheduleEntry] = []
    for t, task in enumerate(tasks):
        for r in range(repetitions):
            order = manifest.scenarios if (t + r) % 2 == 0 else tuple(reversed(manifest.scenarios))
            entries.extend(ScheduleEntry(task.id, task.repository, scenario, r + 1) for scenario in order)
    return tuple(entries)
