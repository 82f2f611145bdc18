"""The general study file ``agentstudy-study-v1`` (issue 18, deliverable 1). Pure.

A study file fully describes a paired study (one agent or several, issue 21): any number of tasks (≥ 1) over
repositories pinned to 40-hex commits (each used by ≥ 1 task), any number of repetitions
(≥ 1), and two arms with ids and labels, the treatment naming its MCP server, read-only tools
and probe (``protocol.study_arms``). Loading is as strict as the seed manifest's: unknown keys,
wrong types and broken rules are a one-line ``ManifestError`` (``protocol.manifest.parse_manifest``
sniffs ``version`` and calls :class:`StudyFile`). Documented field by field in docs/study-file.md.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentstudy.protocol.analysis import AnalysisPlan
from agentstudy.protocol.study_agents import check_agents
from agentstudy.protocol.study_arms import SCENARIOS, StudyArms
from agentstudy.protocol.study_design import StudyDesign
from agentstudy.protocol.task import Task, check_pins, check_task_ids_and_repositories

STUDY_VERSION = "agentstudy-study-v1"
MAX_TASKS = 1000
MAX_REPETITIONS = 100


class StudyFile(BaseModel):
    """An ``agentstudy-study-v1`` study file (issue 18).

    Rules: ``version`` is ``agentstudy-study-v1``; ``repetitions`` is 1–100; ``repositories``
    maps names to 40 lowercase hex pins; ``tasks`` (1–1000, the seed's :class:`Task`) have
    distinct ids, each naming a declared repository, and every repository has a task;
    ``arms`` are :class:`~agentstudy.protocol.study_arms.StudyArms`; ``agents`` (optional, issue
    21 item 6) lists the coding agents run in both arms, each at most once, from
    ``protocol.study_agents.KNOWN_AGENTS``; absent means the single Claude Code agent. ``analysis``
    (optional, issue 30) is the :class:`~agentstudy.protocol.analysis.AnalysisPlan`; ``design``
    (optional, issue 35) is :class:`~agentstudy.protocol.study_design.StudyDesign` (``maxTasks`` at most the
    tasks, one agent).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    version: str = Field(description=f"Always {STUDY_VERSION!r}.")
    repetitions: int = Field(ge=1, le=MAX_REPETITIONS, description="Repetitions of every task in each arm.")
    repositories: dict[str, str] = Field(min_length=1, description="Repository name -> 40 lowercase hex pin.")
    arms: StudyArms
    tasks: list[Task] = Field(min_length=1, max_length=MAX_TASKS)
    agents: list[str] | None = Field(
        default=None, description="The coding agents the study runs (claude-code, codex); absent: claude-code only.")
    analysis: AnalysisPlan | None = Field(
        default=None, description="Primary endpoint, secondary metrics, alpha, minimumTreatmentUse; absent: defaults.")
    design: StudyDesign | None = Field(
        default=None, description="The pre-declared design; design.sequential runs an anytime-valid sequential study, "
                    "design.order orders the arms (counterbalanced or randomized).")
    rehearsal_faults: str | None = Field(
        default=None, alias="rehearsalFaults", max_length=2000,
        description="A rehearsal's fault schedule (e.g. '1:429,30%:529,seed=7'); --rehearsal-faults replaces it.")

    @model_validator(mode="after")
    def _check_matrix(self) -> StudyFile:
        if self.version != STUDY_VERSION:
            raise ValueError(f"version must be {STUDY_VERSION!r}")
        check_pins(self.repositories)
        check_task_ids_and_repositories(self.tasks, self.repositories)
        if self.agents is not None:
            check_agents(self.agents)
        sequential = self.design.sequential if self.design is not None else None
        if sequential is not None and sequential.max_tasks > len(self.tasks):
            raise ValueError(f"design.sequential.maxTasks {sequential.max_tasks} is more than the "
                             f"study's {len(self.tasks)} tasks")
        if sequential is not None and self.agents is not None and len(self.agents) > 1:
            raise ValueError("design.sequential runs one agent; this study lists several")
        used = {task.repository for task in self.tasks}
        for name in self.repositories:
            if name not in used:
                raise ValueError(f"repository {name!r} has no task")
        return self

    @property
    def scenarios(self) -> list[str]:
        """The ledger scenarios in forward order: ``["repository-only", "doc-bridge-mcp"]`` (control first)."""
        return list(SCENARIOS)

    def task(self, task_id: str) -> Task:
        """Return the task with ``task_id``; raise ``KeyError`` if there is none."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)
