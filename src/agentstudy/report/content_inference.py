"""The report's task-level tables (issue 17, items 1 and 2): per metric, per task, variance components.

Each metric row carries its design ("k tasks × r repetitions"), the estimate (mean task
difference), the cluster-bootstrap interval, the sign-flip p (exact, or Monte Carlo with its
standard error), the smallest p the design can reach and the method; the per-task table shows
every task's difference per metric; the variance table the between- and within-task components,
the ICC and which estimator gave them. Everything is labelled exploratory.
"""

from __future__ import annotations

from agentstudy.report import fmt
from agentstudy.report.analysis import Analysis, MetricResult
from agentstudy.report.document import Block, Paragraph, Table
from agentstudy.report.inference import TaskLevelSummary
from agentstudy.report.model import BASELINE, TREATMENT
from agentstudy.report.variance import VarianceComponents


def p_cell(summary: TaskLevelSummary) -> str:
    """The sign-flip p as shown: ``0.031``, ``< 0.001``, ``0.031 ± 0.001 (Monte Carlo)``, or why not."""
    text = fmt.p_value(summary.p_value, summary.p_note)
    if summary.p_value is not None and summary.p_monte_carlo_se is not None:
        text += f" ± {summary.p_monte_carlo_se:.3f} (Monte Carlo)"
    return text


def _p_min_cell(summary: TaskLevelSummary) -> str:
    return fmt.MISSING if summary.p_min is None else f"{summary.p_min:.3g}"


def metric_table(analysis: Analysis) -> Table:
    """One row per metric: unit, design, estimate, 95 % interval, p, smallest attainable p."""
    rows = tuple(
        (r.metric.label, r.metric.unit, r.task_level.design,
         fmt.statistic(r.task_level.estimate, r.metric.kind) if r.task_level.estimate is not None
         else r.task_level.estimate_note or fmt.MISSING,
         fmt.interval(r.task_level.ci_low, r.task_level.ci_high, r.task_level.ci_note, r.metric.kind),
         p_cell(r.task_level), _p_min_cell(r.task_level))
        for r in analysis.results
    )
    return Table("task-level-summary", "Task-level paired differences per metric (exploratory)",
                 ("metric", "unit", "design", "mean task Δ", "95 % CI (cluster bootstrap)",
                  "sign-flip p (exploratory)", "smallest possible p"),
                 rows, frozenset({3, 4}))


def _task_cell(result: MetricResult, task_id: str) -> str:
    for effect in result.task_level.task_effects:
        if effect.task_id == task_id:
            text = fmt.statistic(effect.difference, result.metric.kind)
            if result.task_level.repetitions is None:
                text += f" ({effect.baseline_n}/{effect.treatment_n})"
            return text
    return fmt.MISSING


def task_table(analysis: Analysis) -> Table:
    """One row per task seen in either arm, one column per metric: its difference of arm means (with
    ``(baseline n/treatment n)`` where repetitions differ), ``—`` where the task is left out of that metric."""
    order: list[str] = []
    for attempt in analysis.study.attempts:
        if attempt.scenario in (BASELINE, TREATMENT) and attempt.task_id not in order:
            order.append(attempt.task_id)
    header = ("task", *(f"Δ {r.metric.label}" for r in analysis.results))
    rows = tuple((task_id, *(_task_cell(r, task_id) for r in analysis.results)) for task_id in order)
    return Table("per-task", f"Per task: mean of {TREATMENT} − mean of {BASELINE} over repetitions "
                             "(— : not in both arms for that metric)",
                 header, rows, frozenset(range(1, 1 + len(analysis.results))))


def _component(value: float | None, kind: str) -> str:
    if value is None:
        return fmt.MISSING
    return f"{value:.3g}" if kind != "count" or abs(value) < 1000 else f"{value:,.0f}"


def _variance_row(result: MetricResult) -> tuple[str, ...]:
    components: VarianceComponents | None = result.variance
    if components is None:
        return (result.metric.label, f"({result.metric.unit})²", *(fmt.MISSING,) * 4, "not computed")
    kind = result.metric.kind
    icc = fmt.MISSING if components.icc is None else f"{components.icc:.2f}"
    method = components.method if components.note is None else f"{components.method}; {components.note}"
    return (result.metric.label, f"({result.metric.unit})²", _component(components.between_task, kind),
            _component(components.within_task, kind), icc, _component(components.difference_variance, kind),
            method)


def variance_table(analysis: Analysis) -> Table:
    """One row per metric: between-task and within-task variance, ICC, variance of task differences, method."""
    return Table("variance-components", "Variance components per metric (exploratory)",
                 ("metric", "unit", "between-task variance", "within-task variance", "ICC",
                  "variance of task Δ", "method"),
                 tuple(_variance_row(r) for r in analysis.results), frozenset({2, 3, 4, 5}))


def method_paragraph(analysis: Analysis) -> Paragraph:
    """What the task-level numbers are and how they were computed."""
    return Paragraph(
        f"The task is the unit of analysis: for each task, each arm's mean over its included repetitions, and Δ = "
        f"{TREATMENT} mean − {BASELINE} mean; the estimate is the mean of the task Δs. An attempt's value counts "
        "when it completed with the value recorded (and, for tokens and USD, complete usage); a task counts for a "
        "metric when both arms have at least one such value. The 95 % interval is a percentile cluster bootstrap "
        f"({analysis.resamples} resamples of tasks with replacement, then of repetitions within each task per arm, "
        f"fixed seed {analysis.seed}); the p-value is the two-sided sign-flip permutation test over the task Δs, "
        "exact over all 2^k sign vectors up to 16 tasks, a seeded Monte Carlo (with its standard error) above. "
        "With k tasks no p below 2/2^k is possible. Repetitions are never treated as independent pairs; "
        "correctness uses the per-task proportions the same way. Everything here is exploratory."
    )


def inference_blocks(analysis: Analysis) -> tuple[Block, ...]:
    """The task-level blocks of the paired section, in order: per-metric table, method, per-task table,
    variance components."""
    return (metric_table(analysis), method_paragraph(analysis), task_table(analysis), variance_table(analysis))
