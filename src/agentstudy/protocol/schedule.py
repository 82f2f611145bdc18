"""Pilot and full schedules of a minimal study (seed 000; digest section 1.4).

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
class ScheduleEntry:
    """One planned attempt: ``task_id``, ``repository``, ``scenario``, 1-based ``repetition``."""

    task_id: str
    repository: str
    scenario: str
    repetition: int


def build_schedule(manifest: StudyDefinition, mode: Mode) -> tuple[ScheduleEntry, ...]:
    """Build the schedule for ``mode``.

    ``pilot``: the first task, one repetition, both scenarios (2 entries).
    ``full``: every task, ``manifest.repetitions`` repetitions, both scenarios (36 entries
    for the seed manifest; tasks x repetitions x 2 for a study file).
    """
    tasks = manifest.tasks[:1] if mode == "pilot" else manifest.tasks
    repetitions = 1 if mode == "pilot" else manifest.repetitions
    entries: list[ScheduleEntry] = []
    for t, task in enumerate(tasks):
        for r in range(repetitions):
            order = manifest.scenarios if (t + r) % 2 == 0 else tuple(reversed(manifest.scenarios))
            entries.extend(ScheduleEntry(task.id, task.repository, scenario, r + 1) for scenario in order)
    return tuple(entries)
