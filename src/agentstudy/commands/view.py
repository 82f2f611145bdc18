"""How a run looks in a terminal: live progress and a final summary table (rich, stderr).

Progress is shown only when stdout is a terminal; scripts get the one JSON summary line on
stdout and nothing else. When stderr is a terminal too, one live bar (issue 19, item 6): done /
total, running now, spend vs cap, elapsed and ETA, with each settled attempt's line printed
above it; when stderr is not a terminal (``2> run.log``), the plain lines: one when an attempt
starts, one when it settles. Neither view ever shows an answer or a credential.
"""

from __future__ import annotations

import sys
import time
from decimal import Decimal

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
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
        elapsed = time.monotonic() - self._started
        self._console.print(settled_line(attempt, status, tool_calls, charged_usd, spent_usd, cap_usd, elapsed),
                            highlight=False)


def settled_line(attempt: AttemptProgress, status: str, tool_calls: int, charged_usd: Decimal, spent_usd: Decimal,
                 cap_usd: Decimal, elapsed_s: float) -> str:
    """The rich markup of a settled attempt's line (USD; seconds)."""
    colour = "green" if status == "completed" else "red"
    return (f"[bold][{attempt.index}/{attempt.total}][/bold] [{colour}]{status}[/{colour}] in {elapsed_s:.1f} s, "
            f"{tool_calls} tool calls, charged {charged_usd:.6f} USD; spent {spent_usd:.6f} of {cap_usd:.2f} USD")


class BarProgress:
    """One live rich bar on a terminal (issue 19, item 6): done/total, running now, spend vs cap, elapsed, ETA.

    Each settled attempt's line (as :class:`ConsoleProgress` prints it) goes above the bar. The
    bar starts with the first attempt and ends at ``finish()`` (the runners call it when the run
    is over). Attempts are tracked by index, so several may be running at once.
    """

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            TextColumn("[bold]attempts[/bold]"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[running]}"), TextColumn("{task.fields[spend]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self._task: TaskID | None = None
        self._running: dict[int, tuple[AttemptProgress, float]] = {}
        self._spend = "spent 0.000000 USD"

    def _running_text(self) -> str:
        now = [f"{a.task_id} rep {a.repetition} {a.scenario}" for a, _ in self._running.values()]
        return f"running {len(now)}" + (f": {', '.join(now)}" if now else "")

    def attempt_started(self, attempt: AttemptProgress) -> None:
        """Count the attempt as running (its reservation is on disk); start the bar with the first one."""
        if self._task is None:
            self.progress.start()
            self._task = self.progress.add_task("attempts", total=attempt.total, running="", spend=self._spend)
        self._running[attempt.index] = (attempt, time.monotonic())
        self.progress.update(self._task, running=self._running_text(), spend=self._spend)

    def attempt_settled(
        self, attempt: AttemptProgress, status: str, tool_calls: int, charged_usd: Decimal, spent_usd: Decimal,
        cap_usd: Decimal,
    ) -> None:
        """Advance the bar by one, update spend vs cap, and print the attempt's line above the bar."""
        _, started = self._running.pop(attempt.index, (attempt, time.monotonic()))
        self._spend = f"spent {spent_usd:.6f} of {cap_usd:.2f} USD"
        self.progress.console.print(settled_line(attempt, status, tool_calls, charged_usd, spent_usd, cap_usd,
                                                 time.monotonic() - started), highlight=False)
        if self._task is not None:
            self.progress.update(self._task, advance=1, running=self._running_text(), spend=self._spend)

    def finish(self) -> None:
        """End the live bar (idempotent); what it showed last stays on the screen."""
        if self._task is not None:
            self.progress.stop()
            self._task = None


def progress_for_terminal() -> RunProgress:
    """Silence unless stdout is a terminal; then the live bar when stderr is a terminal too, else plain lines."""
    if not sys.stdout.isatty():
        return SilentProgress()
    if sys.stderr.isatty():
        return BarProgress(Console(stderr=True))
    return ConsoleProgress(Console(stderr=True))


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
    table.add_row("full run (x18)", projection)
    table.add_row("ledger", line["ledger"])
    Console(stderr=True).print(table)
