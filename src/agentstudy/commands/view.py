"""How a run looks in a terminal: a live progress line per attempt and a final summary table (rich, stderr).

Progress is shown only when stdout is a terminal; scripts get the one JSON summary line on
stdout and nothing else. Neither view ever shows an answer or a credential.
"""

from __future__ import annotations

import sys
import time
from decimal import Decimal

from rich.console import Console
from rich.table import Table

from agentstudy.runners.progress import AttemptProgress, RunProgress, SilentProgress
from agentstudy.runners.summary import RunSummary


class ConsoleProgress:
    """Prints one line when an attempt starts and one when it settles: index, scenario, elapsed, spend vs cap."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._started = time.monotonic()

    def attempt_started(self, attempt: AttemptProgress) -> None:
        """Announce the attempt (its reservation is already on disk)."""
        self._started = time.monotonic()
        self._console.print(
            f"[bold][{attempt.index}/{attempt.total}][/bold] {attempt.task_id} rep {attempt.repetition} "
            f"[cyan]{attempt.scenario}[/cyan] running…",
            highlight=False,
        )

    def attempt_settled(
        self,
        attempt: AttemptProgress,
        status: str,
        tool_calls: int,
        charged_usd: Decimal,
        spent_usd: Decimal,
        cap_usd: Decimal,
    ) -> None:
        """Report the settled attempt."""
        colour = "green" if status == "completed" else "red"
        elapsed = time.monotonic() - self._started
        self._console.print(
            f"[bold][{attempt.index}/{attempt.total}][/bold] [{colour}]{status}[/{colour}] in {elapsed:.1f} s, "
            f"{tool_calls} tool calls, charged {charged_usd:.6f} USD; spent {spent_usd:.6f} of {cap_usd:.2f} USD",
            highlight=False,
        )


def progress_for_terminal() -> RunProgress:
    """A console progress on stderr when stdout is a terminal, otherwise silence."""
    if sys.stdout.isatty():
        return ConsoleProgress(Console(stderr=True))
    return SilentProgress()


def print_summary_table(summary: RunSummary, note: str = "") -> None:
    """Print the run's summary as a small table on stderr."""
    line = summary.line
    table = Table(title=f"run {line['status']}" + (f" ({note})" if note else ""), show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("attempts", f"{line['attempts']} of {line['plannedAttempts']} planned ({line['mode']})")
    table.add_row("by status", ", ".join(f"{k}: {v}" for k, v in line["byStatus"].items()) or "none")
    table.add_row("by scenario", ", ".join(f"{k}: {v}" for k, v in line["byScenario"].items()) or "none")
    table.add_row("tokens", f"input {line['inputTokens']}, output {line['outputTokens']}")
    table.add_row("tool calls", str(line["toolCalls"]))
    table.add_row("spent", f"{line['spentUsd']:.6f} USD of a {line['capUsd']:.2f} USD cap")
    extrapolated = line["extrapolatedFullRunUsd"]
    projection = f"{extrapolated:.6f} USD, not an upper bound" if extrapolated is not None else "not applicable"
    table.add_row(f"full run (x{line.get('fullRunFactor', '18')})", projection)
    table.add_row("ledger", line["ledger"])
    Console(stderr=True).print(table)
