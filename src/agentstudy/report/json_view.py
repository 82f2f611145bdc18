"""``agentstudy report --format json`` (issue 17, item 7): every number of the report, machine-readable.

Shape (camelCase; ``null`` with a ``reason`` where a value is not computable)::

    {"type": "minimal-study-report", "version": 1, "ledger": ..., "ledgerSha256": ...,
     "verified": bool, "unverified": [...], "rehearsal": bool, "exploratory": true,
     "design": {"tasks", "repetitions", "label", "attempts", "plannedAttempts", "mode", "transport", "model"},
     "seed": int, "resamples": int,
     "primary": {"metric", "betterWhen", "alpha"}, "analysis": {..., "declared": bool},
     "metrics": [{"metric", "label", "unit", "role", "tasks", "repetitions", "design", "estimate", "ciLow",
                  "ciHigh", "pValue", "pValueAdjusted", "smallestAttainableP", "pMonteCarloSe", "pMin", "method",
                  "reason"?, "ratio"?: {"estimate", "ciLow", "ciHigh", "tasks", "reason"?},
                  "rates"?: {<arm id>: {"correct", "attempts", "rate", "ciLow", "ciHigh"}},
                  "completeCase"?: {"estimate", "ciLow", "ciHigh", "pValue", "tasks", "rates"},
                  "variance": {"betweenTask", "taskByArm", "withinTask": {<arm id>: number}, "icc", ...},
                  "taskEffects": [...]}],
     "varianceComponents": [{"metric", "tasks", "observations", "betweenTask", "taskByArm", "withinTask",
                             "icc", "differenceVariance", "method", "reason"?}],
     "power": [{"metric", "alpha", "power", "tasks", "repetitions", "components", "reason",
                "minimumDetectableDifference", "simulatedPower", "effect", "needed": [...], ...}],
     "containment": [...], "attempts": [...], "spend": {..., "chargedNotSpentUsd"?, "neverStarted"?},
     "tables": {key: {"caption", "header", "rows"}},
     "sequential"?: {the ledger's sequential block, "line", "plannedUsd", "notSpentUsd"},
     "chain": {"complete": bool, "missing": [{"ledgerSha256", "runId"}]} (issue 40: runs not given),
     "treatment": {"delivered", "treatmentAttempts", "attemptsUsingServer", "serverCalls", "serverCallErrors",
                   "attemptsAllCallsFailed", "toolDefinitionTokens", ..., "arms": {"control", "treatment"}},
     "verdict": "one sentence"}

``tables`` holds every table of the text report as its display strings, so nothing the report
shows is missing here. Metrics are listed primary first (issue 30); ``role`` is ``primary``,
``secondary`` or ``exploratory`` (a metric a declared ``analysis.secondary`` leaves out);
``pValueAdjusted`` is the raw p for the primary, Holm's for a secondary, ``null`` otherwise.
Unbounded interval ends are ``null`` with the sentence why in ``reason``.
USD amounts recorded in the ledger are exact (``pricing.usd_json``);
USD statistics (means over tasks, bootstrap bounds) are rounded to :data:`USD_STAT_PLACES`
decimals before the same conversion, so they carry no float noise either.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from agentstudy.pricing.usd_json import optional_usd_number, usd_number
from agentstudy.protocol.arm_configurations import configuration_sentences
from agentstudy.report.analysis import Analysis, MetricResult
from agentstudy.report.chain import chain_json
from agentstudy.report.clusters import HETEROGENEITY_METHOD
from agentstudy.report.containment import containment_rows
from agentstudy.report.content import build_document
from agentstudy.report.content_inference import ordered
from agentstudy.report.content_money import charged_not_spent
from agentstudy.report.inference import design_label
from agentstudy.report.inference_rates import ArmRate
from agentstudy.report.methods import NULL_IN_WORDS, STATISTIC, test_name
from agentstudy.report.model import BASELINE, TREATMENT, Attempt, Study
from agentstudy.report.power_primary import primary_power
from agentstudy.report.power_section import plan_json, power_plans
from agentstudy.report.sequential import money_not_spent, sequential_line, stopped_sequence
from agentstudy.report.treatment import summarize_treatment, treatment_json, verdict

USD_STAT_PLACES = 12


def _stat(value: float | None, kind: str) -> int | float | None:
    """A statistic in the metric's unit for JSON; USD through a 12-decimal ``Decimal`` (no float noise)."""
    if value is None:
        return None
    if kind != "usd":
        return value
    return usd_number(Decimal(repr(value)).quantize(Decimal(1).scaleb(-USD_STAT_PLACES), ROUND_HALF_EVEN))


def _digits(value: float | None) -> float | None:
    """A variance or ratio to 12 significant digits (moments of USD carry float noise below that)."""
    return None if value is None else float(f"{value:.12g}")


def _reason(*notes: str | None) -> dict[str, str]:
    unique = list(dict.fromkeys(n for n in notes if n))
    return {"reason": "; ".join(unique)} if unique else {}


def _rates(rates: tuple[ArmRate, ...]) -> dict[str, Any]:
    return {r.arm: {"correct": r.correct, "attempts": r.attempts, "rate": r.rate, "ciLow": r.ci_low,
                    "ciHigh": r.ci_high, "method": r.method} for r in rates}


def _ratio(result: MetricResult) -> dict[str, Any]:
    ratio = result.ratio
    if ratio is None:
        return {}
    return {"ratio": {"estimate": _digits(ratio.estimate), "ciLow": _digits(ratio.ci_low),
                      "ciHigh": _digits(ratio.ci_high), "tasks": ratio.tasks,
                      "pValue": ratio.p_value, "leftOut": ratio.left_out, "method": ratio.method,
                      **_reason(ratio.note)}}


def _complete_case(result: MetricResult) -> dict[str, Any]:
    summary = result.complete_case
    rates = {"rates": _rates(result.rates)} if result.rates else {}
    if summary is None:
        return rates
    kind = result.metric.kind
    return {**rates, "completeCase": {
        "estimate": _stat(summary.estimate, kind), "ciLow": _stat(summary.ci_low, kind),
        "ciHigh": _stat(summary.ci_high, kind), "pValue": summary.p_value,
        "smallestAttainableP": summary.p_min, "tasks": summary.tasks, "repetitions": summary.repetitions,
        **({"rates": _rates(result.complete_case_rates)} if result.complete_case_rates else {}),
        **_reason(summary.estimate_note, summary.ci_note, summary.p_note)}}


def _repositories(result: MetricResult) -> dict[str, Any]:
    """``byRepository``, ``heterogeneity`` (≥ 2 repositories) and ``repositoryLevel`` (scope ``repositories``)."""
    view, kind = result.repositories, result.metric.kind
    if view is None:
        return {}
    entry: dict[str, Any] = {"byRepository": {
        r.repository: {"estimate": _stat(r.estimate, kind), "tasks": r.tasks, "pValue": r.p_value}
        for r in view.by_repository}}
    if view.heterogeneity_p is not None:
        entry["heterogeneity"] = {"pValue": view.heterogeneity_p, "method": HETEROGENEITY_METHOD}
    if view.level is not None:
        level = view.level
        entry["repositoryLevel"] = {"estimate": _stat(level.estimate, kind), "pValue": level.p_value,
                                    "ciLow": _stat(level.ci_low, kind), "ciHigh": _stat(level.ci_high, kind),
                                    "repositories": level.repositories}
    return entry


def metric_json(result: MetricResult, order: str = "counterbalanced") -> dict[str, Any]:
    """One metric's task-level summary as JSON (see the module docstring); ``order`` is the ledger's arms' order
    (``design.order``), which names the test (``test.name``)."""
    summary, kind = result.task_level, result.metric.kind
    return {
        "metric": result.metric.key, "label": result.metric.label, "unit": result.metric.unit, "role": result.role,
        "tasks": summary.tasks, "repetitions": summary.repetitions, "design": summary.design,
        "estimate": _stat(summary.estimate, kind), "ciLow": _stat(summary.ci_low, kind),
        "ciHigh": _stat(summary.ci_high, kind), "pValue": summary.p_value, "pValueAdjusted": result.p_adjusted,
        "smallestAttainableP": summary.p_min,
        "pMonteCarloSe": summary.p_monte_carlo_se, "pMin": summary.p_min, "method": summary.method,
        "test": {"statistic": STATISTIC, "null": NULL_IN_WORDS, "name": test_name(order)},
        **_reason(summary.estimate_note, summary.ci_note, summary.p_note),
        **_ratio(result), **_complete_case(result), **_repositories(result), "variance": _variance_entry(result),
        "taskEffects": [
            {"taskId": e.task_id, "baselineMean": _stat(e.baseline_mean, kind),
             "treatmentMean": _stat(e.treatment_mean, kind), "difference": _stat(e.difference, kind),
             "baselineN": e.baseline_n, "treatmentN": e.treatment_n}
            for e in summary.task_effects
        ],
    }


def _variance_entry(result: MetricResult) -> dict[str, Any]:
    entry = variance_json(result)
    del entry["metric"]
    return entry


def variance_json(result: MetricResult) -> dict[str, Any]:
    """One metric's variance components as JSON (metric unit squared; USD squared as plain floats)."""
    components = result.variance
    if components is None:
        return {"metric": result.metric.key, "betweenTask": None, "taskByArm": None, "withinTask": {}, "icc": None,
                "differenceVariance": None, "method": None, "reason": "not computed"}
    return {
        "metric": result.metric.key, "tasks": components.tasks, "observations": components.observations,
        "betweenTask": _digits(components.between_task), "taskByArm": _digits(components.task_by_arm),
        "withinTask": {arm: _digits(v) for arm, v in components.within_task.items()}, "icc": _digits(components.icc),
        "differenceVariance": _digits(components.difference_variance), "method": components.method,
        **_reason(components.note),
    }


def _attempt(attempt: Attempt) -> dict[str, Any]:
    return {
        "index": attempt.index, "taskId": attempt.task_id, "scenario": attempt.scenario,
        "repetition": attempt.repetition, "status": attempt.status, "inputTokens": attempt.input_tokens,
        "outputTokens": attempt.output_tokens, "toolCalls": attempt.tool_calls, "wallTimeMs": attempt.wall_time_ms,
        "chargedUsd": optional_usd_number(attempt.charged_usd), "usageComplete": attempt.usage_complete,
        "correctness": attempt.correctness, "adjudication": attempt.adjudication,
        **({} if attempt.run_id is None else {"runId": attempt.run_id, "superseded": attempt.superseded}),
    }


def _runs(study: Study) -> dict[str, Any]:
    """A chain's ``runs`` (issue 33 item 7): per ledger its ``runId``, file, SHA-256, status and attempt indices."""
    if not study.runs:
        return {}
    return {"runs": [{"runId": run.run_id, "ledger": run.file_name, "ledgerSha256": run.sha256,
                      "status": run.status, "attempts": list(run.attempts)} for run in study.runs]}


def _design(analysis: Analysis) -> dict[str, Any]:
    study = analysis.study
    tasks = list(dict.fromkeys(a.task_id for a in study.attempts if a.scenario in (BASELINE, TREATMENT)))
    first = next((r for r in analysis.results if r.metric.key == "inputTokens"), None)
    repetitions, label = design_label(first.task_level.task_effects) if first is not None else (None, None)
    return {"tasks": len(tasks), "repetitions": repetitions, "label": label, "attempts": len(study.attempts),
            "plannedAttempts": study.planned, "mode": study.mode, "transport": study.transport,
            "model": study.header.get("model")}


def _containment(analysis: Analysis) -> list[dict[str, Any]]:
    return [
        {"arm": row.scenario, "label": row.label, "attempts": row.attempts,
         "mechanisms": [{"mechanism": name, "attempts": count} for name, count in row.mechanisms],
         "notAchieved": None if row.not_achieved is None else list(row.not_achieved),
         "refusedReads": row.refused_reads, "unrecordedReads": row.unrecorded_reads,
         "applicable": row.applicable, "bubblewrapped": row.bubblewrapped}
        for row in containment_rows(analysis.study.attempts, analysis.study.arm_name)
    ]


def _spend(analysis: Analysis) -> dict[str, Any]:
    study = analysis.study
    unstarted, not_spent = charged_not_spent(study.attempts)
    return {"capUsd": optional_usd_number(study.cap_usd), "spentUsd": optional_usd_number(study.spent_usd),
            "reservedUsd": optional_usd_number(study.reserved_usd),
            "measuredUsd": optional_usd_number(study.measured_usd),
            "openReservationUsd": optional_usd_number(study.open_reservation_usd),
            "cumulativeCapExceeded": study.cumulative_cap_exceeded,
            **({"chargedNotSpentUsd": usd_number(not_spent), "neverStarted": unstarted} if unstarted else {}),
            **({"reservationRule": study.reservation_rule, "worstTurnUsd": optional_usd_number(study.worst_turn_usd),
                "largestOvershootUsd": optional_usd_number(study.largest_overshoot_usd)}
               if study.reservation_rule is not None else {})}


def report_json(analysis: Analysis) -> dict[str, Any]:
    """The whole JSON report of ``analysis`` (see the module docstring)."""
    study = analysis.study
    fidelity = summarize_treatment(study)
    plans = power_plans(analysis)  # simulated once: the tables' power section shows the same plans
    tables = {t.key: {"caption": t.caption, "header": list(t.header), "rows": [list(r) for r in t.rows]}
              for t in build_document(analysis, plans=plans).tables()}
    return {
        "type": "minimal-study-report", "version": 1, "ledger": study.file_name, "ledgerSha256": study.sha256,
        "verified": not study.unverified, "unverified": list(study.unverified), "rehearsal": study.rehearsal,
        "exploratory": True, "design": _design(analysis), "seed": analysis.seed, "resamples": analysis.resamples,
        "primary": {"metric": analysis.plan.primary.metric, "betterWhen": analysis.plan.primary.better_when,
                    "alpha": analysis.alpha},
        "analysis": {**analysis.plan.to_json(), "declared": analysis.plan_declared},
        "inference": {"scope": analysis.scope.scope, "repositories": analysis.scope.repositories,
                      "minRepositories": analysis.scope.min_repositories},
        "metrics": [metric_json(r, analysis.study.order) for r in ordered(analysis)],
        "varianceComponents": [variance_json(r) for r in analysis.results],
        **_power(analysis), "powerPlans": [plan_json(plan) for plan in plans],
        "containment": _containment(analysis), "attempts": [_attempt(a) for a in study.attempts],
        "spend": _spend(analysis), "status": study.status, "stopReason": study.stop_reason, "tables": tables,
        **_sequential(analysis), **_runs(study),
        "chain": chain_json(study.chain_missing),
        "arms": {scenario: study.arm_name(scenario) for scenario in (BASELINE, TREATMENT)},
        "treatment": treatment_json(fidelity),
        **({"armDifferences": {**fidelity.configurations.to_json(),
                               "sentences": list(configuration_sentences(fidelity.configurations, study.arm_name))}}
           if fidelity.configurations.recorded else {}),
        "verdict": verdict(analysis, fidelity),
    }


def _power(analysis: Analysis) -> dict[str, Any]:
    """``power`` (the ranged plan of the primary at ``analysis.minimumEffect``; issue 41 item 6) or ``null`` with
    ``powerNote`` saying why."""
    plan, note = primary_power(analysis)
    return {"power": plan, **({"powerNote": note} if note is not None else {})}


def _sequential(analysis: Analysis) -> dict[str, Any]:
    """A sequential ledger's ``sequential`` (issue 35): the ledger's block, the first-screen line and the planned
    and not-spent USD; nothing for a fixed design."""
    study = analysis.study
    if study.sequential is None:
        return {}
    money = money_not_spent(study)
    sequence = stopped_sequence(study)
    stopped = {} if sequence is None else {"confidenceSequence": {
        "estimate": sequence.estimate, "low": sequence.low, "high": sequence.high, "alpha": sequence.alpha}}
    return {"sequential": {**study.sequential.model_dump(by_alias=True), **stopped, "line": sequential_line(study),
                           "plannedUsd": None if money is None else usd_number(money.planned_usd),
                           "notSpentUsd": None if money is None else usd_number(money.not_spent_usd)}}


def render_json(analysis: Analysis) -> str:
    """:func:`report_json` as 2-space JSON with a final newline (non-finite numbers refused)."""
    return json.dumps(report_json(analysis), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
