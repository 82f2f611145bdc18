"""The report's task-level tables (issues 17 and 30): the primary endpoint first, then per metric, per task,
correctness rates and variance components.

The primary endpoint's sentence says which metric answers the study's question, in which direction,
at which alpha, and whether the study file declared it or the defaults apply. Each metric row
carries its role (primary, secondary with its Holm-adjusted p, or exploratory), design, estimate
(mean task difference), the test-inverted interval, the sign-flip p (exact, or Monte Carlo with its
standard error), the smallest p the data can attain and, for tokens, time and money, the ratio of
arm means in words. Correctness is intention to treat, with the complete-case view beside it and
per-arm rates with Clopper–Pearson intervals. The variance table names between-task, task × arm and
within-task (per arm) components and the ICC built from them.
"""

from __future__ import annotations

from functools import partial

from agentstudy.report import fmt
from agentstudy.report.analysis import CORRECTNESS, Analysis, MetricResult
from agentstudy.report.clusters import repository_rows
from agentstudy.report.document import Block, Paragraph, Table
from agentstudy.report.inference import TaskEffect, TaskLevelSummary
from agentstudy.report.inference_endpoints import PRIMARY, SECONDARY
from agentstudy.report.inference_rates import ArmRate
from agentstudy.report.inference_ratio import ratio_words
from agentstudy.report.methods import NULL_IN_WORDS, test_name
from agentstudy.report.model import BASELINE, TREATMENT
from agentstudy.report.sequential import OPTIONALLY_STOPPED, stopped_answer
from agentstudy.report.variance import VarianceComponents

_ROLE_ORDER = {PRIMARY: 0, SECONDARY: 1}
_LESS = {"wallTimeMs": ("less", "more"), "chargedUsd": ("less", "more"), "repricedUsd": ("less", "more")}


def level(analysis: Analysis) -> str:
    """The interval's confidence level in percent as shown (``"95"`` at alpha 0.05)."""
    return f"{100 * (1 - analysis.alpha):g}"


def p_cell(summary: TaskLevelSummary) -> str:
    """The sign-flip p as shown: ``0.031``, ``< 0.001``, ``0.031 ± 0.001 (Monte Carlo)``, or why not."""
    text = fmt.p_value(summary.p_value, summary.p_note)
    if summary.p_value is not None and summary.p_monte_carlo_se is not None:
        text += f" ± {summary.p_monte_carlo_se:.3f} (Monte Carlo)"
    return text


def _p_min_cell(summary: TaskLevelSummary) -> str:
    return fmt.MISSING if summary.p_min is None else f"{summary.p_min:.3g}"


def ordered(analysis: Analysis) -> tuple[MetricResult, ...]:
    """The results primary first, then the secondary metrics, then any exploratory ones (each in report order)."""
    return tuple(sorted(analysis.results, key=lambda r: _ROLE_ORDER.get(r.role, 2)))


def ratio_cell(result: MetricResult) -> str:
    """The ratio of arm means in words, or ``—`` for a metric without one."""
    if result.ratio is None:
        return fmt.MISSING
    fewer, more = _LESS.get(result.metric.key, ("fewer", "more"))
    return ratio_words(result.ratio, result.metric.label, fewer=fewer, more=more)


def _adjusted_cell(result: MetricResult) -> str:
    if result.role == PRIMARY:
        return "— (primary: not adjusted)"
    return fmt.p_value(result.p_adjusted, None) if result.p_adjusted is not None else fmt.MISSING


def _row(label: str, role: str, result: MetricResult, summary: TaskLevelSummary, adjusted: str) -> tuple[str, ...]:
    kind = result.metric.kind
    return (label, role, result.metric.unit, summary.design,
            fmt.statistic(summary.estimate, kind) if summary.estimate is not None
            else summary.estimate_note or fmt.MISSING,
            fmt.interval(summary.ci_low, summary.ci_high, summary.ci_note, kind),
            p_cell(summary), adjusted, _p_min_cell(summary),
            ratio_cell(result) if summary is result.task_level else fmt.MISSING)


def metric_table(analysis: Analysis) -> Table:
    """One row per metric (primary first): role, unit, design, estimate, interval, p, Holm-adjusted p, smallest
    attainable p, ratio; correctness (intention to treat) is followed by its complete-case row."""
    rows: list[tuple[str, ...]] = []
    for r in ordered(analysis):
        label = f"{r.metric.label} (intention to treat)" if r.metric is CORRECTNESS else r.metric.label
        rows.append(_row(label, r.role, r, r.task_level, _adjusted_cell(r)))
        if r.complete_case is not None:
            rows.append(_row(f"{r.metric.label} (complete case)", "sensitivity", r, r.complete_case,
                             "— (not in the family)"))
    return Table("task-level-summary", "Task-level paired differences per metric",
                 ("metric", "role", "unit", "design", "mean task Δ",
                  f"{level(analysis)} % interval (inverted test of the mean)", "p (test of the mean)",
                  "Holm-adjusted p", "smallest attainable p", "ratio (of arm means over tasks)"),
                 tuple(rows), frozenset({4, 5}))


def primary_paragraph(analysis: Analysis, *, fixed_design: bool = False) -> Paragraph:
    """The primary endpoint: which metric answers the question, direction, alpha, where it was declared, and
    its result (or why it is not reported). After a sequential stop the stopping rule's decision is the result and
    the fixed-design figures are in the appendix; ``fixed_design`` gives the appendix's paragraph: those figures,
    labelled as on an optionally stopped sample (issue 41 item 7)."""
    plan = analysis.plan
    primary = plan.primary
    source = ("declared in the study file" if analysis.plan_declared
              else "the default: the study file declares no analysis section")
    secondary = ("Every other metric is secondary, its p-value Holm-adjusted" if plan.secondary is None
                 else f"Secondary (Holm-adjusted): {', '.join(plan.secondary) or 'none'}")
    head = (f"Primary endpoint: {primary.metric} ({primary.better_when} is better; alpha {plan.alpha:g}; {source}). "
            f"{secondary}")
    result = next((r for r in analysis.results if r.metric.key == primary.metric), None)
    if result is None:
        why = "the ledger is not adjudicated" if primary.metric == CORRECTNESS.key else "the report has no such metric"
        return Paragraph(f"{head}. The primary endpoint is not reported ({why}), so this report does not answer "
                         "the study's question.")
    summary = result.task_level
    if summary.p_value is None or summary.estimate is None:
        return Paragraph(f"{head}. Primary result: not testable ({summary.p_note or summary.estimate_note}).")
    better = (summary.estimate > 0) == (primary.better_when == "higher")
    verdict = (f"p {fmt.p_value(summary.p_value, None)} < {plan.alpha:g}: the treatment is "
               f"{'better' if better else 'worse'} on the primary endpoint"
               if summary.p_value < plan.alpha else
               f"p {fmt.p_value(summary.p_value, None)} ≥ {plan.alpha:g}: no difference shown on the primary endpoint")
    interval = fmt.interval(summary.ci_low, summary.ci_high, summary.ci_note, result.metric.kind)
    answer = stopped_answer(analysis.study, primary.metric)
    if answer is not None and fixed_design:
        return Paragraph(f"Fixed-design figures of the primary endpoint, {primary.metric} ({OPTIONALLY_STOPPED}): "
                         f"{fmt.statistic(summary.estimate, result.metric.kind)} per task {interval} "
                         f"({summary.design}), p {fmt.p_value(summary.p_value, None)}.")
    if answer is not None:  # issue 41 item 7: after a sequential stop the stopping rule answers
        return Paragraph(f"{head}. Primary result: {answer[0].upper()}{answer[1:]}; design {summary.design}. The "
                         f"fixed-design p and interval are in the appendix, labelled optionally stopped.")
    return Paragraph(f"{head}. Primary result: {fmt.statistic(summary.estimate, result.metric.kind)} per task "
                     f"{interval} ({summary.design}); {verdict}.")


def _task_cell(result: MetricResult, effect: TaskEffect | None) -> str:
    if effect is None:
        return fmt.MISSING
    text = fmt.statistic(effect.difference, result.metric.kind)
    if result.task_level.repetitions is None:
        text += f" ({effect.baseline_n}/{effect.treatment_n})"
    return text


def task_table(analysis: Analysis) -> Table:
    """One row per task seen in either arm, one column per metric: its difference of arm means (with
    ``(baseline n/treatment n)`` where repetitions differ), ``—`` where the task is left out of that metric.
    Each metric's task effects are looked up by task id (linear in tasks, issue 29)."""
    order = dict.fromkeys(a.task_id for a in analysis.study.attempts if a.scenario in (BASELINE, TREATMENT))
    effects = [{e.task_id: e for e in r.task_level.task_effects} for r in analysis.results]
    header = ("task", *(f"Δ {r.metric.label}" for r in analysis.results))
    rows = tuple((task_id, *(_task_cell(r, by_task.get(task_id)) for r, by_task in zip(analysis.results, effects,
                                                                                       strict=True)))
                 for task_id in order)
    study = analysis.study
    return Table("per-task", f"Per task: mean of {study.arm_name(TREATMENT)} − mean of {study.arm_name(BASELINE)} "
                             "over repetitions "
                             "(— : not in both arms for that metric)",
                 header, rows, frozenset(range(1, 1 + len(analysis.results))))


def _rate_row(view: str, rate: ArmRate, analysis: Analysis) -> tuple[str, ...]:
    if rate.rate is None:
        return (analysis.study.arm_name(rate.arm), view, "0", fmt.MISSING, fmt.MISSING)
    return (analysis.study.arm_name(rate.arm), view, f"{rate.correct:g} / {rate.attempts}", f"{rate.rate:.3f}",
            f"[{rate.ci_low:.3f}, {rate.ci_high:.3f}]")


def rates_table(analysis: Analysis) -> Table | None:
    """Per arm the correctness rate, intention to treat and complete case, with task-level intervals
    (``report.inference_rates``; ``None`` when correctness is not reported)."""
    result = next((r for r in analysis.results if r.metric is CORRECTNESS), None)
    if result is None:
        return None
    rows = [_rate_row("intention to treat", rate, analysis) for rate in result.rates]
    rows += [_rate_row("complete case", rate, analysis) for rate in result.complete_case_rates]
    return Table("correctness-rates",
                 f"Correctness per arm with {level(analysis)} % intervals over task clusters (Clopper–Pearson at "
                 "the Korn–Graubard effective sample size: attempts of one task are not independent). Intention to "
                 "treat: every attempt counts and an attempt that did not complete counts as not correct; complete "
                 "case: completed, scored attempts only",
                 ("arm", "view", "correct / attempts", "rate", f"{level(analysis)} % interval"),
                 tuple(rows), frozenset({2, 3}))


def _component(value: float | None, kind: str) -> str:
    if value is None:
        return fmt.MISSING
    return f"{value:.3g}" if kind != "count" or abs(value) < 1000 else f"{value:,.0f}"


def _variance_row(result: MetricResult) -> tuple[str, ...]:
    components: VarianceComponents | None = result.variance
    if components is None:
        return (result.metric.label, f"({result.metric.unit})²", *(fmt.MISSING,) * 6, "not computed")
    kind = result.metric.kind
    icc = fmt.MISSING if components.icc is None else f"{components.icc:.2f}"
    method = components.method if components.note is None else f"{components.method}; {components.note}"
    within = [components.within_task.get(arm) for arm in (BASELINE, TREATMENT)]
    return (result.metric.label, f"({result.metric.unit})²", _component(components.between_task, kind),
            _component(components.task_by_arm, kind), _component(within[0], kind), _component(within[1], kind),
            icc, _component(components.difference_variance, kind), method)


def variance_table(analysis: Analysis) -> Table:
    """One row per metric: between-task, task × arm and per-arm within-task variance, ICC, variance of task Δ."""
    return Table("variance-components", "Variance components per metric (method of moments)",
                 ("metric", "unit", "between-task", "task × arm", f"within-task {analysis.study.arm_name(BASELINE)}",
                  f"within-task {analysis.study.arm_name(TREATMENT)}", "ICC", "variance of task Δ", "method"),
                 tuple(_variance_row(r) for r in analysis.results), frozenset({2, 3, 4, 5, 6, 7}))


def method_paragraph(analysis: Analysis) -> Paragraph:
    """What the task-level numbers are and how they were computed."""
    base, treat = analysis.study.arm_name(BASELINE), analysis.study.arm_name(TREATMENT)
    return Paragraph(
        f"The task is the unit of analysis: for each task, each arm's mean over its included repetitions, and Δ = "
        f"{treat} mean − {base} mean; the estimate is the mean of the task Δs. An attempt's value counts "
        "under intention to treat: tokens, time and money count every attempt that spent anything (a failed "
        "attempt's charge counts in its arm), correctness every attempt (one that did not complete counts as not "
        "correct); the complete-case rows beside them keep only completed attempts with complete usage. "
        "A task counts for a metric when both arms have at least one value. The null hypothesis tested is "
        f"{NULL_IN_WORDS}. The p-value is the test of the mean's: the two-sided sign-flip "
        f"{test_name(analysis.study.order)} of the mean task Δ (Fisher 1935), "
        "exact over all 2^k sign vectors up to 16 tasks, a seeded Monte Carlo (with its standard error) above; "
        "from 10 tasks it is the larger of that p and a seeded bootstrap-t p of the skewness-corrected studentized "
        f"mean (Hall 1992; 9,999 resamples). The {level(analysis)} % interval is the set of shifts that same test "
        f"does not reject at alpha "
        f"{analysis.alpha:g}, so it excludes 0 exactly when p < {analysis.alpha:g}; with too few tasks it is "
        "unbounded. With n non-zero task Δs no p below 2/2^n is attainable. Ratios are the ratio of the arm means "
        "over tasks (no task left out), their interval the same test of t − ρ·b inverted over ρ. The secondary "
        "metrics' p-values are Holm-adjusted together; the primary is tested alone. Repetitions are never treated "
        "as independent pairs."
    )


def inference_blocks(analysis: Analysis) -> tuple[Block, ...]:
    """The task-level blocks of the paired section, in order: per-metric table (primary first; the primary
    endpoint's sentence leads the report, in the glance), method, correctness rates (when adjudicated), per-task
    table, variance components."""
    rates = rates_table(analysis)
    repositories = repository_table(analysis)
    return (metric_table(analysis), method_paragraph(analysis),
            *((rates,) if rates is not None else ()), *((repositories,) if repositories is not None else ()),
            task_table(analysis), variance_table(analysis))


def repository_table(analysis: Analysis) -> Table | None:
    """Per metric and repository the mean task Δ, its tasks and sign-flip p, the heterogeneity test and (scope
    ``repositories``) the repository-level test (issue 41 item 1); ``None`` when the repositories are unknown."""
    rows: list[tuple[str, ...]] = []
    for result in ordered(analysis):
        if result.repositories is not None:
            rows += repository_rows(result.metric.label, partial(fmt.statistic, kind=result.metric.kind),
                                    result.repositories)
    if not rows:
        return None
    scope = analysis.scope
    caption = (f"Per repository (tasks of {scope.repositories} repositories; from {scope.min_repositories} on the "
               "repository-level test answers the question)")
    return Table("repositories", caption, ("metric", "repository", "mean task Δ", "tasks", "p"), tuple(rows),
                 frozenset({2, 3, 4}))
