"""Everything ``agentstudy run`` checks before any provider starts (digest 5.8 steps 1–2).

The four inputs are verified contracts (their hashes checked by the caller). Then: the plan
fits the suite (``taskSuiteHash``, model, scenario and task ids) and its sampling selects;
every provider maps a plan model; every repository of the suite's population has a root, and
every configured root is an existing directory; every selected execution has a root, a
provider for its (model, scenario), a command that can be executed from that root, a suite
task, and a request within the provider's ``maxInputBytes``. The result is the list of
planned executions with their requests, built once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.controlled.requests import provider_request, request_bytes
from agentstudy.io.controlled_command import CommandCheckError, check_command
from agentstudy.protocol.controlled.config import ProviderCli, StudyProviderCliConfigV1, StudyRepositoryConfigV1
from agentstudy.protocol.controlled.contracts import LoadedContract
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1
from agentstudy.protocol.controlled.selection import SelectionError, select_for_plan
from agentstudy.protocol.controlled.suite import StudyTask, StudyTaskSuiteV1


class RunInputError(ValueError):
    """The run's inputs do not fit together; nothing was started (one-line message)."""


@dataclass(frozen=True)
class RunInputs:
    """The four verified inputs of a run."""

    plan: LoadedContract[ControlledStudyRunPlanV1]
    suite: LoadedContract[StudyTaskSuiteV1]
    providers: LoadedContract[StudyProviderCliConfigV1]
    repositories: LoadedContract[StudyRepositoryConfigV1]


@dataclass(frozen=True)
class PlannedExecution:
    """One selected execution, ready to run.

    Attributes:
        execution: the task execution document (``taskId`` … ``variantId``, ``difficulty``).
        task: the suite task. provider: its provider mapping. root: the absolute repository root.
        request: the stdin bytes (compact JSON); its length is the attributed ``contextBytes``.
    """

    execution: dict[str, Any]
    task: StudyTask
    provider: ProviderCli
    root: Path
    request: bytes

    @property
    def identity(self) -> tuple[str, str, str, int]:
        """``(taskId, scenarioId, modelId, replicate)``."""
        item = self.execution
        return (item["taskId"], item["scenarioId"], item["modelId"], item["replicate"])


def _roots(inputs: RunInputs) -> dict[str, Path]:
    roots: dict[str, Path] = {}
    for repository in inputs.repositories.model.repositories:
        root = Path(repository.root).expanduser().resolve()
        if not root.is_dir():
            raise RunInputError(f"repository {repository.id!r}: the configured root is not an existing directory")
        roots[repository.id] = root
    missing = [item for item in inputs.suite.model.population if item not in roots]
    if missing:
        raise RunInputError(f"repositories: no root is configured for {', '.join(missing)} of the population")
    return roots


def _check_providers(inputs: RunInputs) -> None:
    plan_models = {model.id for model in inputs.plan.model.models}
    for index, provider in enumerate(inputs.providers.model.providers):
        if provider.model_id not in plan_models:
            raise RunInputError(f"providers[{index}].modelId: {provider.model_id!r} is not a model of the plan")


def prepare_run(inputs: RunInputs, environ: Mapping[str, str]) -> list[PlannedExecution]:
    """Check the inputs against each other and the filesystem; build every selected execution.

    Args:
        inputs: the verified plan, suite, provider config and repository config.
        environ: the environment whose ``PATH`` resolves bare command names.

    Returns:
        The planned executions in selection order.

    Raises:
        RunInputError: naming the first problem; no process has been started.
    """
    try:
        selected = select_for_plan(inputs.plan.model, inputs.suite.model, inputs.suite.content_hash)
    except SelectionError as error:
        raise RunInputError(f"the plan does not fit the suite: {error}") from None
    _check_providers(inputs)
    roots = _roots(inputs)
    task_documents = {document["id"]: document for document in inputs.suite.document["tasks"]}
    checked: set[tuple[str, Path]] = set()
    planned: list[PlannedExecution] = []
    for item in selected:
        task = inputs.suite.model.task(item.task_id)
        where = f"execution {item.task_id}/{item.scenario_id}/{item.model_id}/{item.replicate}"
        root = roots.get(item.repository_id)
        if root is None:
            raise RunInputError(f"{where}: no root is configured for repository {item.repository_id!r}")
        try:
            provider = inputs.providers.model.provider_for(item.model_id, item.scenario_id)
        except KeyError:
            raise RunInputError(f"{where}: no provider serves model {item.model_id!r} in scenario "
                                f"{item.scenario_id!r}") from None
        if (provider.command, root) not in checked:
            try:
                check_command(provider.command, root, environ.get("PATH"))
            except CommandCheckError as error:
                raise RunInputError(f"{where}: {error}") from None
            checked.add((provider.command, root))
        execution = {**item.to_document(), "difficulty": task.difficulty}
        request = request_bytes(provider_request(task_documents[item.task_id], execution))
        if len(request) > provider.max_input_bytes:
            raise RunInputError(f"{where}: the request is {len(request)} bytes, above the provider's "
                                f"maxInputBytes {provider.max_input_bytes}")
        planned.append(PlannedExecution(execution, task, provider, root, request))
    return planned
