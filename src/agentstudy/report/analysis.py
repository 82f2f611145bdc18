"""Pairs, per-task values, the task-level statistics per metric and re-pricing: the numbers every rendering shows.

The unit of analysis is the task (issue 17): per metric, :func:`task_values` collects each arm's
included repetition values per task, and :class:`MetricResult` carries their
:class:`~agentstudy.report.inference.TaskLevelSummary` (estimate, test-inverted interval,
exact sign-flip p) and :class:`~agentstudy.report.variance.VarianceComponents`. An attempt's value
is included when it ``completed``, the value is recorded and (for tokens and money) its usage is
complete; a task enters a metric when both arms have at least one included value.

A pair is one task x repetition of one agent with its ``repository-only`` and ``doc-bridge-mcp``
attempts: a pair never joins two agents' attempts, and :func:`analyse` refuses a study of several
agents (issue 21 item 6; :mod:`agentstudy.report.agents` analyses each agent alone).
A pair enters a metric's statistics only when both attempts ``completed``, both values are
recorded and (for tokens and money) both attempts' usage is complete; otherwise the pair is
kept in the per-pair table with the reason it was left out of that metric. Differences are
``doc-bridge-mcp - repository-only``: integers for counts and milliseconds, exact ``Decimal``
for USD (through ``pricing.sums``), floats for correctness scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal

from agentstudy.pricing.cost import CostProblem
from agentstudy.pricing.price_file import PriceFile, reprice_as
from agentstudy.pricing.sums import difference_usd
from agentstudy.protocol.analysis import DEFAULT_ANALYSIS, AnalysisPlan
from agentstudy.protocol.study_agents import DEFAULT_AGENT
from agentstudy.report.clusters import (
    UNKNOWN_SCOPE,
    InferenceScope,
    RepositoryView,
    inference_scope,
    repository_view,
    task_repositories,
)
from agentstudy.report.inference import TaskLevelSummary, task_level_summary
from agentstudy.report.inference_endpoints import adjusted_p, roles
from agentstudy.report.inference_rates import ArmRate, arm_rate, itt_score
from agentstudy.report.inference_ratio import RatioSummary, ratio_summary
from agentstudy.report.model import BASELINE, TREATMENT, Attempt, ReportInputError, Study
from agentstudy.report.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from agentstudy.report.variance import VarianceComponents, variance_components

Number = int | float | Decimal


@dataclass(frozen=True)
class Metric:
    """A compared quantity: ``key`` (camelCase), ``label``, ``unit`` and ``kind`` (``count``, ``usd`` or ``score``)."""

    key: str
    label: str
    unit: str
    kind: str


INPUT = Metric("inputTokens", "input tokens", "tokens", "count")
OUTPUT = Metric("outputTokens", "output tokens", "tokens", "count")
TOOLS = Metric("toolCalls", "tool calls", "calls", "count")
WALL = Metric("wallTimeMs", "wall time", "ms", "count")
CHARGED = Metric("chargedUsd", "charged USD", "USD", "usd")
REPRICED = Metric("repricedUsd", "re-priced USD", "USD", "usd")
CORRECTNESS = Metric("correctness", "correctness", "score 0-1", "score")
USAGE_METRICS = frozenset({INPUT.key, OUTPUT.key, CHARGED.key, REPRICED.key})
RATIO_METRICS = frozenset({INPUT.key, OUTPUT.key, WALL.key, CHARGED.key, REPRICED.key})
"""Heavy-tailed metrics shown also as a geometric mean ratio (issue 30 item 3): tokens, time, money."""


@dataclass(frozen=True)
class Repriced:
    """An attempt priced again: ``usd`` (``None`` when its usage is not recorded), whether that is a lower
    bound (incomplete usage), and where the usage came from or why it could not be priced."""

    usd: Decimal | None
    lower_bound: bool
    note: str


@dataclass(frozen=True)
class Pair:
    """One task x repetition: its two attempts (``None`` when not observed), per-metric differences and,
    for metrics left out, the reason (keys are metric keys). ``unusable`` says why the whole pair is left
    out (an attempt not observed or not completed), ``None`` when it is usable; ``agent`` is the one agent
    both attempts belong to."""

    task_id: str
    repetition: int
    baseline: Attempt | None
    treatment: Attempt | None
    differences: dict[str, Number]
    excluded: dict[str, str]
    unusable: str | None = None
    agent: str = DEFAULT_AGENT


@dataclass(frozen=True)
class MetricResult:
    """A metric's results: the pair-level differences (in pair order; shown per pair, never tested as
    independent), the task-level summary (what the report shows; issue 17 item 1) and the variance
    components (item 2; ``None`` only when not computed).

    Issue 30: ``role`` (``primary``, ``secondary`` or ``exploratory``) and ``p_adjusted`` (the raw p for
    the primary, Holm's over the secondaries, ``None`` otherwise); ``ratio`` the geometric mean ratio
    (tokens, time, USD; else ``None``). For correctness the task-level summary is intention to treat
    (an attempt that did not complete scores 0), ``rates`` its per-arm rates (baseline first), and
    ``complete_case``/``complete_case_rates`` the complete-case view beside it. Tokens, time and money are
    intention to treat too (issue 41 item 4: every attempt that spent anything), ``complete_case`` beside them."""

    metric: Metric
    differences: tuple[float, ...]
    task_level: TaskLevelSummary
    variance: VarianceComponents | None
    role: str = "exploratory"
    p_adjusted: float | None = None
    ratio: RatioSummary | None = None
    rates: tuple[ArmRate, ...] = ()
    complete_case: TaskLevelSummary | None = None
    complete_case_rates: tuple[ArmRate, ...] = ()
    repositories: RepositoryView | None = None
    """Per-repository estimates, heterogeneity and the repository-level test (issue 41; ``None`` when unknown)."""


@dataclass(frozen=True)
class Analysis:
    """Everything a rendering needs: the study, metrics in display order, pairs, results and re-pricing."""

    study: Study
    metrics: tuple[Metric, ...]
    pairs: tuple[Pair, ...]
    results: tuple[MetricResult, ...]
    repriced: dict[int, Repriced]
    prices: PriceFile | None
    seed: int
    resamples: int
    plan: AnalysisPlan = DEFAULT_ANALYSIS
    plan_declared: bool = False
    scope: InferenceScope = UNKNOWN_SCOPE
    """What the answer generalises to (issue 41 item 1)."""

    @property
    def alpha(self) -> float:
        """The two-sided level of every test and interval (the plan's ``alpha``)."""
        return self.plan.alpha


def reprice(attempt: Attempt, prices: PriceFile) -> Repriced:
    """Price ``attempt``'s stored usage as ``prices.price_as`` (see :func:`pricing.price_file.reprice_as`)."""
    if attempt.usage is None:
        return Repriced(None, False, "usage not recorded")
    try:
        cost = reprice_as(attempt.usage.totals, attempt.usage.cache_writes, attempt.usage.message_prompts, prices)
    except CostProblem as problem:
        return Repriced(None, False, f"cannot price: {problem}")
    lower = attempt.usage_complete is False
    return Repriced(cost.usd, lower, f"from {attempt.usage.source}" + ("; a lower bound" if lower else ""))


def value_of(attempt: Attempt, metric: Metric, repriced: Mapping[int, Repriced]) -> Number | None:
    """The attempt's recorded value of ``metric`` (``None`` when missing)."""
    values: dict[str, Number | None] = {
        INPUT.key: attempt.input_tokens,
        OUTPUT.key: attempt.output_tokens,
        TOOLS.key: attempt.tool_calls,
        WALL.key: attempt.wall_time_ms,
        CHARGED.key: attempt.charged_usd,
        CORRECTNESS.key: attempt.correctness,
    }
    if metric.key == REPRICED.key:
        entry = repriced.get(attempt.index)
        return entry.usd if entry is not None else None
    return values[metric.key]


def _unusable(attempt: Attempt | None, scenario: str) -> str | None:
    if attempt is None:
        return f"{scenario} not observed"
    if not attempt.completed:
        return f"{scenario} {attempt.status}"
    return None


def _why_not(attempt: Attempt | None, scenario: str, metric: Metric, repriced: Mapping[int, Repriced]) -> str | None:
    whole = _unusable(attempt, scenario)
    if whole is not None or attempt is None:
        return whole
    if metric.key in USAGE_METRICS and attempt.usage_complete is False:
        return f"{scenario} usage incomplete"
    if value_of(attempt, metric, repriced) is None:
        if metric is CORRECTNESS:
            return f"{scenario} {attempt.adjudication}"
        return f"{scenario} {metric.label} not recorded"
    return None


def difference(metric: Metric, treatment: Number, baseline: Number) -> Number:
    """``treatment - baseline``: exact ``Decimal`` through ``pricing.sums`` for USD, else plain arithmetic."""
    if metric.kind == "usd":
        assert isinstance(treatment, Decimal) and isinstance(baseline, Decimal)
        return difference_usd(treatment, baseline)
    assert not isinstance(treatment, Decimal) and not isinstance(baseline, Decimal)
    return treatment - baseline


def build_pairs(study: Study, metrics: tuple[Metric, ...], repriced: Mapping[int, Repriced]) -> tuple[Pair, ...]:
    """Every agent x task x repetition that has an attempt in either scenario, in order of first appearance
    (a pair's two attempts are always the same agent's)."""
    order: dict[tuple[str, str, int], None] = {}  # insertion-ordered set: a list's `in` was quadratic (issue 29)
    by_key: dict[tuple[str, str, int, str], Attempt] = {}
    for attempt in study.attempts:
        key = (attempt.agent, attempt.task_id, attempt.repetition)
        if attempt.scenario in (BASELINE, TREATMENT):
            order.setdefault(key)
        by_key[(*key, attempt.scenario)] = attempt
    pairs, names = [], (study.arm_name(BASELINE), study.arm_name(TREATMENT))  # reasons name the arms' labels
    for agent, task_id, repetition in order:
        base = by_key.get((agent, task_id, repetition, BASELINE))
        treat = by_key.get((agent, task_id, repetition, TREATMENT))
        differences: dict[str, Number] = {}
        unusable = "; ".join(r for r in (_unusable(base, names[0]), _unusable(treat, names[1])) if r) or None
        excluded: dict[str, str] = dict.fromkeys((m.key for m in metrics), unusable) if unusable else {}
        for metric in metrics if unusable is None else ():
            reasons = [r for r in (_why_not(base, names[0], metric, repriced),
                                   _why_not(treat, names[1], metric, repriced)) if r]
            if reasons or base is None or treat is None:
                excluded[metric.key] = "; ".join(reasons)
                continue
            t_value, b_value = value_of(treat, metric, repriced), value_of(base, metric, repriced)
            assert t_value is not None and b_value is not None
            differences[metric.key] = difference(metric, t_value, b_value)
        pairs.append(Pair(task_id, repetition, base, treat, differences, excluded, unusable, agent))
    return tuple(pairs)


def analyse(
    study: Study,
    prices: PriceFile | None = None,
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Analysis:
    """Pair the study's attempts and summarise every metric (correctness only when adjudicated,
    re-priced USD only with ``prices``).

    Raises:
        ReportInputError: the study holds attempts of more than one agent (the task-level statistics
            would pool agents; ``report.agents.agent_analyses`` analyses each alone, issue 21).
    """
    if len(study.agents) > 1:
        raise ReportInputError(f"the ledger holds attempts of {len(study.agents)} agents "
                               f"({', '.join(study.agents)}); each agent is analysed alone")
    metrics = [INPUT, OUTPUT, TOOLS, WALL, CHARGED]
    repriced: dict[int, Repriced] = {}
    if prices is not None:
        metrics.append(REPRICED)
        repriced = {attempt.index: reprice(attempt, prices) for attempt in study.attempts}
    if study.adjudication is not None:
        metrics.append(CORRECTNESS)
    pairs = build_pairs(study, tuple(metrics), repriced)
    plan = study.analysis or DEFAULT_ANALYSIS
    keys = tuple(m.key for m in metrics)
    role_of = roles(keys, plan.primary.metric, plan.secondary_of(keys))
    repository_of = task_repositories([(a.task_id, a.repository) for a in study.attempts
                                       if a.scenario in (BASELINE, TREATMENT)])
    scope = inference_scope(repository_of, plan.repositories_needed)
    results = [_metric_result(study, metric, pairs, repriced, plan.alpha, seed) for metric in metrics]
    results = [replace(r, repositories=repository_view(r.task_level.task_effects, repository_of, scope, seed=seed,
                                                       alpha=plan.alpha)) for r in results]
    adjusted = adjusted_p(role_of, {r.metric.key: r.task_level.p_value for r in results})
    results = [replace(r, role=role_of[r.metric.key], p_adjusted=adjusted[r.metric.key]) for r in results]
    return Analysis(study, tuple(metrics), pairs, tuple(results), repriced, prices, seed, resamples, plan,
                    study.analysis is not None, scope)


def _metric_result(study: Study, metric: Metric, pairs: tuple[Pair, ...], repriced: Mapping[int, Repriced],
                   alpha: float, seed: int) -> MetricResult:
    values = tuple(float(p.differences[metric.key]) for p in pairs if metric.key in p.differences)
    per_task = task_values(study, metric, repriced)
    arms = (BASELINE, TREATMENT)
    if metric is not CORRECTNESS:
        itt = itt_values(study, metric, repriced)
        ratio = ratio_summary(itt, seed=seed, alpha=alpha) if metric.key in RATIO_METRICS else None
        return MetricResult(metric, values, task_level_summary(itt, seed=seed, alpha=alpha),
                            variance_components(itt, arms), ratio=ratio,
                            complete_case=task_level_summary(per_task, seed=seed, alpha=alpha))
    itt = itt_task_values(study)
    by_arm = {arm: [a for a in study.attempts if a.scenario == arm] for arm in arms}
    return MetricResult(
        metric, values, task_level_summary(itt, seed=seed, alpha=alpha), variance_components(itt, arms),
        rates=tuple(arm_rate(arm, by_arm[arm], alpha, intention_to_treat=True) for arm in arms),
        complete_case=task_level_summary(per_task, seed=seed, alpha=alpha),
        complete_case_rates=tuple(arm_rate(arm, by_arm[arm], alpha, intention_to_treat=False) for arm in arms))


def itt_task_values(study: Study) -> dict[str, tuple[list[float], list[float]]]:
    """Correctness per task as intention to treat (issue 30 item 4): every attempt of either arm, an attempt
    that did not complete scoring 0; a completed attempt without a score (pending) is left out."""
    per_task: dict[str, tuple[list[float], list[float]]] = {}
    for attempt in study.attempts:
        if attempt.scenario not in (BASELINE, TREATMENT) or attempt.superseded:  # a chain's evidence (issue 33)
            continue
        arms = per_task.setdefault(attempt.task_id, ([], []))
        score = itt_score(attempt)
        if score is not None:
            arms[0 if attempt.scenario == BASELINE else 1].append(score)
    return per_task


def spent_anything(attempt: Attempt) -> bool:
    """Whether an attempt counts under intention to treat for tokens, time and money (issue 41 item 4): it
    completed, or it was charged more than 0 USD (a failed attempt's charge counts in its arm)."""
    return attempt.completed or (attempt.charged_usd is not None and attempt.charged_usd > 0)


def itt_values(study: Study, metric: Metric, repriced: Mapping[int, Repriced]) -> dict[str, tuple[list[float],
                                                                                                    list[float]]]:
    """Per task ``(baseline values, treatment values)`` of ``metric`` as intention to treat (issue 41 item 4): every
    attempt that :func:`spent_anything` with the value recorded, whatever its status or usage completeness (an
    incomplete usage counts what it recorded), a chain's superseded attempts left out."""
    per_task: dict[str, tuple[list[float], list[float]]] = {}
    for attempt in study.attempts:
        if attempt.scenario not in (BASELINE, TREATMENT) or attempt.superseded:
            continue
        arms = per_task.setdefault(attempt.task_id, ([], []))
        value = value_of(attempt, metric, repriced) if spent_anything(attempt) else None
        if value is not None:
            arms[0 if attempt.scenario == BASELINE else 1].append(float(value))
    return per_task


def task_values(
    study: Study, metric: Metric, repriced: Mapping[int, Repriced]
) -> dict[str, tuple[list[float], list[float]]]:
    """Per task (in order of first appearance), ``(baseline values, treatment values)`` of ``metric`` over
    the attempts whose value is included (completed, recorded, complete usage for tokens and USD), as
    floats in the metric's unit (USD through ``Decimal``, so exact to float precision). A task with no
    included value in an arm has an empty list there; :mod:`agentstudy.report.inference` leaves it out."""
    per_task: dict[str, tuple[list[float], list[float]]] = {}
    for attempt in study.attempts:
        if attempt.scenario not in (BASELINE, TREATMENT):
            continue
        arms = per_task.setdefault(attempt.task_id, ([], []))
        if _why_not(attempt, attempt.scenario, metric, repriced) is None:
            value = value_of(attempt, metric, repriced)
            if value is not None:
                arms[0 if attempt.scenario == BASELINE else 1].append(float(value))
    return per_task


def scenario_values(analysis: Analysis, metric: Metric) -> dict[str, list[Number]]:
    """Per scenario (both always present, baseline first), the values of ``metric`` over completed attempts
    with the value recorded (and complete usage for tokens and USD), in execution order."""
    values: dict[str, list[Number]] = {BASELINE: [], TREATMENT: []}
    for attempt in analysis.study.attempts:
        if _why_not(attempt, attempt.scenario, metric, analysis.repriced) is None:
            value = value_of(attempt, metric, analysis.repriced)
            if value is not None:
                values.setdefault(attempt.scenario, []).append(value)
    return values
