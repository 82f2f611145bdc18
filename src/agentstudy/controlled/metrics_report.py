"""The metrics report: groups, round comparisons, statuses, content hash (digest 5.11). Pure.

Groups: every observation counts in eight scopes — ``task``, ``repository``, ``category``,
``difficulty`` (``unassigned`` when absent), ``model``, ``scenario``, ``replicate`` and
``aggregate`` (``all``) — within its ``round`` (``unassigned`` when absent).

Comparison: a baseline round (``baseline`` if present, else the first in sorted order) against
a current round (the last other one), optionally restricted to a baseline and a current run
id. For each scope and key present in either round: regressions need both samples ≥ 2 — a
lower success, adjudicated-success, citation, evidence-quality, safety or acceptance rate, or
a token, latency, size, clarification, rework or cost metric more than 5 % higher; improved
is one of those more than 5 % lower, or a higher success/adjudicated/citation/quality rate.
Statuses: ``not-analyzed`` (a side missing or nothing comparable), ``inconclusive`` (a sample
below 2), ``regressed``, ``improved``, ``unchanged``. With a single round there is nothing to
compare and the report has no comparisons (ours: the original compared against a round named
``unassigned`` that need not exist).

Beyond the original's fields the report carries ``runIds``, ``byStatus``, ``byAdjudication``
and ``byRound`` counts, and ``source`` (the ledger's hash and whether it verified).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from agentstudy.controlled.metrics import metric_set
from agentstudy.pricing.study_costs import above_share, below_share, change_usd, relative_change_usd, usd_of
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.controlled.hashing import with_content_hash
from agentstudy.protocol.controlled.metric_scopes import SCOPES as SCOPES
from agentstudy.protocol.controlled.observation import (
    ADJUDICATION_STATUSES,
    EXECUTION_STATUSES,
    ControlledStudyObservationV1,
)

Obs = ControlledStudyObservationV1
UNASSIGNED = "unassigned"
COMPARED = (
    "completedRate", "successRate", "evidenceCitationRate", "evidenceQualityRate", "searchHitRate",
    "acceptanceCheckRate", "errorRate", "safetyRate", "adjudicatedSuccessRate", "documentationFindingCount",
    "documentationExampleRate", "documentationFreshnessRate", "documentationCorrectnessRate",
    "documentationCompletenessRate", "documentationClarityRate", "documentationMaintainabilityRate",
    "providerTokens", "estimatedTokens", "tokensToCorrectAnswerP95", "latencyP95Ms", "timeToCorrectAnswerP95Ms",
    "contextBytesP95", "responseBytesP95", "clarificationRate", "reworkRate", "analysisCostUsd", "agentCostUsd",
    "totalCostUsd", "providerTokenCostUnits",
)
HIGHER_IS_WORSE = (
    "providerTokens", "estimatedTokens", "tokensToCorrectAnswerP95", "latencyP95Ms", "timeToCorrectAnswerP95Ms",
    "contextBytesP95", "responseBytesP95", "clarificationRate", "reworkRate", "analysisCostUsd", "agentCostUsd",
    "totalCostUsd", "providerTokenCostUnits",
)
LOWER_IS_WORSE = ("successRate", "adjudicatedSuccessRate", "evidenceCitationRate", "evidenceQualityRate",
                  "safetyRate", "acceptanceCheckRate")
HIGHER_IS_BETTER = ("successRate", "adjudicatedSuccessRate", "evidenceCitationRate", "evidenceQualityRate")
USD_METRICS = frozenset({"analysisCostUsd", "agentCostUsd", "totalCostUsd"})
MIN_SAMPLE = 2
LIMITATIONS = (
    "Missing observation fields stay not-analyzed and leave their metric's denominator; nothing missing counts as "
    "zero.",
    "A lower token or latency figure is no improvement when correctness, evidence quality or rework regresses.",
    "Samples below two observations are inconclusive; historical observations do not establish causality.",
    "successRate is the providers' self-reported outcome; adjudicatedSuccessRate and the correct-answer P95 figures "
    "use adjudicated outcomes only.",
)


def round_of(item: Obs) -> str:
    """The observation's round, or ``unassigned``."""
    return item.round or UNASSIGNED


def group_keys(item: Obs) -> list[tuple[str, str]]:
    """``(scope, key)`` of every group the observation belongs to, in ``SCOPES`` order."""
    task = item.task
    return [("task", task.task_id), ("repository", task.repository_id), ("category", task.category),
            ("difficulty", task.difficulty or UNASSIGNED), ("model", item.model.id), ("scenario", item.scenario.id),
            ("replicate", str(task.replicate)), ("aggregate", "all")]


def _numeric(metrics: dict[str, Any] | None, name: str) -> Any:
    if metrics is None or name in metrics["missingMetrics"] or f"{name}-partial" in metrics["missingMetrics"]:
        return None
    value = metrics[name]
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _delta(name: str, baseline: Any, current: Any) -> dict[str, Any]:
    if baseline is None or current is None:
        return {"baseline": baseline, "current": current, "absoluteChange": None, "relativeChange": None}
    if name in USD_METRICS:
        low, high = usd_of(baseline), usd_of(current)
        return {"baseline": baseline, "current": current, "absoluteChange": usd_number(change_usd(low, high)),
                "relativeChange": relative_change_usd(low, high)}
    return {"baseline": baseline, "current": current, "absoluteChange": current - baseline,
            "relativeChange": None if baseline == 0 else (current - baseline) / baseline}


def _above(name: str, current: Any, baseline: Any, numerator: int) -> bool:
    if name in USD_METRICS:
        return above_share(usd_of(current), usd_of(baseline), numerator, 100)
    return bool(current > baseline * numerator / 100)


def _below(name: str, current: Any, baseline: Any, numerator: int) -> bool:
    if name in USD_METRICS:
        return below_share(usd_of(current), usd_of(baseline), numerator, 100)
    return bool(current < baseline * numerator / 100)


def compare(scope: str, key: str, baseline: dict[str, Any] | None, current: dict[str, Any] | None,
            baseline_round: str, current_round: str) -> dict[str, Any]:
    """One comparison (see the module docstring) of a group's metric sets in the two rounds."""
    sizes = (baseline["observationCount"] if baseline else 0, current["observationCount"] if current else 0)
    deltas = {name: _delta(name, _numeric(baseline, name), _numeric(current, name)) for name in COMPARED}
    both = {name: delta for name, delta in deltas.items() if delta["baseline"] is not None
            and delta["current"] is not None}
    regressions: list[str] = []
    if min(sizes) >= MIN_SAMPLE:
        regressions += [name for name in LOWER_IS_WORSE
                        if name in both and both[name]["current"] < both[name]["baseline"]]
        regressions += [name for name in HIGHER_IS_WORSE
                        if name in both and _above(name, both[name]["current"], both[name]["baseline"], 105)]
    improved = any(name in both and _below(name, both[name]["current"], both[name]["baseline"], 95)
                   for name in HIGHER_IS_WORSE) or any(
        name in both and both[name]["current"] > both[name]["baseline"] for name in HIGHER_IS_BETTER)
    if baseline is None or current is None or not both:
        status = "not-analyzed"
    elif min(sizes) < MIN_SAMPLE:
        status = "inconclusive"
    else:
        status = "regressed" if regressions else "improved" if improved else "unchanged"
    return {"scope": scope, "key": key, "baselineRound": baseline_round, "currentRound": current_round,
            "baselineSampleSize": sizes[0], "currentSampleSize": sizes[1], "metrics": deltas, "status": status,
            "regressions": regressions,
            "limitations": ["Samples smaller than two observations are inconclusive."] if min(sizes) < MIN_SAMPLE
            else []}


def _select(observations: Sequence[Obs], baseline_round: str | None, current_round: str | None,
            baseline_run_id: str | None, current_run_id: str | None) -> list[Obs]:
    if baseline_run_id is None and current_run_id is None:
        return list(observations)
    chosen = [run_id for run_id in (baseline_run_id, current_run_id) if run_id is not None]
    selected: list[Obs] = []
    for item in observations:
        name = round_of(item)
        if baseline_round == current_round:
            keep = name == baseline_round and item.run_id in chosen
        elif name == baseline_round:
            keep = baseline_run_id is None or item.run_id == baseline_run_id
        elif name == current_round:
            keep = current_run_id is None or item.run_id == current_run_id
        else:
            keep = False
        if keep:
            selected.append(item)
    return selected


def _ordered_counts(values: Sequence[str], order: Sequence[str]) -> dict[str, int]:
    counts = Counter(values)
    return {key: counts[key] for key in order if counts[key]} | {
        key: value for key, value in counts.items() if key not in order}


def calculate_study_metrics(observations: Sequence[Obs], *, baseline_round: str | None = None,
                            current_round: str | None = None, baseline_run_id: str | None = None,
                            current_run_id: str | None = None, source: dict[str, Any] | None = None) -> dict[str, Any]:
    """The content-hashed metrics report (``type: controlled-study-metrics``) of ``observations``.

    Args:
        observations: the ledger's observations, in ledger order.
        baseline_round, current_round: override the rounds compared (see the module docstring).
        baseline_run_id, current_run_id: keep only these runs within the compared rounds.
        source: what the observations were read from (``ledgerContentHash``, ``verified``, …).

    Returns:
        The report as a JSON-ready ``dict`` with ``contentHash`` (``sha256-normalized-v1``).
    """
    every_round = sorted({round_of(item) for item in observations})
    baseline = baseline_round or ("baseline" if "baseline" in every_round else next(iter(every_round), None))
    others = [name for name in every_round if name != baseline]
    current = current_round or (others[-1] if others else None)
    selected = _select(observations, baseline, current, baseline_run_id, current_run_id)
    members: dict[tuple[str, str, str], list[Obs]] = {}
    for item in selected:
        for scope, key in group_keys(item):
            members.setdefault((scope, key, round_of(item)), []).append(item)
    groups: list[dict[str, Any]] = [{"scope": scope, "key": key, "round": name, "metrics": metric_set(items)}
              for (scope, key, name), items in sorted(members.items())]
    comparisons: list[dict[str, Any]] = []
    if baseline is not None and current is not None and baseline != current:
        by_key: dict[tuple[str, str, str], dict[str, Any]] = {
            (group["scope"], group["key"], group["round"]): group["metrics"] for group in groups}
        pairs = sorted({(scope, key) for scope, key, name in members if name in (baseline, current)})
        comparisons = [compare(scope, key, by_key.get((scope, key, baseline)), by_key.get((scope, key, current)),
                               baseline, current) for scope, key in pairs]
    limitations = list(LIMITATIONS)
    if source is not None and not source.get("verified", True):
        limitations.append(f"The ledger did not verify: {len(source.get('unverifiedObservations', []))} observation(s) "
                           f"changed after they were hashed; they are included as read.")
    payload: dict[str, Any] = {
        "type": "controlled-study-metrics", "schemaVersion": 1, "metricsVersion": "v1",
        "observationCount": len(selected), "rounds": sorted({round_of(item) for item in selected}),
        "baselineRound": baseline, "currentRound": current,
    }
    if baseline_run_id is not None:
        payload["baselineRunId"] = baseline_run_id
    if current_run_id is not None:
        payload["currentRunId"] = current_run_id
    payload.update({
        "runIds": list(dict.fromkeys(item.run_id for item in selected)),
        "byStatus": _ordered_counts([item.execution.status for item in selected], EXECUTION_STATUSES),
        "byAdjudication": _ordered_counts([item.adjudication.status for item in selected], ADJUDICATION_STATUSES),
        "byRound": dict(Counter(round_of(item) for item in selected)),
        "groups": groups, "comparisons": comparisons, "limitations": limitations,
    })
    if source is not None:
        payload["source"] = source
    return with_content_hash(payload)


def regressions_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The comparisons of ``report`` whose status is ``regressed``."""
    return [item for item in report["comparisons"] if item["status"] == "regressed"]

