"""``StudyTaskSuiteV1``: the content-addressed task suite (``type: study-task-suite``; digest section 5.12).

A suite fixes the tasks of a controlled study: four per repository of the population (one per
category), each with its objective, context, evidence requirements, acceptance checks, budget,
surfaces, rubric and two wording variants, plus the suite-wide maxima and the ordering seed
that makes execution selection deterministic.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from agentstudy.protocol.controlled.formats import (
    CATEGORIES,
    Category,
    ContentHashAlgo,
    ContractModel,
    Difficulty,
    Hash,
    Identifier,
    PositiveInt,
    Reference,
    SafeText,
    SchemaVersion,
    unique,
)

MAX_POPULATION = 32
MAX_TASKS = 128

SafeTextList = Annotated[list[SafeText], Field(min_length=1, max_length=32)]
RubricItems = Annotated[list[SafeText], Field(min_length=1, max_length=32)]


class Surface(ContractModel):
    """Whether a product surface is needed; a surface that is not required says why (``reason``)."""

    required: bool
    reason: SafeText | None = None

    @model_validator(mode="after")
    def _reason_when_not_required(self) -> Surface:
        if not self.required and self.reason is None:
            raise ValueError("reason: a surface that is not required needs a reason")
        return self


class Surfaces(ContractModel):
    """The seven surfaces every task declares: logic, endpoint, database, cli, mcp, ui, docs."""

    logic: Surface
    endpoint: Surface
    database: Surface
    cli: Surface
    mcp: Surface
    ui: Surface
    docs: Surface


class AcceptanceCheck(ContractModel):
    """An acceptance check: ``id``, the ``command`` to run, what is ``expected`` of it."""

    id: Identifier
    command: SafeText
    expected: SafeText


class EvidenceRequirement(ContractModel):
    """Evidence a correct answer cites: ``id``, ``description``, ``source`` (runner/artifact/human/agent)."""

    id: Identifier
    description: SafeText
    source: Literal["runner", "artifact", "human", "agent"]


class Variant(ContractModel):
    """One of a task's two wordings: ``id``, ``label``, ``context``."""

    id: Identifier
    label: SafeText
    context: SafeText


class TaskBudget(ContractModel):
    """A task's own bounds: ``maxTokens`` (tokens) and ``maxRuntimeMs`` (milliseconds), both positive."""

    max_tokens: PositiveInt
    max_runtime_ms: PositiveInt


class Rubric(ContractModel):
    """What each of the five outcomes means for this task: 1–32 safe-text items per outcome.

    v1 items are plain strings; the original's later ``{text, check}`` form is not part of
    the seed and is rejected.
    """

    success: RubricItems
    partial: RubricItems
    incorrect: RubricItems
    incomplete: RubricItems
    blocked: RubricItems


class StudyTask(ContractModel):
    """One task of the suite (digest 5.12 "Task")."""

    id: Identifier
    repository_id: Identifier
    category: Category
    difficulty: Difficulty
    objective: SafeText
    initial_context: SafeTextList
    allowed_tools: SafeTextList
    forbidden_actions: SafeTextList
    expected_outcome: SafeText
    evidence_requirements: Annotated[list[EvidenceRequirement], Field(min_length=1, max_length=16)]
    acceptance_checks: Annotated[list[AcceptanceCheck], Field(min_length=1, max_length=16)]
    budget: TaskBudget
    surfaces: Surfaces
    rubric: Rubric
    variant_group: Identifier
    variants: Annotated[list[Variant], Field(min_length=2, max_length=2)]


class Ordering(ContractModel):
    """How executions are ordered: ``balanced-counter-order`` with a ``seed`` (a reference)."""

    strategy: Literal["balanced-counter-order"]
    seed: Reference


class StudyTaskSuiteV1(ContractModel):
    """A controlled-study task suite (digest 5.12).

    Semantic rules checked on every parse (the original's ``validateStudyTaskSuite``): unique
    population, model, scenario and task ids; each repository of the population has exactly
    four tasks covering discovery, architecture, documentation and implementation; every task
    names a repository of the population, stays within the suite's token and runtime maxima,
    owns its variant group (``variantGroup == id``) and has unique check, evidence and variant
    ids and two distinguishable variant labels; ``tasks × models × scenarios × replicates ≤
    maxRuns``.

    Population (digest section 7 item 27, ARCHITECTURE decision 11): the population is the
    declared repositories, 1 to 32 of them, not a fixed six; "exactly 24 tasks" becomes
    "four per declared repository" (24 for the canonical six). ``modelIds`` has exactly 2
    entries and ``scenarioIds`` exactly 3, as in the original.
    """

    contract_type: ClassVar[str] = "study-task-suite"

    type: Literal["study-task-suite"]
    schema_version: SchemaVersion
    suite_version: Reference
    protocol_version: Reference
    title: SafeText
    population: Annotated[list[Identifier], Field(min_length=1, max_length=MAX_POPULATION)]
    model_ids: Annotated[list[Identifier], Field(min_length=2, max_length=2)]
    scenario_ids: Annotated[list[Identifier], Field(min_length=3, max_length=3)]
    max_tokens_per_task: PositiveInt
    max_runtime_ms_per_task: PositiveInt
    max_runs: PositiveInt
    replicates_per_task: PositiveInt
    ordering: Ordering
    tasks: Annotated[list[StudyTask], Field(max_length=MAX_TASKS)]
    content_hash: Hash
    content_hash_algo: ContentHashAlgo

    @model_validator(mode="after")
    def _validate_suite(self) -> StudyTaskSuiteV1:
        for field, values in (("population", self.population), ("modelIds", self.model_ids),
                              ("scenarioIds", self.scenario_ids), ("tasks", [task.id for task in self.tasks])):
            duplicate = unique(values)
            if duplicate is not None:
                raise ValueError(f"{field}: duplicate id {duplicate!r}")
        expected_tasks = len(CATEGORIES) * len(self.population)
        if len(self.tasks) != expected_tasks:
            raise ValueError(f"tasks: {len(self.population)} repositories need exactly {expected_tasks} tasks "
                             f"(four each), got {len(self.tasks)}")
        for position, task in enumerate(self.tasks):
            self._check_task(position, task)
        per_repository = Counter(task.repository_id for task in self.tasks)
        for repository_id in self.population:
            categories = {task.category for task in self.tasks if task.repository_id == repository_id}
            if per_repository[repository_id] != len(CATEGORIES) or categories != set(CATEGORIES):
                raise ValueError(f"tasks: repository {repository_id!r} needs exactly one task in each of "
                                 f"{', '.join(CATEGORIES)}")
        planned = self.planned_runs
        if planned > self.max_runs:
            raise ValueError(f"maxRuns: {planned} planned runs exceed maxRuns {self.max_runs}")
        return self

    def _check_task(self, position: int, task: StudyTask) -> None:
        where = f"tasks[{position}]"
        if task.repository_id not in self.population:
            raise ValueError(f"{where}.repositoryId: {task.repository_id!r} is not in the population")
        if task.budget.max_tokens > self.max_tokens_per_task:
            raise ValueError(f"{where}.budget.maxTokens: {task.budget.max_tokens} exceeds maxTokensPerTask "
                             f"{self.max_tokens_per_task}")
        if task.budget.max_runtime_ms > self.max_runtime_ms_per_task:
            raise ValueError(f"{where}.budget.maxRuntimeMs: {task.budget.max_runtime_ms} exceeds "
                             f"maxRuntimeMsPerTask {self.max_runtime_ms_per_task}")
        if task.variant_group != task.id:
            raise ValueError(f"{where}.variantGroup: must equal the task id {task.id!r}")
        for field, values in (("acceptanceChecks", [check.id for check in task.acceptance_checks]),
                              ("evidenceRequirements", [item.id for item in task.evidence_requirements]),
                              ("variants", [variant.id for variant in task.variants])):
            duplicate = unique(values)
            if duplicate is not None:
                raise ValueError(f"{where}.{field}: duplicate id {duplicate!r}")
        if task.variants[0].label == task.variants[1].label:
            raise ValueError(f"{where}.variants: the two variant labels must differ")

    @property
    def planned_runs(self) -> int:
        """The full matrix: tasks × models × scenarios × replicates (288 for the canonical suite)."""
        return len(self.tasks) * len(self.model_ids) * len(self.scenario_ids) * self.replicates_per_task

    def task(self, task_id: str) -> StudyTask:
        """The task with ``task_id``. Raises ``KeyError`` when the suite has none."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)
