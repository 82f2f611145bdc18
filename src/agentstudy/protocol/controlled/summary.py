"""What ``agentstudy plan``, ``suite`` and ``ledger`` report: JSON-ready descriptions of verified contracts.

Each function takes validated contracts and returns a plain ``dict`` (camelCase keys, JSON
values); the commands print it as JSON or render it as aligned text. Counts keep a stable
order: statuses and adjudication states in their contract order, runs and rounds in order of
first appearance in the ledger.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from agentstudy.protocol.controlled.contracts import LoadedContract
from agentstudy.protocol.controlled.formats import CATEGORIES
from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
from agentstudy.protocol.controlled.observation import (
    ADJUDICATION_STATUSES,
    EXECUTION_STATUSES,
    ControlledStudyObservationV1,
)
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1, PairwiseSampling
from agentstudy.protocol.controlled.selection import TaskExecution, count_by_stratum
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1

UNASSIGNED_ROUND = "unassigned"


def _ordered_counts(values: Iterable[str], order: Sequence[str]) -> dict[str, int]:
    counts = Counter(values)
    known = {key: counts[key] for key in order if counts[key]}
    return known | {key: count for key, count in counts.items() if key not in known}


def describe_plan(plan: LoadedContract[ControlledStudyRunPlanV1],
                  executions: Sequence[TaskExecution] | None = None,
                  suite: LoadedContract[StudyTaskSuiteV1] | None = None) -> dict[str, Any]:
    """Describe a plan: versions, bound hashes, models, scenarios, sampling, budget and, when
    the selected ``executions`` of ``suite`` are given, their count per model×scenario stratum."""
    model = plan.model
    sampling: dict[str, Any] = {"strategy": model.sampling.strategy, "sampleSize": model.sampling.sample_size,
                                "scenarioIds": model.selected_scenario_ids, "strata": model.stratum_count}
    if isinstance(model.sampling, PairwiseSampling):
        sampling["arms"] = list(model.sampling.scenario_ids)
    description: dict[str, Any] = {
        "type": model.contract_type,
        "contentHash": plan.content_hash,
        "verified": plan.verified,
        "runId": model.run_id,
        "planVersion": model.plan_version,
        "protocolVersion": model.protocol_version,
        "docBridgeVersion": model.doc_bridge_version,
        "hashes": {"protocolHash": model.protocol_hash, "taskSuiteHash": model.task_suite_hash,
                   "sourceRevisionHash": model.source_revision_hash, "configurationHash": model.configuration_hash},
        "models": [{"id": item.id, "role": item.role, "provider": item.provider, "model": item.model,
                    "version": item.version, "contextLimit": item.context_limit} for item in model.models],
        "scenarios": [item.to_document() for item in model.scenarios],
        "taskCount": len(model.task_ids),
        "sampling": sampling,
        "budget": model.budget.to_document(),
    }
    if executions is not None and suite is not None:
        strata = count_by_stratum(executions)
        description["selection"] = {
            "taskSuiteHash": suite.content_hash,
            "seed": suite.model.ordering.seed,
            "executions": len(executions),
            "tasks": len({item.task_id for item in executions}),
            "byStratum": [{"modelId": model_id, "scenarioId": scenario_id,
                           "executions": strata[(model_id, scenario_id)]}
                          for model_id in suite.model.model_ids for scenario_id in model.selected_scenario_ids],
            "byVariant": dict(sorted(Counter(item.variant_id for item in executions).items())),
        }
    return description


def describe_suite(suite: LoadedContract[StudyTaskSuiteV1]) -> dict[str, Any]:
    """Describe a task suite: versions, population, models, scenarios, task counts, maxima, planned runs."""
    model = suite.model
    return {
        "type": model.contract_type,
        "contentHash": suite.content_hash,
        "verified": suite.verified,
        "suiteVersion": model.suite_version,
        "protocolVersion": model.protocol_version,
        "title": model.title,
        "population": model.population,
        "modelIds": model.model_ids,
        "scenarioIds": model.scenario_ids,
        "taskCount": len(model.tasks),
        "tasksByCategory": _ordered_counts((task.category for task in model.tasks), CATEGORIES),
        "tasksByDifficulty": _ordered_counts((task.difficulty for task in model.tasks), ("easy", "medium", "hard")),
        "maxTokensPerTask": model.max_tokens_per_task,
        "maxRuntimeMsPerTask": model.max_runtime_ms_per_task,
        "replicatesPerTask": model.replicates_per_task,
        "maxRuns": model.max_runs,
        "plannedRuns": model.planned_runs,
        "ordering": model.ordering.to_document(),
    }


def _group(observations: Sequence[ControlledStudyObservationV1]) -> dict[str, Any]:
    return {
        "observations": len(observations),
        "byStatus": _ordered_counts((item.execution.status for item in observations), EXECUTION_STATUSES),
        "byAdjudication": _ordered_counts((item.adjudication.status for item in observations),
                                          ADJUDICATION_STATUSES),
    }


def summarize_ledger(ledger: LoadedContract[ControlledStudyObservationLedgerV1]) -> dict[str, Any]:
    """Summarise a ledger: totals by execution status, adjudication state and round, one entry
    per run (rounds, plan hashes, counts), the observation time span, and hash mismatches."""
    observations = ledger.model.observations
    runs: dict[str, list[ControlledStudyObservationV1]] = {}
    for observation in observations:
        runs.setdefault(observation.run_id, []).append(observation)
    times = sorted(item.observed_at for item in observations)
    return {
        "type": ledger.model.contract_type,
        "ledgerVersion": ledger.model.ledger_version,
        "contentHash": ledger.content_hash,
        "verified": ledger.verified,
        "mismatches": [item.to_json() for item in ledger.mismatches],
        "observedFrom": times[0] if times else None,
        "observedTo": times[-1] if times else None,
        **_group(observations),
        "byRound": dict(Counter(item.round or UNASSIGNED_ROUND for item in observations)),
        "runs": [{"runId": run_id,
                  "rounds": list(dict.fromkeys(item.round or UNASSIGNED_ROUND for item in items)),
                  "planHashes": list(dict.fromkeys(item.plan_hash for item in items)),
                  **_group(items)} for run_id, items in runs.items()],
    }
