"""Reports never crash on what the runner writes (issue 40 break 12): an interval that misses its own estimate
by a floating-point step (as 12,500 equal task differences gave) or has a bound that is not finite is clipped
or left out of the figure, never a matplotlib ``'xerr' must not contain negative values``."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from bench.large_ledger import write_large_ledger

from agentstudy.report.analysis import analyse
from agentstudy.report.error_bars import error_bar
from agentstudy.report.load import load_study
from agentstudy.report.plots import differences_figure


@pytest.mark.parametrize(("estimate", "low", "high", "bar"), [
    (1.0, 0.5, 2.0, (0.5, 1.0)),
    (1.0, 1.0, 1.0, (0.0, 0.0)),                       # zero width
    (0.30000000000000004, 0.3 + 1e-15, 0.5, (0.0, 0.2)),  # the low end above the estimate by rounding
    (2.0, 1.0, 2.0 - 1e-12, (1.0, 0.0)),              # the high end below it
    (1.0, 2.0, 0.5, (0.5, 1.0)),                       # ends given in the wrong order
    (1.0, None, 2.0, None), (1.0, -math.inf, 2.0, None), (math.nan, 0.0, 1.0, None),
])
def test_an_interval_becomes_non_negative_bars_or_none(estimate: float, low: float | None, high: float | None,
                                                       bar: tuple[float, float] | None) -> None:
    got = error_bar(estimate, low, high)
    if bar is None:
        assert got is None
    else:
        assert got is not None and got == pytest.approx(bar) and min(got) >= 0


def test_the_differences_figure_draws_an_interval_that_misses_its_estimate(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    write_large_ledger(path, 40)
    analysis = analyse(load_study(path))
    results = []
    for result in analysis.results:
        summary = result.task_level
        if summary.estimate is not None:  # the interval just above the estimate, as rounding left it
            above = summary.estimate + abs(summary.estimate) * 1e-15 + 1e-300
            summary = dataclasses.replace(summary, ci_low=above, ci_high=above)
        results.append(dataclasses.replace(result, task_level=summary))
    figure = differences_figure(dataclasses.replace(analysis, results=tuple(results)))
    assert "<svg" in figure.svg
    assert json.dumps(figure.svg)  # a whole figure, not a traceback
