"""Which tasks each scenario ran, and the task-level paired analysis where a selection pairs them (issue 17
items 1 and 6). Pure.

Balanced selection (``balanced-task-strata``) runs each task in one scenario only: scenarios then
ran *different tasks*, so any comparison between them is unpaired and confounded by task;
:func:`coverage_warning` says so. Where tasks ran in both a baseline scenario (``repository-only``
when present) and another, per model, :func:`paired_rows` gives the task-level analysis of
``report.inference.task_level_summary``: per task each scenario's mean over its observations,
the mean task difference (other − baseline), the exact sign-flip p and the 95 % interval of
that test inverted, with the design "k tasks × r repetitions". Metrics: tokens (input + output),
tool calls, duration (ms), adjudicated success (1 success, 0 otherwise, judged observations
only) and agent cost (USD, as float: a statistic, not money).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1
from agentstudy.report import fmt
from agentstudy.report.content_inference import p_cell
from agentstudy.report.inference import TaskLevelSummary, task_level_summary

Obs = ControlledStudyObservationV1
BASELINE_SCENARIO = "repository-only"


def _tokens(item: Obs) -> float | None:
    execution = item.execution
    if execution.input_tokens is None or execution.output_tokens is None:
        return None
    return float(execution.input_tokens + execution.output_tokens)


def _tool_calls(item: Obs) -> float | None:
    return None if item.execution.tool_calls is None else float(item.execution.tool_calls)


def _duration(item: Obs) -> float | None:
    return float(item.execution.duration_ms)


def _adjudicated_success(item: Obs) -> float | None:
    outcome = item.adjudication.outcome
    return None if outcome is None else 1.0 if outcome == "success" else 0.0


def _agent_cost(item: Obs) -> float | None:
    value = (item.measurements or {}).get("agentCostUsd")
    return None if value is None else float(value)


@dataclass(frozen=True)
class PairedMetric:
    """A metric of the paired analysis: ``label``, ``unit``, ``kind`` (``report.fmt``) and its value per observation."""

    label: str
    unit: str
    kind: str
    value: Callable[[Obs], float | None]


PAIRED_METRICS = (
    PairedMetric("adjudicated success", "share", "score", _adjudicated_success),
    PairedMetric("tokens (input + output)", "tokens", "count", _tokens),
    PairedMetric("tool calls", "calls", "count", _tool_calls),
    PairedMetric("duration", "ms", "count", _duration),
    PairedMetric("agent cost", "USD", "usd", _agent_cost),
)


def tasks_by_scenario(observations: Sequence[Obs]) -> dict[str, set[str]]:
    """Scenario id -> the task ids it ran (over every model)."""
    tasks: dict[str, set[str]] = {}
    for item in observations:
        tasks.setdefault(item.scenario.id, set()).add(item.task.task_id)
    return tasks


def different_tasks(observations: Sequence[Obs]) -> bool:
    """Whether scenarios ran different tasks, overall or within one model (the comparison is then unpaired)."""
    models = sorted({item.model.id for item in observations})
    for scope in (list(observations), *([i for i in observations if i.model.id == m] for m in models)):
        sets = list(tasks_by_scenario(scope).values())
        if len(sets) > 1 and any(other != sets[0] for other in sets[1:]):
            return True
    return False


def coverage_warning(observations: Sequence[Obs]) -> str | None:
    """The warning for scenarios that ran different tasks, or ``None`` when every scenario ran the same tasks."""
    if not different_tasks(observations):
        return None
    return ("WARNING: the scenarios ran different tasks (balanced selection runs each task in one scenario), so "
            "every comparison between scenarios in this report is unpaired and confounded by task: a difference "
            "may be the tasks', not the scenario's. Read scenario rows as descriptions, not effects; a "
            "pairwise-task-strata plan runs each task in both scenarios and allows a paired analysis.")


def baseline_of(observations: Sequence[Obs]) -> str | None:
    """The baseline scenario: ``repository-only`` when present, else the first in sorted order."""
    scenarios = sorted({item.scenario.id for item in observations})
    if not scenarios:
        return None
    return BASELINE_SCENARIO if BASELINE_SCENARIO in scenarios else scenarios[0]


@dataclass(frozen=True)
class PairedRow:
    """One task-level result: the ``model``, ``treatment`` against ``baseline``, the metric and its summary."""

    model: str
    baseline: str
    treatment: str
    metric: PairedMetric
    summary: TaskLevelSummary


def _values(items: Sequence[Obs], baseline: str, treatment: str,
            metric: PairedMetric) -> dict[str, tuple[list[float], list[float]]]:
    values: dict[str, tuple[list[float], list[float]]] = {}
    for item in items:
        if item.scenario.id not in (baseline, treatment):
            continue
        value = metric.value(item)
        if value is None:
            continue
        arms = values.setdefault(item.task.task_id, ([], []))
        arms[0 if item.scenario.id == baseline else 1].append(value)
    return {task: arms for task, arms in values.items() if arms[0] and arms[1]}


def paired_rows(observations: Sequence[Obs]) -> tuple[PairedRow, ...]:
    """The task-level analysis per model and non-baseline scenario, for every metric with at least one task run in
    both scenarios (none under balanced selection)."""
    baseline = baseline_of(observations)
    rows: list[PairedRow] = []
    for model in sorted({item.model.id for item in observations}):
        items = [item for item in observations if item.model.id == model]
        for treatment in sorted({item.scenario.id for item in items} - {baseline}):
            for metric in PAIRED_METRICS:
                values = _values(items, str(baseline), treatment, metric)
                if values:
                    rows.append(PairedRow(model, str(baseline), treatment, metric, task_level_summary(values)))
    return tuple(rows)


def paired_cells(row: PairedRow) -> tuple[str, ...]:
    """The table cells of a row: model, comparison, metric (unit), design, estimate, 95 % interval, p."""
    summary, kind = row.summary, row.metric.kind
    estimate = (fmt.statistic(summary.estimate, kind) if summary.estimate is not None
                else summary.estimate_note or fmt.MISSING)
    return (row.model, f"{row.treatment} − {row.baseline}", f"{row.metric.label} ({row.metric.unit})", summary.design,
            estimate, fmt.interval(summary.ci_low, summary.ci_high, summary.ci_note, kind), p_cell(summary))
