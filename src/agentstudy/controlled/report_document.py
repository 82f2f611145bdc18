"""The controlled-study report as a document (issue 17 item 6): Markdown and HTML from ``report.render``.

Sections: what was measured (counts, hashes, verification, the warning when scenarios ran
different tasks); which tasks each scenario ran; the group table (scenario, model, overall, per
round) with Wilson 95 % intervals, and what every column means, ``missing`` included, with the
metrics each group lacks; the token distributions; the round comparisons; and, where a
selection ran tasks in two scenarios, the task-level paired analysis. Figures come from
``controlled.report_plots`` (HTML only). The text format stays ``agentstudy metrics``' text.
Pure: input is the metrics report and the observations it was computed from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentstudy.controlled.metrics_report import round_of
from agentstudy.controlled.report_paired import (
    coverage_warning,
    paired_cells,
    paired_rows,
    tasks_by_scenario,
)
from agentstudy.controlled.report_plots import controlled_figures
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1
from agentstudy.report.document import Block, Bullets, Document, Figure, Paragraph, Section, Table
from agentstudy.report.fmt import MISSING
from agentstudy.report.sentences import EXPLORATORY_SENTENCE

Obs = ControlledStudyObservationV1
GROUP_SCOPES = ("aggregate", "scenario", "model")
GROUP_HEADER = ("scope", "key", "round", "obs", "completed [95 % CI]", "adjudicated", "self-reported success [95 % CI]",
                "adjudicated success", "provider tokens", "estimated tokens", "latency P95 ms", "tool calls (mean)",
                "agent USD", "missing")
COLUMNS = (
    "obs: observations in the group (one per execution of a task by a model in a scenario, within a round).",
    "completed: share whose execution completed, with its Wilson 95 % interval (z = 1.96).",
    "adjudicated: share whose adjudication is no longer pending.",
    "self-reported success: the providers' own outcome over the observations that state one, with its Wilson "
    "95 % interval; a provider's claim is not correctness.",
    "adjudicated success: share judged success among the adjudicated observations.",
    "provider tokens / estimated tokens: sums of input + output tokens, kept apart by how they were counted "
    "(reported by the provider, or estimated from bytes).",
    "latency P95 ms: the nearest-rank 95th percentile of execution durations.",
    "tool calls (mean): mean tool calls over the observations that report them.",
    "agent USD: the exact sum of the agent's cost; — when no observation reported one.",
    "missing: how many of the group's metrics no observation reported (name-partial: only some did). Missing "
    "values leave their metric's denominator and never count as zero; the table 'Metrics not reported' names "
    "them.",
)


def _counts(mapping: dict[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in mapping.items()) or MISSING


def _rate(value: Any) -> str:
    return MISSING if value is None else f"{value:.2f}"


def _rate_ci(value: Any, interval: Any) -> str:
    if value is None:
        return MISSING
    return f"{value:.2f} [{interval['low']:.2f}, {interval['high']:.2f}]" if interval else f"{value:.2f}"


def _number(value: Any) -> str:
    if value is None:
        return MISSING
    if isinstance(value, float):
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return str(value)


def _groups(report: dict[str, Any]) -> list[dict[str, Any]]:
    order = {scope: index for index, scope in enumerate(GROUP_SCOPES)}
    chosen = [group for group in report["groups"] if group["scope"] in order]
    return sorted(chosen, key=lambda g: (order[g["scope"]], g["key"], g["round"]))


def _group_row(group: dict[str, Any]) -> tuple[str, ...]:
    m = group["metrics"]
    return (group["scope"], group["key"], group["round"], str(m["observationCount"]),
            _rate_ci(m["completedRate"], m["completedConfidence95"]), _rate(m["adjudicatedRate"]),
            _rate_ci(m["successRate"], m["successConfidence95"]), _rate(m["adjudicatedSuccessRate"]),
            _number(m["providerTokens"]), _number(m["estimatedTokens"]), _number(m["latencyP95Ms"]),
            _number(m["averageToolCalls"]), _number(m["agentCostUsd"]), str(len(m["missingMetrics"])))


def _about(report: dict[str, Any], warning: str | None) -> Section:
    source = report.get("source", {})
    unverified = source.get("unverifiedObservations", [])
    verified = ("verified" if source.get("verified", True)
                else f"NOT VERIFIED (observations {', '.join(str(n) for n in unverified)})")
    rows = (("metrics", f"{report['metricsVersion']}: {report['observationCount']} observations, "
                        f"{len(report['runIds'])} run ids, {len(report['rounds'])} rounds"),
            ("ledger", f"{source.get('ledgerContentHash', '?')} {verified}"),
            ("report hash", report["contentHash"]),
            ("status", _counts(report["byStatus"])),
            ("adjudication", _counts(report["byAdjudication"])),
            ("rounds", _counts(report["byRound"])))
    blocks: list[Block] = [Paragraph(warning)] if warning else []
    blocks += [Table("about", "What was measured", ("what", "value"), rows),
               Bullets((*report["limitations"], EXPLORATORY_SENTENCE))]
    return Section("About this report", tuple(blocks))


def _coverage(observations: Sequence[Obs], warning: str | None) -> Section:
    tasks = tasks_by_scenario(observations)
    every = set.intersection(*tasks.values()) if tasks else set()
    rows = tuple((scenario, str(sum(1 for item in observations if item.scenario.id == scenario)), str(len(ids)),
                  str(len(every & ids))) for scenario, ids in sorted(tasks.items()))
    table = Table("coverage", "Tasks per scenario", ("scenario", "observations", "tasks", "tasks every scenario ran"),
                  rows, frozenset({1, 2, 3}))
    note = warning or "Every scenario ran the same tasks, so scenarios can be compared task by task (below)."
    return Section("Tasks per scenario", (Paragraph(note), table))


def _groups_section(report: dict[str, Any], warning: str | None) -> Section:
    groups = _groups(report)
    table = Table("groups", "Groups: overall, by scenario, by model (per round)", GROUP_HEADER,
                  tuple(_group_row(g) for g in groups), frozenset(range(3, 14)))
    missing = Table("missing", "Metrics not reported", ("scope", "key", "round", "missing", "metrics"),
                    tuple((g["scope"], g["key"], g["round"], str(len(g["metrics"]["missingMetrics"])),
                           ", ".join(g["metrics"]["missingMetrics"]) or MISSING) for g in groups), frozenset({3}))
    blocks: list[Block] = [Paragraph(warning)] if warning else []
    blocks += [table, Paragraph("What the columns mean:"), Bullets(COLUMNS), missing]
    return Section("Groups", tuple(blocks))


def _rounds(report: dict[str, Any], warning: str | None) -> Section:
    comparisons = [c for c in report["comparisons"] if c["scope"] in GROUP_SCOPES]
    if not comparisons:
        text = (f"One round ({', '.join(report['rounds']) or 'none'}): nothing to compare. A second round "
                "(`agentstudy run --round NAME`) is compared against the baseline round.")
        return Section("Round comparisons", (Paragraph(text),))
    rows = tuple((c["scope"], c["key"], str(c["baselineSampleSize"]), str(c["currentSampleSize"]), c["status"],
                  ", ".join(c["regressions"]) or MISSING) for c in comparisons)
    table = Table("comparisons", f"Round {report['baselineRound']} (baseline) against {report['currentRound']}",
                  ("scope", "key", "baseline obs", "current obs", "status", "regressions"), rows, frozenset({2, 3}))
    rule = ("regressed: a lower success, citation, quality, safety or acceptance rate, or a cost, token, latency, "
            "size, clarification or rework figure more than 5 % higher (both samples ≥ 2); improved: the reverse; "
            "inconclusive: a sample below 2.")
    blocks: list[Block] = [Paragraph(warning)] if warning else []
    return Section("Round comparisons", (*blocks, table, Paragraph(rule)))


def _paired(observations: Sequence[Obs]) -> Section:
    rows = paired_rows(observations)
    if not rows:
        return Section("Paired by task", (Paragraph(
            "No task ran in two scenarios under one model, so there is no paired analysis: the selection is not "
            "pairwise."),))
    table = Table("paired", "Task-level paired differences (exploratory)",
                  ("model", "comparison", "metric", "design", "estimate", "95 % interval", "p (sign flip)"),
                  tuple(paired_cells(row) for row in rows), frozenset({4}))
    method = (f"Per task, each scenario's mean over its observations and their difference; the estimate is the mean "
              f"task difference. Method: {rows[0].summary.method}.")
    return Section("Paired by task", (table, Paragraph(method), Paragraph(EXPLORATORY_SENTENCE)))


def _with(section: Section, figures: Sequence[Figure], keys: tuple[str, ...]) -> Section:
    chosen = tuple(f for f in figures if f.key in keys)
    return Section(section.title, (*section.blocks, *chosen)) if chosen else section


def controlled_document(title: str, report: dict[str, Any], observations: Sequence[Obs],
                        *, figures: bool = True) -> Document:
    """The controlled report of ``report`` (``calculate_study_metrics``) over ``observations`` (issue 17 item 6).

    ``figures`` adds the SVG plots (for HTML). Observations outside the report's rounds are ignored.
    """
    selected = [item for item in observations if round_of(item) in report["rounds"]]
    warning = coverage_warning(selected)
    drawn = controlled_figures(report, selected) if figures else ()
    distributions = Section("Token distributions", (Paragraph(
        "Tokens per observation by scenario and model; the group table gives the sums."),))
    sections = (
        _about(report, warning),
        _coverage(selected, warning),
        _with(_groups_section(report, warning), drawn, ("plot-rates",)),
        _with(distributions, drawn, ("plot-tokens",)),
        _with(_rounds(report, warning), drawn, ("plot-rounds",)),
        _paired(selected),
    )
    return Document(title, sections)

