"""The controlled report's plots as inline SVG (issue 17 item 6), drawn with ``report.plots.svg_of``.

Three figures: the group rates (completed and self-reported success) per scenario and model
with their Wilson 95 % intervals from the metrics report; the distribution of tokens per
observation per scenario and model (dots are observations, the bar is the median, the axis
starts at zero); and, when two rounds are compared, each compared metric's baseline and current
value per scenario. Pure: the inputs are the metrics report (``calculate_study_metrics``) and
the observations it was computed from.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import MaxNLocator

from agentstudy.controlled.metrics_report import round_of
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1
from agentstudy.report.document import Figure
from agentstudy.report.error_bars import error_bar
from agentstudy.report.plots import svg_of

Obs = ControlledStudyObservationV1
RATES = (("completedRate", "completedConfidence95", "completed", "#4c72b0"),
         ("successRate", "successConfidence95", "self-reported success", "#dd8452"))
ROUND_METRICS = (("adjudicatedSuccessRate", "adjudicated success (share)"), ("successRate", "self-reported success"),
                 ("estimatedTokens", "estimated tokens (sum)"), ("providerTokens", "provider tokens (sum)"),
                 ("latencyP95Ms", "latency P95 (ms)"), ("averageToolCalls", "tool calls (mean)"))
LEGEND_PT = 11
TICK_PT = 10


def _groups(report: dict[str, Any], scope: str) -> list[dict[str, Any]]:
    return [group for group in report["groups"] if group["scope"] == scope]


def _rate_axes(ax: Axes, groups: Sequence[dict[str, Any]], title: str) -> None:
    labels = [f"{g['key']}\n{g['round']} (n = {g['metrics']['observationCount']})" for g in groups]
    width = 0.38
    for offset, (name, interval, label, colour) in zip((-width / 2, width / 2), RATES, strict=True):
        xs, ys, low, high = [], [], [], []
        for index, group in enumerate(groups):
            metrics = group["metrics"]
            if metrics[name] is None or metrics[interval] is None:
                continue
            bar = error_bar(metrics[name], metrics[interval]["low"], metrics[interval]["high"])  # issue 40
            xs.append(index + offset)
            ys.append(metrics[name])
            low.append(bar[0] if bar is not None else 0.0)
            high.append(bar[1] if bar is not None else 0.0)
        ax.bar(xs, ys, width=width, color=colour, alpha=0.75, label=label)
        ax.errorbar(xs, ys, yerr=[low, high], fmt="none", ecolor="black", capsize=3, linewidth=1)
    ax.set_xticks(range(len(groups)), labels, fontsize=TICK_PT - 1)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of observations", fontsize=TICK_PT)
    ax.set_title(title, fontsize=TICK_PT + 1, loc="left")


def rates_figure(report: dict[str, Any]) -> Figure:
    """Completed and self-reported success rates per scenario and per model, with Wilson 95 % intervals."""
    scopes = [(scope, _groups(report, scope)) for scope in ("scenario", "model")]
    scopes = [(scope, groups) for scope, groups in scopes if groups]
    figure = MplFigure(figsize=(9, 3.4 * max(1, len(scopes))), layout="constrained")
    axes = figure.subplots(max(1, len(scopes)), 1, squeeze=False)[:, 0]
    for ax, (scope, groups) in zip(axes, scopes, strict=False):
        _rate_axes(ax, groups, f"by {scope}")
    figure.legend(*axes[0].get_legend_handles_labels(), loc="outside upper right", ncol=2, fontsize=LEGEND_PT,
                  frameon=False)
    caption = ("Group rates with their Wilson 95 % intervals (z = 1.96, from the metrics report): completed "
               "executions, and the providers' self-reported success over the observations that state an outcome.")
    return Figure("plot-rates", caption, svg_of(figure, "plot-rates"))


def _tokens(item: Obs) -> int | None:
    execution = item.execution
    if execution.input_tokens is None or execution.output_tokens is None:
        return None
    return execution.input_tokens + execution.output_tokens


def tokens_figure(observations: Sequence[Obs]) -> Figure:
    """Tokens (input + output) per observation, per scenario and model; dots jittered, the bar is the median."""
    strata: dict[tuple[str, str], list[int]] = {}
    for item in observations:
        values = strata.setdefault((item.scenario.id, item.model.id), [])
        if (tokens := _tokens(item)) is not None:
            values.append(tokens)
    ordered = sorted(strata.items())
    figure = MplFigure(figsize=(max(6.0, 1.6 * len(ordered) + 1.5), 3.6), layout="constrained")
    ax = figure.subplots()
    for position, (_, values) in enumerate(ordered):
        count = len(values)
        offsets = [0.0] * count if count <= 1 else [-0.25 + 0.5 * i / (count - 1) for i in range(count)]
        ax.scatter([position + o for o in offsets], values, s=20, alpha=0.75, color="#4c72b0", zorder=3)
        if values:
            ax.hlines(statistics.median(values), position - 0.32, position + 0.32, color="black", linewidth=1.4,
                      zorder=4)
    labels = [f"{scenario}\n{model}\n(n = {len(values)})" for (scenario, model), values in ordered]
    ax.set_xticks(range(len(ordered)), labels, fontsize=TICK_PT - 1)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("tokens per observation (input + output)", fontsize=TICK_PT)
    caption = ("Tokens per observation by scenario and model (dots are observations, the bar is the median; "
               "the axis starts at zero). Provider counts and estimates are pooled here; the tables keep them apart.")
    return Figure("plot-tokens", caption, svg_of(figure, "plot-tokens"))


def _comparison_value(comparison: dict[str, Any], name: str) -> tuple[float, float] | None:
    delta = comparison["metrics"].get(name)
    if delta is None or delta["baseline"] is None or delta["current"] is None:
        return None
    return float(delta["baseline"]), float(delta["current"])


def rounds_figure(report: dict[str, Any]) -> Figure | None:
    """Per compared metric, each scenario's baseline and current round value joined by a line; ``None`` with no
    comparison."""
    comparisons = [c for c in report["comparisons"] if c["scope"] in ("scenario", "aggregate")]
    shown = [(name, label) for name, label in ROUND_METRICS
             if any(_comparison_value(c, name) is not None for c in comparisons)]
    if not comparisons or not shown:
        return None
    figure = MplFigure(figsize=(9, 2.6 * len(shown)), layout="constrained")
    axes = figure.subplots(len(shown), 1, squeeze=False)[:, 0]
    keys = [f"{c['scope']} {c['key']}" for c in comparisons]
    for ax, (name, label) in zip(axes, shown, strict=True):
        for index, comparison in enumerate(comparisons):
            pair = _comparison_value(comparison, name)
            if pair is None:
                continue
            ax.plot([index, index], pair, color="#999999", linewidth=1, zorder=2)
            ax.scatter([index], [pair[0]], color="#4c72b0", zorder=3, label="baseline round" if index == 0 else None)
            ax.scatter([index], [pair[1]], color="#dd8452", marker="D", zorder=3,
                       label="current round" if index == 0 else None)
        ax.set_xticks(range(len(keys)), keys, fontsize=TICK_PT - 1)
        ax.set_ylim(bottom=0)
        ax.set_title(label, fontsize=TICK_PT + 1, loc="left")
    figure.legend(*axes[0].get_legend_handles_labels(), loc="outside upper right", ncol=2, fontsize=LEGEND_PT,
                  frameon=False)
    caption = (f"Round comparison: {report['baselineRound']} (baseline, circles) against {report['currentRound']} "
               "(current, diamonds), per scenario and overall; the status of each is in the table.")
    return Figure("plot-rounds", caption, svg_of(figure, "plot-rounds"))


def controlled_figures(report: dict[str, Any], observations: Sequence[Obs]) -> tuple[Figure, ...]:
    """Every figure of the controlled report: rates, tokens, and rounds when two rounds are compared."""
    rounds = rounds_figure(report)
    selected = [item for item in observations if round_of(item) in report["rounds"]]
    return (rates_figure(report), tokens_figure(selected), *((rounds,) if rounds is not None else ()))
