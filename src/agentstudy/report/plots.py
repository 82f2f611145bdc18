"""The report's plots as inline SVG (matplotlib's SVG canvas, no display, no pyplot).

Three figures: the paired differences per metric (one dot per pair, the mean with its
bootstrap interval, zero marked), the per-scenario distributions, and a status strip of every
attempt in execution order. Text stays text in the SVG (``svg.fonttype = none``) to keep the
page small; every ``id`` is prefixed with the figure's key so several SVGs share one HTML page
without clashing, and the output is deterministic (fixed hash salt, no date).
"""

from __future__ import annotations

import io
import re
import statistics

import matplotlib
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure as MplFigure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from agentstudy.report.analysis import CHARGED, INPUT, OUTPUT, TOOLS, WALL, Analysis, MetricResult, scenario_values
from agentstudy.report.document import Figure
from agentstudy.report.model import BASELINE, TREATMENT

SCENARIO_COLOURS = {BASELINE: "#4c72b0", TREATMENT: "#dd8452"}
STATUS_COLOURS = {
    "completed": "#1b9e77", "failed": "#d95f02", "timed-out": "#7570b3", "budget-exceeded": "#e7298a",
    "invalid-setup": "#e6ab02", "invalid-cost": "#a6761d", "incomplete": "#666666",
}
OTHER_STATUS_COLOUR = "#bbbbbb"
_ID = re.compile(r' id="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]+)')


def _jitter(count: int) -> list[float]:
    """Deterministic offsets in [-0.2, 0.2] that spread ``count`` points (no randomness)."""
    if count <= 1:
        return [0.0] * count
    return [-0.2 + 0.4 * i / (count - 1) for i in range(count)]


def svg_of(figure: MplFigure, key: str) -> str:
    """The figure as an SVG element (from ``<svg``): referenced ids prefixed with ``key``, others dropped."""
    FigureCanvasSVG(figure)
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"agentstudy-{key}",
                                "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans"]}):
        figure.savefig(buffer, format="svg", metadata=dict.fromkeys(("Date", "Creator", "Format", "Type")))
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    referenced = {m.group(2) for m in _REF.finditer(text)}
    text = _ID.sub(lambda m: f' id="{key}-{m.group(1)}"' if m.group(1) in referenced else "", text)
    return _REF.sub(lambda m: f"{m.group(1)}{key}-{m.group(2)}", text)


def _difference_axes(ax: Axes, result: MetricResult) -> None:
    summary = result.task_level
    ax.axvline(0, color="#888888", linestyle="--", linewidth=0.8)
    ax.set_yticks([])
    ax.set_ylim(-1, 1)
    ax.set_title(f"Δ {result.metric.label} ({result.metric.unit}), {summary.design}", fontsize=9, loc="left")
    if summary.estimate is None:
        ax.text(0.5, 0.5, "no task in both arms", transform=ax.transAxes, ha="center", va="center", color="#666666")
        return
    ax.scatter([e.difference for e in summary.task_effects], [0.4 + y for y in _jitter(summary.tasks)], s=18,
               color=SCENARIO_COLOURS[TREATMENT], alpha=0.8, label="one task (mean over repetitions)", zorder=3)
    mean = summary.estimate
    if summary.ci_low is not None and summary.ci_high is not None:
        ax.errorbar([mean], [-0.4], xerr=[[mean - summary.ci_low], [summary.ci_high - mean]], fmt="D",
                    color="black", capsize=4, markersize=5, label="mean, 95 % cluster-bootstrap CI", zorder=4)
    else:
        ax.plot([mean], [-0.4], "D", color="black", markersize=5, label="mean", zorder=4)
        ax.text(0.99, 0.1, summary.ci_note or "", transform=ax.transAxes, ha="right", fontsize=8, color="#666666")


def differences_figure(analysis: Analysis) -> Figure:
    """One panel per metric: each task's difference, their mean and its 95 % cluster-bootstrap interval, and zero."""
    results = analysis.results
    figure = MplFigure(figsize=(7.5, 1.35 * len(results) + 0.4), layout="constrained")
    axes = figure.subplots(len(results), 1, squeeze=False)[:, 0]
    for ax, result in zip(axes, results, strict=True):
        _difference_axes(ax, result)
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        figure.legend(handles, labels, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    caption = (f"Task differences {TREATMENT} − {BASELINE} per metric: dots are tasks (each arm's mean over its "
               f"repetitions), the diamond is their mean with its cluster-bootstrap 95 % interval (seed "
               f"{analysis.seed}); exploratory.")
    return Figure("plot-differences", caption, svg_of(figure, "plot-differences"))


def _distribution_axes(ax: Axes, analysis: Analysis, index: int) -> None:
    metric = (INPUT, OUTPUT, TOOLS, WALL, CHARGED)[index]
    values = scenario_values(analysis, metric)
    for position, scenario in enumerate((BASELINE, TREATMENT)):
        points = [float(v) for v in values.get(scenario, [])]
        offsets = _jitter(len(points))
        ax.scatter([position + o for o in offsets], points, s=16, color=SCENARIO_COLOURS[scenario], alpha=0.8,
                   zorder=3)
        if points:
            ax.hlines(statistics.median(points), position - 0.3, position + 0.3, color="black", linewidth=1.2, zorder=4)
    labels = [f"{letter} (n = {len(values[scenario])})" for letter, scenario in (("R", BASELINE), ("D", TREATMENT))]
    ax.set_xticks([0, 1], labels, fontsize=7)
    if metric.kind == "count":
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(-0.6, 1.6)
    ax.set_title(f"{metric.label} ({metric.unit})", fontsize=9)


def distributions_figure(analysis: Analysis) -> Figure:
    """Per-scenario values of tokens, tool calls, wall time and charges, with the median as a bar."""
    figure = MplFigure(figsize=(10, 3.2), layout="constrained")
    axes = figure.subplots(1, 5, squeeze=False)[0]
    for index, ax in enumerate(axes):
        _distribution_axes(ax, analysis, index)
    figure.suptitle(f"R = {BASELINE}, D = {TREATMENT}", fontsize=8)
    caption = "Per-scenario distributions over completed attempts (dots are attempts, the bar is the median)."
    return Figure("plot-distributions", caption, svg_of(figure, "plot-distributions"))


def status_figure(analysis: Analysis) -> Figure:
    """Every attempt in execution order as a coloured cell (status), lettered R or D (scenario)."""
    attempts = analysis.study.attempts
    width = min(12.0, max(6.0, 0.3 * len(attempts) + 1.5))
    figure = MplFigure(figsize=(width, 2.0), layout="constrained")
    ax = figure.subplots()
    seen: dict[str, str] = {}
    for position, attempt in enumerate(attempts):
        colour = STATUS_COLOURS.get(attempt.status, OTHER_STATUS_COLOUR)
        seen.setdefault(attempt.status, colour)
        ax.bar(position, 1, width=0.9, color=colour, edgecolor="white")
        letter = {BASELINE: "R", TREATMENT: "D"}.get(attempt.scenario, "?")
        ax.text(position, 0.5, letter, ha="center", va="center", fontsize=7, color="white")
    ax.set_xlim(-0.6, max(len(attempts), 1) - 0.4)
    ax.set_yticks([])
    ax.set_xticks(range(len(attempts)), [str(a.index + 1) for a in attempts], fontsize=6)
    ax.set_xlabel("attempt (execution order); R = repository-only, D = doc-bridge-mcp", fontsize=8)
    handles = [Patch(color=colour, label=status) for status, colour in seen.items()]
    if handles:
        figure.legend(handles=handles, loc="outside upper center", ncol=min(len(handles), 7), fontsize=7,
                      frameon=False)
    caption = "Status strip: every attempt in execution order, blocked and failed ones included."
    return Figure("plot-status", caption, svg_of(figure, "plot-status"))


def all_figures(analysis: Analysis) -> tuple[Figure, ...]:
    """The three figures of the HTML report, in display order."""
    return (differences_figure(analysis), distributions_figure(analysis), status_figure(analysis))
