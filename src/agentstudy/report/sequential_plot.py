"""The e-value path of a sequential study (issue 35) as an inline SVG figure (HTML reports only).

One panel: the e-value after each completed task on a log axis, the efficacy bound ``1/alpha`` and the
futility floor as horizontal lines, the start at 1, and the look that stopped the study marked. Text sizes
and SVG handling are :mod:`agentstudy.report.plots`' (``TEXT_PT``, ``svg_of``).
"""

from __future__ import annotations

from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import MaxNLocator

from agentstudy.report.document import Figure
from agentstudy.report.model import Study
from agentstudy.report.plots import TEXT_PT, svg_of

KEY = "plot-sequential"


def sequential_figures(study: Study) -> tuple[Figure, ...]:
    """The e-value path figure of a sequential ledger with at least one look; ``()`` otherwise."""
    record = study.sequential
    if record is None or not record.looks:
        return ()
    tasks = [0, *(look.tasks for look in record.looks)]
    values = [1.0, *(look.e_value for look in record.looks)]
    threshold = 1 / record.alpha
    figure = MplFigure(figsize=(8, 3.4), layout="constrained")
    ax = figure.subplots()
    ax.plot(tasks, values, marker="o", color="#4c72b0", label="e-value after each task")
    ax.axhline(threshold, color="#1b9e77", linestyle="--", label=f"efficacy bound {threshold:g} (1/alpha)")
    if record.futility is not None:
        ax.axhline(record.futility, color="#d95f02", linestyle=":", label=f"futility floor {record.futility:g}")
    ax.axhline(1.0, color="#999999", linewidth=0.8)
    if record.stop_reason is not None:
        ax.plot([tasks[-1]], [values[-1]], marker="*", markersize=14, color="#e7298a", linestyle="none",
                label=f"stop: {record.stop_reason}")
    ax.set_yscale("log")
    low = min([*values, record.futility or 1.0, 1.0]) / 1.5
    ax.set_ylim(low, max([*values, threshold]) * 1.5)
    ax.set_xlim(0, max(record.max_tasks, tasks[-1]) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("tasks completed", fontsize=TEXT_PT)
    ax.set_ylabel("e-value (log scale)", fontsize=TEXT_PT)
    ax.tick_params(labelsize=TEXT_PT)
    ax.legend(fontsize=TEXT_PT, frameon=False, loc="upper left")
    caption = (f"The sequential e-value on {record.metric} after each completed task (of at most "
               f"{record.max_tasks}); the study stops when it reaches {threshold:g}, falls to the futility floor, "
               "or when the bound is out of reach. Valid however often it is looked at.")
    return (Figure(KEY, caption, svg_of(figure, KEY)),)


__all__ = ["KEY", "sequential_figures"]
