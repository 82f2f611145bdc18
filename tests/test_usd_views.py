"""Every view of a run's spend prints the same digits (issue 17 item 8), even on a rounding tie.

Measured before: the last progress line said 0.048598 (``Decimal`` half-even) where the summary
table said 0.048599 (float formatting) for a spend of 0.0485985 USD.
"""

from __future__ import annotations

import io
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from rich.console import Console

from agentstudy.commands.view import ConsoleProgress, print_summary_table
from agentstudy.pricing.budget import Budget
from agentstudy.runners.progress import AttemptProgress
from agentstudy.runners.summary import summarize


@pytest.mark.parametrize(("spent", "shown"), [
    (Decimal("0.0485985"), "0.048599"),  # the measured tie: half-up
    (Decimal("0.0000005"), "0.000001"),
    (Decimal("0.0428694"), "0.042869"),
])
def test_progress_table_and_json_line_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spent: Decimal, shown: str
) -> None:
    lines = io.StringIO()
    ConsoleProgress(Console(file=lines, width=400)).attempt_settled(
        AttemptProgress(index=36, total=36, task_id="t", scenario="repository-only", repetition=3),
        "completed", 2, spent, spent, Decimal("1.00"))
    summary = summarize("awaiting-adjudication", "pilot", 36, [], Budget(cap=Decimal("1.00"), spent=spent),
                        tmp_path / "ledger.json")
    print_summary_table(summary)
    table = capsys.readouterr().err
    assert re.findall(r"charged (\d+\.\d+) USD; spent (\d+\.\d+) of 1.00 USD", lines.getvalue()) == [(shown, shown)]
    assert f"{shown} USD of a 1.00 USD cap" in table
    assert Decimal(json.dumps(summary.line["spentUsd"])) == spent, "the JSON line's text is the exact spend"


def test_a_full_runs_table_does_not_project_a_full_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fresh user's 36-attempt run printed "full run (x18) │ not applicable"."""
    summary = summarize("awaiting-adjudication", "full", 36, [], Budget(cap=Decimal("5"), spent=Decimal("0.04")),
                        tmp_path / "ledger.json")
    print_summary_table(summary)
    table = capsys.readouterr().err
    assert "x18" not in table and re.search(r"│ full run +│ this is the full run", table), table
