"""The deterministic rubric the runner applies to every observation (digest 5.10 "Deterministic"). Pure.

``evaluate_study_task`` is the original's ``evaluateStudyTask``: blocked → ``blocked``;
incorrect → ``incorrect``; every acceptance check passed and every required evidence id cited →
``success``; nothing passed and nothing cited → ``incomplete``; anything else → ``partial``.

``deterministic_adjudication`` decides ``blocked`` from the execution alone: the attempt did
not complete, ``acceptanceChecksPassed`` is missing, ``acceptanceChecksTotal`` differs from the
task's number of checks, or ``acceptanceChecksExecuted`` is missing or below that number (the
later rule, digest section 7 item 29). Evidence counts exact id matches only. The provider's
own ``taskOutcome`` is never read: a provider never approves itself.
"""

from __future__ import annotations

from typing import Any

from agentstudy.protocol.controlled.formats import TaskOutcome
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1
from agentstudy.protocol.controlled.suite import StudyTask

RUBRIC_ACTOR = "deterministic-rubric-v1"
RUBRIC_METHOD = "deterministic-rubric-v1"
RUBRIC_REASON = ("Deterministic rubric: execution status, the reported acceptance-check counts and exact "
                 "coverage of the required evidence ids; the provider's own outcome is not read.")


def evaluate_study_task(task: StudyTask, *, acceptance_checks_passed: float, evidence_items_present: int,
                        blocked: bool = False, incorrect: bool = False) -> TaskOutcome:
    """The outcome of one task attempt from counts (``evaluateStudyTask``).

    Args:
        task: the suite task (its number of acceptance checks and evidence requirements).
        acceptance_checks_passed: checks reported passed (a measurement, so a number).
        evidence_items_present: required evidence ids cited.
        blocked: the attempt cannot be judged (see the module docstring).
        incorrect: the answer is known to be wrong.
    """
    if blocked:
        return "blocked"
    if incorrect:
        return "incorrect"
    if (acceptance_checks_passed == len(task.acceptance_checks)
            and evidence_items_present == len(task.evidence_requirements)):
        return "success"
    if acceptance_checks_passed == 0 and evidence_items_present == 0:
        return "incomplete"
    return "partial"


def rubric_outcome(task: StudyTask, observation: ControlledStudyObservationV1) -> TaskOutcome:
    """The deterministic outcome of ``observation`` for ``task`` (see the module docstring)."""
    measurements = observation.measurements or {}
    passed = measurements.get("acceptanceChecksPassed")
    total = measurements.get("acceptanceChecksTotal")
    executed = measurements.get("acceptanceChecksExecuted")
    checks = len(task.acceptance_checks)
    blocked = (observation.execution.status != "completed" or passed is None or total != checks
               or executed is None or executed < checks)
    cited = set(observation.evidence_ids)
    present = sum(1 for requirement in task.evidence_requirements if requirement.id in cited)
    return evaluate_study_task(task, acceptance_checks_passed=passed or 0, evidence_items_present=present,
                               blocked=blocked)


def deterministic_adjudication(task: StudyTask, observation: ControlledStudyObservationV1) -> dict[str, Any]:
    """The ``adjudication`` object the runner records: ``automated`` by ``deterministic-rubric-v1``."""
    return {"status": "automated", "actor": RUBRIC_ACTOR, "method": RUBRIC_METHOD,
            "outcome": rubric_outcome(task, observation), "reason": RUBRIC_REASON}
