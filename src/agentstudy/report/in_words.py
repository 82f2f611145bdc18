"""A task-level difference in words ("1,250 more input tokens per task with doc-bridge-mcp"): what the glance
table, the verdict sentence and the per-agent table all say the same way. Pure: no IO.
"""

from __future__ import annotations

from decimal import Decimal

from agentstudy.report import fmt
from agentstudy.report.analysis import CHARGED, CORRECTNESS, INPUT, TOOLS, WALL, Metric
from agentstudy.report.inference import TaskLevelSummary
from agentstudy.report.model import TREATMENT

_WORDS: dict[str, tuple[str, str, str]] = {
    # metric key: (what is counted, word when the treatment has more, word when less)
    INPUT.key: ("input tokens", "more", "fewer"),
    TOOLS.key: ("tool calls", "more", "fewer"),
    WALL.key: ("ms of wall time", "more", "less"),
    CHARGED.key: ("USD charged", "more", "less"),
    CORRECTNESS.key: ("correctness score", "higher", "lower"),
}


def magnitude(value: float, metric: Metric) -> str:
    """``|value|`` as the glance writes it: counts with thousands separators (one decimal when not whole),
    USD to 6 decimals, scores to 3."""
    size = abs(value)
    if metric.kind == "usd":
        return fmt.usd(Decimal(repr(size)))
    if metric.kind == "score":
        return f"{size:.3f}"
    whole = round(size)
    return f"{whole:,}" if abs(size - whole) < 0.05 else f"{size:,.1f}"


def direction(summary: TaskLevelSummary, metric: Metric, treatment: str = TREATMENT) -> str:
    """The task-level difference in words, e.g. ``"1,250 more input tokens per task with doc-bridge-mcp"``,
    ``"no difference in tool calls"``, or ``"not computable: <reason>"`` (``treatment`` is the arm's label)."""
    noun, more, less = _WORDS[metric.key]
    if summary.estimate is None:
        return f"not computable: {summary.estimate_note or summary.ci_note or 'no task has values in both arms'}"
    shown = magnitude(summary.estimate, metric)
    if float(shown.replace(",", "")) == 0:
        return f"no difference in {metric.label} (rounded)"
    word = more if summary.estimate > 0 else less
    if metric.kind == "usd":
        return f"{shown} {noun.replace('charged', word + ' charged')} per task with {treatment}"
    if metric.key == WALL.key:
        return f"{shown} ms {word} wall time per task with {treatment}"
    return f"{shown} {word} {noun} per task with {treatment}"
