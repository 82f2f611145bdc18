"""``ControlledStudyRunPlanV1``: the content-addressed run plan (seed 004; digest section 5.3).

A plan binds a task suite (by hash) to a source revision, protocol, configuration, Doc
Bridge version, two pinned models, the three scenarios, a sampling policy and a budget.
A plan that parses is not yet a baseline: it is only well formed and self-consistent.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from agentstudy.protocol.controlled.formats import (
    ContentHashAlgo,
    ContractModel,
    Hash,
    Identifier,
    ModelReference,
    PositiveInt,
    Reference,
    ScenarioId,
    SchemaVersion,
    integral,
    unique,
)

MODEL_COUNT = 2
SCENARIO_COUNT = 3
TASKS_PER_REPOSITORY = 4
MAX_TASKS = 128
MAX_ATTEMPTS = 3


def _strict_false(value: Any) -> Any:
    if value is not False:
        raise ValueError("network must be false")
    return value


class ModelConfig(ContractModel):
    """One pinned model of a plan (digest 5.3 ``ModelConfig``); ``contextLimit`` is in tokens."""

    id: Identifier
    role: Literal["low-cost", "reference"]
    provider: Identifier
    model: ModelReference
    version: Reference
    parameters_hash: Hash
    context_limit: PositiveInt
    tool_configuration_hash: Hash
    prompt_contract_hash: Hash


class ScenarioConfig(ContractModel):
    """One scenario of a plan (digest 5.3 ``ScenarioConfig``).

    ``agentId`` and ``agentVersion`` are required for ``registry-assisted`` and forbidden for
    the other two; ``network`` must be ``false``.
    """

    id: ScenarioId
    agent_id: Identifier | None = None
    agent_version: Reference | None = None
    network: Annotated[Literal[False], BeforeValidator(_strict_false)]

    @model_validator(mode="after")
    def _agent_only_when_assisted(self) -> ScenarioConfig:
        has_agent = self.agent_id is not None or self.agent_version is not None
        if self.id == "registry-assisted" and (self.agent_id is None or self.agent_version is None):
            raise ValueError("agentId, agentVersion: a registry-assisted scenario declares its agent and version")
        if self.id != "registry-assisted" and has_agent:
            raise ValueError(f"agentId: only a registry-assisted scenario may declare an agent, not {self.id!r}")
        return self


class BalancedSampling(ContractModel):
    """``balanced-task-strata`` (the default): one execution per task, strata filled in turn."""

    strategy: Literal["balanced-task-strata"]
    sample_size: PositiveInt


def _distinct_pair(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise ValueError("the two pairwise scenarios must differ")
    return value


class PairwiseSampling(ContractModel):
    """``pairwise-task-strata``: exactly two distinct declared scenarios compared as A/B arms.

    Duplicate scenario ids (``[x, x]``) are rejected (ARCHITECTURE decision 11; the original
    accepted them).
    """

    strategy: Literal["pairwise-task-strata"]
    sample_size: PositiveInt
    scenario_ids: Annotated[list[ScenarioId], Field(min_length=2, max_length=2), AfterValidator(_distinct_pair)]


Sampling = Annotated[BalancedSampling | PairwiseSampling, Field(discriminator="strategy")]


class RunBudget(ContractModel):
    """Per-attempt bounds: ``maxTokens`` (input + output tokens), ``maxRuntimeMs``, ``maxOutputBytes``
    (stdout bytes), all positive; ``maxAttempts`` 1–3 (the explicit retry limit)."""

    max_tokens: PositiveInt
    max_runtime_ms: PositiveInt
    max_output_bytes: PositiveInt
    max_attempts: Annotated[int, Field(ge=1, le=MAX_ATTEMPTS), BeforeValidator(integral)]


class ControlledStudyRunPlanV1(ContractModel):
    """A controlled-study run plan (``type: controlled-study-run-plan``, digest 5.3).

    Semantic rules checked on every parse (the original's ``validatePlan``): model, scenario
    and task ids unique; one ``low-cost`` and one ``reference`` model; the three distinct
    scenarios; pairwise ``scenarioIds`` declared in ``scenarios`` and distinct; the strata
    are ``2 models × selected scenarios`` (6 balanced, 4 pairwise) and ``sampleSize`` is a
    multiple of them.

    Where the original contradicts itself (digest section 7, items 26, 27, 34), this model
    decides (ARCHITECTURE decision 11):

    - The population is the declared repositories, not a fixed six: ``taskIds`` holds four
      tasks per repository, so any multiple of 4 from 4 to 128 (the original: exactly 24).
    - Bounds on ``sampleSize`` are what selection can actually return, so a plan that parses
      can be selected: balanced sampling takes one execution per task, so at most
      ``len(taskIds)``; pairwise takes every model and both arms of a task, so at most
      ``len(taskIds) × 4``. The original accepted up to ``len(taskIds) × strata`` and then
      failed during selection beyond 24. The documented 288-execution plan (every task ×
      scenario × model × replicate) is therefore refused, as the original's own validation
      refuses it (288 > 144); the canonical 288 matrix is ``select_task_executions(suite)``
      without a sample size, not a plan.
    """

    contract_type: ClassVar[str] = "controlled-study-run-plan"

    type: Literal["controlled-study-run-plan"]
    schema_version: SchemaVersion
    plan_version: Reference
    protocol_version: Reference
    protocol_hash: Hash
    task_suite_hash: Hash
    source_revision_hash: Hash
    configuration_hash: Hash
    doc_bridge_version: Reference
    models: Annotated[list[ModelConfig], Field(min_length=MODEL_COUNT, max_length=MODEL_COUNT)]
    scenarios: Annotated[list[ScenarioConfig], Field(min_length=SCENARIO_COUNT, max_length=SCENARIO_COUNT)]
    task_ids: Annotated[list[Identifier], Field(min_length=TASKS_PER_REPOSITORY, max_length=MAX_TASKS)]
    sampling: Sampling
    budget: RunBudget
    run_id: Reference
    content_hash: Hash
    content_hash_algo: ContentHashAlgo

    @model_validator(mode="after")
    def _validate_plan(self) -> ControlledStudyRunPlanV1:
        duplicate = unique([model.id for model in self.models])
        if duplicate is not None:
            raise ValueError(f"models: duplicate model id {duplicate!r}")
        if {model.role for model in self.models} != {"low-cost", "reference"}:
            raise ValueError("models: one low-cost and one reference model are required")
        duplicate = unique([scenario.id for scenario in self.scenarios])
        if duplicate is not None:
            raise ValueError(f"scenarios: duplicate scenario id {duplicate!r}")
        duplicate = unique(self.task_ids)
        if duplicate is not None:
            raise ValueError(f"taskIds: duplicate task id {duplicate!r}")
        if len(self.task_ids) % TASKS_PER_REPOSITORY:
            raise ValueError(f"taskIds: {len(self.task_ids)} tasks is not four tasks per repository")
        declared = [scenario.id for scenario in self.scenarios]
        for scenario_id in self.selected_scenario_ids:
            if scenario_id not in declared:
                raise ValueError(f"sampling.scenarioIds: {scenario_id!r} is not a declared scenario")
        size, strata = self.sampling.sample_size, self.stratum_count
        if size % strata:
            raise ValueError(f"sampling.sampleSize: {size} is not a multiple of the {strata} model×scenario strata")
        if size > self.max_sample_size:
            raise ValueError(f"sampling.sampleSize: {size} exceeds {self.max_sample_size}, the most "
                             f"{self.sampling.strategy} can select from {len(self.task_ids)} tasks")
        return self

    @property
    def selected_scenario_ids(self) -> list[str]:
        """The scenarios sampled: the pairwise arms, or every declared scenario in plan order."""
        if isinstance(self.sampling, PairwiseSampling):
            return list(self.sampling.scenario_ids)
        return [scenario.id for scenario in self.scenarios]

    @property
    def stratum_count(self) -> int:
        """Number of model×scenario strata: 2 × 3 = 6 (balanced) or 2 × 2 = 4 (pairwise)."""
        return len(self.models) * len(self.selected_scenario_ids)

    @property
    def max_sample_size(self) -> int:
        """The largest selectable ``sampleSize``: tasks (balanced) or tasks × strata (pairwise)."""
        if isinstance(self.sampling, PairwiseSampling):
            return len(self.task_ids) * self.stratum_count
        return len(self.task_ids)

    def model_config_for(self, model_id: str) -> ModelConfig:
        """The model with ``model_id``. Raises ``KeyError`` when the plan has none."""
        for model in self.models:
            if model.id == model_id:
                return model
        raise KeyError(model_id)

    def scenario_config_for(self, scenario_id: str) -> ScenarioConfig:
        """The scenario with ``scenario_id``. Raises ``KeyError`` when the plan has none."""
        for scenario in self.scenarios:
            if scenario.id == scenario_id:
                return scenario
        raise KeyError(scenario_id)
