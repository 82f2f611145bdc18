"""The report's plots as inline SVG (matplotlib's SVG canvas, no display, no pyplot).

Three figures (issue 17, item 4): the per-task differences per metric (a forest panel per metric:
a row per task, the mean over tasks with its test-inverted interval, zero marked, the axis
labelled with its unit and which side favours which arm, integer ticks for counts), the
per-scenario distributions (axes from zero, identical values side by side), and a status strip
of every attempt in execution order. Every text is at least ``TEXT_PT`` (12 px rendered). Text
stays text in the SVG (``svg.fonttype = none``) to keep the page small; every ``id`` is prefixed
with the figure's key so several SVGs share one HTML page without clashing, and the output is
deterministic (fixed hash salt, no date).
"""

from __future__ import annotations

import io
import re
import statistics
from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure as MplFigure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from agentstudy.report.analysis import (
    CHARGED,
    INPUT,
    OUTPUT,
    TOOLS,
    WALL,
    Analysis,
    Metric,
    MetricResult,
    scenario_values,
)
from agentstudy.report.document import Figure
from agentstudy.report.error_bars import error_bar
from agentstudy.report.glance import favours
from agentstudy.report.model import BASELINE, TREATMENT

SCENARIO_COLOURS = {BASELINE: "#4c72b0", TREATMENT: "#dd8452"}
STATUS_COLOURS = {
    "completed": "#1b9e77", "failed": "#d95f02", "timed-out": "#7570b3", "budget-exceeded": "#e7298a",
    "invalid-setup": "#e6ab02", "invalid-cost": "#a6761d", "incomplete": "#666666",
}
OTHER_STATUS_COLOUR = "#bbbbbb"
TEXT_PT = 9
"""Every text of every plot, in points: a figure shown at its own size renders 1 pt as 4/3 px, so 9 pt is
12 px, above the 11 px floor of issue 17 (figures are at most 11 in wide, under the page's column)."""
DISTRIBUTION_METRICS = (INPUT, OUTPUT, TOOLS, WALL, CHARGED)
_ID = re.compile(r' id="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]+)')


def _jitter(count: int) -> list[float]:
    """Deterministic offsets in [-0.2, 0.2] that spread ``count`` points (no randomness)."""
    if count <= 1:
        return [0.0] * count
    return [-0.2 + 0.4 * i / (count - 1) for i in range(count)]


LABELLED_TASKS = 60
"""Above this many tasks the forest panels drop the task labels and keep a fixed height (issue 29, scale)."""
LETTERED_ATTEMPTS = 200
"""Above this many attempts the status strip is one image, unlettered (issue 29, scale)."""
RASTER_POINTS = 500
"""Scatters with more points than this are embedded as one image, not one SVG element per point."""


def spread_identical(values: Sequence[float], width: float = 0.25) -> list[float]:
    """Per value, an offset that spreads identical values side by side in [-width, width] (distinct values get
    0), so identical points never hide each other; deterministic."""
    groups: dict[float, list[int]] = {}
    for index, value in enumerate(values):
        groups.setdefault(value, []).append(index)
    offsets = [0.0] * len(values)
    for members in groups.values():
        for index, offset in zip(members, _jitter(len(members)), strict=True):
            offsets[index] = offset * width / 0.2
    return offsets


def direction_label(metric: Metric, names: Mapping[str, str] | None = None, better_when: str | None = None) -> str:
    """Which side of a difference axis favours which arm: ``"← favours doc-bridge-mcp · favours
    repository-only →"`` for the costs (lower favours the treatment), mirrored for correctness;
    ``names`` maps a scenario to the arm's name shown (a study file's labels, issue 18); ``better_when`` is the
    declared primary's direction when ``metric`` is the primary (issue 41), else the metric's default."""
    low, high = (TREATMENT, BASELINE) if (better_when or favours(metric)) == "lower" else (BASELINE, TREATMENT)
    shown = names or {}
    return f"← favours {shown.get(low, low)} · favours {shown.get(high, high)} →"


def _names(analysis: Analysis) -> dict[str, str]:
    return {scenario: analysis.study.arm_name(scenario) for scenario in (BASELINE, TREATMENT)}


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


def _difference_axes(ax: Axes, result: MetricResult, tasks: Sequence[str], show_tasks: bool,
                     names: Mapping[str, str], better_when: str | None = None) -> None:
    """A forest panel: one row per task (its difference of arm means), the mean with its interval below."""
    summary, metric = result.task_level, result.metric
    rows = len(tasks)
    ax.axvline(0, color="#888888", linestyle="--", linewidth=0.8)
    ax.set_ylim(rows + 0.7, -0.7)
    if rows > LABELLED_TASKS:
        ax.set_yticks([rows], ["mean"] if show_tasks else [""], fontsize=TEXT_PT)
    else:
        ax.set_yticks(range(rows + 1), [*tasks, "mean"] if show_tasks else [""] * (rows + 1), fontsize=TEXT_PT)
    ax.set_title(f"{metric.label}, {summary.design}", fontsize=TEXT_PT, loc="left")
    side = direction_label(metric, names, better_when)
    ax.set_xlabel(f"{names[TREATMENT]} − {names[BASELINE]} ({metric.unit})\n{side}", fontsize=TEXT_PT)
    ax.tick_params(axis="x", labelsize=TEXT_PT)
    if metric.kind == "count":
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
    if summary.estimate is None:
        ax.text(0.5, 0.5, "no task in both arms", transform=ax.transAxes, ha="center", va="center", color="#666666",
                fontsize=TEXT_PT)
        ax.set_xlim(-1, 1)
        return
    by_task = {e.task_id: e.difference for e in summary.task_effects}
    shown = [(row, by_task[t]) for row, t in enumerate(tasks) if t in by_task]
    ax.scatter([d for _, d in shown], [row for row, _ in shown], s=22 if rows <= LABELLED_TASKS else 6,
               color=SCENARIO_COLOURS[TREATMENT], zorder=3, rasterized=len(shown) > RASTER_POINTS,
               label="one task: mean over its repetitions, per arm, then the difference")
    mean = summary.estimate
    bar = error_bar(mean, summary.ci_low, summary.ci_high)  # clipped to contain the estimate (issue 40)
    if bar is not None:
        ax.errorbar([mean], [rows], xerr=[[bar[0]], [bar[1]]], fmt="D",
                    color="black", capsize=4, markersize=5,
                    label="mean over tasks, interval of the inverted test of the mean",
                    zorder=4)
    else:
        ax.plot([mean], [rows], "D", color="black", markersize=5, label="mean over tasks", zorder=4)
    low = min([0.0, *(d for _, d in shown), mean - bar[0] if bar is not None else mean])
    high = max([0.0, *(d for _, d in shown), mean + bar[1] if bar is not None else mean])
    pad = (high - low) * 0.12 or (1.0 if metric.kind == "count" else abs(mean) * 0.5 or 0.1)
    if metric.kind == "count":
        pad = max(pad, 1.0)
    ax.set_xlim(low - pad, high + pad)


def _task_order(analysis: Analysis) -> list[str]:
    order: dict[str, None] = {}
    for attempt in analysis.study.attempts:
        order.setdefault(attempt.task_id, None)
    return list(order)


def differences_figure(analysis: Analysis) -> Figure:
    """The per-task differences (issue 17): one forest panel per metric, a row per task (ids on the left)
    with its difference of arm means, the mean over tasks with its test-inverted interval, zero
    marked, the axis labelled with the unit and which side favours which arm."""
    results = analysis.results
    tasks = _task_order(analysis)
    columns = min(2, max(len(results), 1))
    lines = -(-len(results) // columns)
    height = lines * (0.22 * (min(len(tasks), LABELLED_TASKS) + 1) + 1.45) + 0.5
    figure = MplFigure(figsize=(11, height), layout="constrained")
    grid = figure.subplots(lines, columns, squeeze=False)
    axes = [ax for row in grid for ax in row]
    for index, (ax, result) in enumerate(zip(axes, results, strict=False)):
        primary = analysis.plan.primary
        _difference_axes(ax, result, tasks, index % columns == 0, _names(analysis),
                         primary.better_when if result.metric.key == primary.metric else None)
    for ax in axes[len(results):]:
        ax.set_visible(False)
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        figure.legend(handles, labels, loc="outside lower center", ncol=len(handles), fontsize=TEXT_PT,
                      frameon=False)
    names = _names(analysis)
    caption = (f"Per-task differences {names[TREATMENT]} − {names[BASELINE]} per metric: each row is a task "
               f"(each arm's mean over its repetitions, then their difference); the diamond is the mean over "
               f"tasks with its {100 * (1 - analysis.alpha):g} % interval (the test of the mean inverted; none drawn "
               "when unbounded).")
    return Figure("plot-differences", caption, svg_of(figure, "plot-differences"))


def _distribution_axes(ax: Axes, analysis: Analysis, metric: Metric) -> None:
    values = scenario_values(analysis, metric)
    for position, scenario in enumerate((BASELINE, TREATMENT)):
        points = [float(v) for v in values.get(scenario, [])]
        offsets = spread_identical(points)
        ax.scatter([position + o for o in offsets], points, s=16, color=SCENARIO_COLOURS[scenario], alpha=0.8,
                   zorder=3, rasterized=len(points) > RASTER_POINTS)
        if points:
            ax.hlines(statistics.median(points), position - 0.32, position + 0.32, color="black", linewidth=1.2,
                      zorder=4)
    labels = [f"{analysis.study.arm_name(scenario)}\n(n = {len(values[scenario])})"
              for scenario in (BASELINE, TREATMENT)]
    ax.set_xticks([0, 1], labels, fontsize=TEXT_PT)
    ax.tick_params(axis="y", labelsize=TEXT_PT)
    if metric.kind == "count":
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    highest = max([float(v) for vs in values.values() for v in vs], default=0.0)
    ax.set_ylim(0, max(ax.get_ylim()[1], highest * 1.08) or 1)
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylabel(f"{metric.label} per attempt ({metric.unit})", fontsize=TEXT_PT)
    ax.set_title(metric.label, fontsize=TEXT_PT)


def distributions_figure(analysis: Analysis) -> Figure:
    """Per-scenario values of tokens, tool calls, wall time and charges (axes from zero, identical values side
    by side), with the median as a bar."""
    figure = MplFigure(figsize=(11, 6.4), layout="constrained")
    axes = [ax for row in figure.subplots(2, 3, squeeze=False) for ax in row]
    for ax, metric in zip(axes, DISTRIBUTION_METRICS, strict=False):
        _distribution_axes(ax, analysis, metric)
    for ax in axes[len(DISTRIBUTION_METRICS):]:
        ax.set_visible(False)
    caption = ("Per-scenario distributions over completed attempts (dots are attempts, identical values side by side; "
               "the bar is the median; every axis starts at zero).")
    return Figure("plot-distributions", caption, svg_of(figure, "plot-distributions"))


def status_figure(analysis: Analysis) -> Figure:
    """Every attempt in execution order as a coloured cell (status), lettered R or D (scenario)."""
    attempts = analysis.study.attempts
    width = min(12.0, max(6.0, 0.3 * len(attempts) + 1.5))
    figure = MplFigure(figsize=(width, 2.0), layout="constrained")
    ax = figure.subplots()
    seen: dict[str, str] = {}
    colours = [STATUS_COLOURS.get(attempt.status, OTHER_STATUS_COLOUR) for attempt in attempts]
    for attempt, colour in zip(attempts, colours, strict=True):
        seen.setdefault(attempt.status, colour)
    if len(attempts) > LETTERED_ATTEMPTS:
        cells = np.array([[to_rgb(colour) for colour in colours]])
        ax.imshow(cells, aspect="auto", interpolation="nearest", extent=(-0.5, len(attempts) - 0.5, 0, 1))
    else:
        for position, (attempt, colour) in enumerate(zip(attempts, colours, strict=True)):
            ax.bar(position, 1, width=0.9, color=colour, edgecolor="white")
            letter = {BASELINE: "R", TREATMENT: "D"}.get(attempt.scenario, "?")
            ax.text(position, 0.5, letter, ha="center", va="center", fontsize=TEXT_PT, color="white")
    ax.set_xlim(-0.6, max(len(attempts), 1) - 0.4)
    ax.set_yticks([])
    step = max(1, -(-len(attempts) // 40))
    ax.set_xticks(range(0, len(attempts), step), [str(a.index + 1) for a in attempts][::step], fontsize=TEXT_PT)
    names = _names(analysis)
    ax.set_xlabel(f"attempt (execution order); R = {names[BASELINE]}, D = {names[TREATMENT]}", fontsize=TEXT_PT)
    handles = [Patch(color=colour, label=status) for status, colour in seen.items()]
    if handles:
        figure.legend(handles=handles, loc="outside upper center", ncol=min(len(handles), 7), fontsize=TEXT_PT,
                      frameon=False)
    caption = "Status strip: every attempt in execution order, blocked and failed ones included."
    if len(attempts) > LETTERED_ATTEMPTS:
        caption += f" With more than {LETTERED_ATTEMPTS} attempts the cells are not lettered by arm."
    return Figure("plot-status", caption, svg_of(figure, "plot-status"))


def all_figures(analysis: Analysis) -> tuple[Figure, ...]:
    """The three figures of the HTML report, in display order."""
    return (differences_figure(analysis), distributions_figure(analysis), status_figure(analysis))
