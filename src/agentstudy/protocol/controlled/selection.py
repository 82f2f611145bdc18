"""Execution selection (seed 004, "sampling"; digest section 5.4 ``selectTaskExecutions``).

Everything is deterministic from the suite: its task order, model and scenario order,
replicate count, variants and ``ordering.seed``. The order key of an execution is
``sha256_normalized_v1({"seed": seed, **execution})`` compared as hex text.

1. Per task, every (scenario, model, replicate) of the selected scenarios is ordered by its
   key (without ``variantId``) and given ``variants[i % 2]`` in that order, so each variant
   gets half of a task's executions.
2. All executions (now with ``variantId``) are ordered by their key: the canonical matrix
   (288 for the canonical suite), returned when no sample size is given or the sample size
   is the whole matrix.
3. ``pairwise-task-strata``: tasks are ranked by ``{"seed", "taskId"}``; the first
   ``sampleSize / strata`` tasks keep their replicate-0 executions — both models in both
   arms, so task, model, repository and replicate are identical across the arms.
4. ``balanced-task-strata``: execution ``i`` takes task ``i`` in suite order, scenario
   ``scenarioIds[(i // models) % scenarios]`` and model ``modelIds[i % models]``, replicate 0;
   every model×scenario stratum receives ``sampleSize / strata`` executions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.controlled.contracts import ContractError
from agentstudy.protocol.controlled.hashing import sha256_normalized_v1
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1, PairwiseSampling, Sampling
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1


class SelectionError(ContractError):
    """The sample cannot be selected from this suite (size, scenarios, or a plan/suite mismatch)."""


@dataclass(frozen=True, order=True)
class TaskExecution:
    """One planned execution: task, repository, category, scenario, model, replicate (0-based), variant."""

    task_id: str
    repository_id: str
    category: str
    scenario_id: str
    model_id: str
    replicate: int
    variant_id: str

    def to_document(self) -> dict[str, Any]:
        """The original's JSON form (``taskId``, ``repositoryId``, …, ``variantId``), in its key order."""
        return {"taskId": self.task_id, "repositoryId": self.repository_id, "category": self.category,
                "scenarioId": self.scenario_id, "modelId": self.model_id, "replicate": self.replicate,
                "variantId": self.variant_id}

    @property
    def stratum(self) -> tuple[str, str]:
        """``(modelId, scenarioId)``: the stratum this execution fills."""
        return (self.model_id, self.scenario_id)


def _order_key(seed: str, document: dict[str, Any]) -> str:
    return sha256_normalized_v1({"seed": seed, **document})


def canonical_executions(suite: StudyTaskSuiteV1, scenario_ids: Sequence[str]) -> list[TaskExecution]:
    """Steps 1–2: every task × scenario × model × replicate, variants assigned, in key order."""
    seed = suite.ordering.seed
    executions: list[TaskExecution] = []
    for task in suite.tasks:
        cells = [(scenario_id, model_id, replicate) for scenario_id in scenario_ids for model_id in suite.model_ids
                 for replicate in range(suite.replicates_per_task)]
        cells.sort(key=lambda cell: _order_key(seed, {"taskId": task.id, "repositoryId": task.repository_id,
                                                      "category": task.category, "scenarioId": cell[0],
                                                      "modelId": cell[1], "replicate": cell[2]}))
        for index, (scenario_id, model_id, replicate) in enumerate(cells):
            variant = task.variants[index % len(task.variants)].id
            executions.append(TaskExecution(task.id, task.repository_id, task.category, scenario_id, model_id,
                                            replicate, variant))
    executions.sort(key=lambda execution: _order_key(seed, execution.to_document()))
    return executions


def select_task_executions(suite: StudyTaskSuiteV1, sample_size: int | None = None,
                          sampling: Sampling | None = None) -> list[TaskExecution]:
    """Select the executions of a run (digest 5.4), deterministically from the suite.

    ``sampling`` ``None`` means balanced over every suite scenario. ``sample_size`` ``None``
    (or equal to the whole matrix) returns the canonical matrix.

    Raises:
        SelectionError: pairwise scenarios that are not two distinct suite scenarios; a sample
            size that is not a multiple of the strata or exceeds what the strategy can select
            (balanced: the number of tasks; pairwise: tasks × strata).
    """
    pairwise = isinstance(sampling, PairwiseSampling)
    selected: list[str]
    if isinstance(sampling, PairwiseSampling):
        selected = list(sampling.scenario_ids)
        if len(set(selected)) != 2 or any(scenario not in suite.scenario_ids for scenario in selected):
            raise SelectionError(f"sampling.scenarioIds: pairwise sampling needs two distinct suite scenarios, "
                                 f"got {selected}")
    else:
        selected = list(suite.scenario_ids)
    ordered = canonical_executions(suite, selected)
    if sample_size is None or sample_size == len(ordered):
        return ordered
    strata = len(suite.model_ids) * len(selected)
    most = len(suite.tasks) * strata if pairwise else len(suite.tasks)
    if sample_size <= 0 or sample_size > most:
        raise SelectionError(f"sampling.sampleSize: must be between 1 and {most} for "
                             f"{'pairwise' if pairwise else 'balanced'} sampling of {len(suite.tasks)} tasks")
    if sample_size % strata:
        raise SelectionError(f"sampling.sampleSize: {sample_size} is not divisible by the {strata} "
                             f"model×scenario strata")
    seed = suite.ordering.seed
    if pairwise:
        ranked = sorted(suite.tasks, key=lambda task: _order_key(seed, {"taskId": task.id}))
        chosen = {task.id for task in ranked[: sample_size // strata]}
        return [item for item in ordered if item.task_id in chosen and item.replicate == 0][:sample_size]
    by_cell = {(item.task_id, item.scenario_id, item.model_id): item for item in ordered if item.replicate == 0}
    models, scenarios = suite.model_ids, suite.scenario_ids
    return [by_cell[(suite.tasks[index].id, scenarios[(index // len(models)) % len(scenarios)],
                     models[index % len(models)])]
            for index in range(sample_size)]


def check_plan_matches_suite(plan: ControlledStudyRunPlanV1, suite: StudyTaskSuiteV1, suite_hash: str) -> None:
    """The plan was made for this suite (digest 5.8 step 2): ``taskSuiteHash`` equals the suite's
    ``contentHash``; model, scenario and task ids are the same sets.

    Raises:
        SelectionError: naming the first field that differs.
    """
    if plan.task_suite_hash != suite_hash:
        raise SelectionError(f"taskSuiteHash: the plan names suite {plan.task_suite_hash}, the suite is {suite_hash}")
    pairs = (("models", [model.id for model in plan.models], suite.model_ids),
             ("scenarios", [scenario.id for scenario in plan.scenarios], suite.scenario_ids),
             ("taskIds", plan.task_ids, [task.id for task in suite.tasks]))
    for field, ours, theirs in pairs:
        if sorted(ours) != sorted(theirs):
            raise SelectionError(f"{field}: the plan's ids {sorted(ours)} differ from the suite's {sorted(theirs)}")


def select_for_plan(plan: ControlledStudyRunPlanV1, suite: StudyTaskSuiteV1, suite_hash: str) -> list[TaskExecution]:
    """The executions a plan runs: ``check_plan_matches_suite`` then its ``sampling``.

    Raises:
        SelectionError: on a mismatch or an unselectable sample.
    """
    check_plan_matches_suite(plan, suite, suite_hash)
    return select_task_executions(suite, plan.sampling.sample_size, plan.sampling)


def count_by_stratum(executions: Sequence[TaskExecution]) -> Counter[tuple[str, str]]:
    """How many executions each ``(modelId, scenarioId)`` stratum holds."""
    return Counter(execution.stratum for execution in executions)
