"""How a run looks in a terminal: live progress, a final summary table, the probed tools (rich, stderr).

USD are shown by ``pricing.sums.display_usd`` (half-up, 6 decimals), the rule of every report, so the
last progress line, the table, the JSON line and the report agree on a run's spend (issue 17 item 8).

Progress is shown only when stdout is a terminal; scripts get the one JSON summary line on
stdout and nothing else. When stderr is a terminal too, one live bar (issue 19, item 6): done /
total, running now, spend vs cap, elapsed and ETA, with each settled attempt's line printed
above it; when stderr is not a terminal (``2> run.log``), the plain lines: one when an attempt
starts, one when it settles. Neither view ever shows an answer or a credential.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentstudy.protocol.arm_names import arm_label

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

    from agentstudy.runners.progress import AttemptProgress, RunProgress
    from agentstudy.runners.summary import RunSummary


class ConsoleProgress:
    """Prints one line when an attempt starts and one when it settles: index, arm (``name``: its label), elapsed,
    spend vs cap."""

    def __init__(self, console: Console, name: Callable[[str], str] = arm_label) -> None:
        self._console = console
        self._name = name
        self._started: dict[int, float] = {}  # by attempt index: several may run at once (--concurrency)

    def worker_excluded(self, node: str, reason: str) -> None:
        """Say that a Ray worker node was excluded by the worker preflight, and why (issue 20)."""
        self._console.print(f"[yellow]worker {node[:12]} excluded[/yellow]: {reason}", highlight=False)

    def attempt_started(self, attempt: AttemptProgress) -> None:
        """Announce the attempt (its reservation is already on disk)."""
        self._started[attempt.index] = time.monotonic()
        self._console.print(
            f"[bold][{attempt.index}/{attempt.total}][/bold] {attempt.task_id} rep {attempt.repetition} "
            f"[cyan]{self._name(attempt.scenario)}[/cyan] running…",
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
        now = time.monotonic()
        elapsed = now - self._started.pop(attempt.index, now)
        self._console.print(settled_line(attempt, status, tool_calls, charged_usd, spent_usd, cap_usd, elapsed),
                            highlight=False)


def settled_line(attempt: AttemptProgress, status: str, tool_calls: int, charged_usd: Decimal, spent_usd: Decimal,
                 cap_usd: Decimal, elapsed_s: float) -> str:
    """The rich markup of a settled attempt's line (USD; seconds)."""
    from agentstudy.pricing.sums import display_usd
    colour = "green" if status == "completed" else "red"
    return (f"[bold][{attempt.index}/{attempt.total}][/bold] [{colour}]{status}[/{colour}] in {elapsed_s:.1f} s, "
            f"{tool_calls} tool calls, charged {display_usd(charged_usd)} USD; spent {display_usd(spent_usd)} of "
            f"{display_usd(cap_usd, places=2)} USD")


class BarProgress:
    """One live rich bar on a terminal (issue 19, item 6): done/total, running now, spend vs cap, elapsed, ETA.

    Each settled attempt's line (as :class:`ConsoleProgress` prints it) goes above the bar. The
    bar starts with the first attempt and ends at ``finish()`` (the runners call it when the run
    is over). Attempts are tracked by index, so several may be running at once.
    """

    def __init__(self, console: Console, name: Callable[[str], str] = arm_label) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        self._name = name  # an arm's label (protocol.arm_names)
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
        now = [f"{a.task_id} rep {a.repetition} {self._name(a.scenario)}" for a, _ in self._running.values()]
        return f"running {len(now)}" + (f": {', '.join(now)}" if now else "")

    def worker_excluded(self, node: str, reason: str) -> None:
        """Say that a Ray worker node was excluded by the worker preflight, and why (issue 20)."""
        self.progress.console.print(f"[yellow]worker {node[:12]} excluded[/yellow]: {reason}", highlight=False)

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
        from agentstudy.pricing.sums import display_usd
        _, started = self._running.pop(attempt.index, (attempt, time.monotonic()))
        self._spend = f"spent {display_usd(spent_usd)} of {display_usd(cap_usd, places=2)} USD"
        self.progress.console.print(settled_line(attempt, status, tool_calls, charged_usd, spent_usd, cap_usd,
                                                 time.monotonic() - started), highlight=False)
        if self._task is not None:
            self.progress.update(self._task, advance=1, running=self._running_text(), spend=self._spend)

    def finish(self) -> None:
        """End the live bar (idempotent); what it showed last stays on the screen."""
        if self._task is not None:
            self.progress.stop()
            self._task = None


def progress_for_terminal(name: Callable[[str], str] = arm_label) -> RunProgress:
    """Silence unless stdout is a terminal; then the live bar when stderr is a terminal too, else plain lines;
    ``name`` labels an attempt's arm (``protocol.arm_names.arm_label`` with the run's labels and server)."""
    from rich.console import Console

    from agentstudy.runners.progress import SilentProgress
    if not sys.stdout.isatty():
        return SilentProgress()
    if sys.stderr.isatty():
        return BarProgress(Console(stderr=True), name)
    return ConsoleProgress(Console(stderr=True), name)


def print_summary_table(summary: RunSummary, note: str = "") -> None:
    """Print the run's summary as a small table on stderr; its title carries ``note``, else the line's own
    (a rehearsal's "rehearsal: no real money")."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table

    from agentstudy.pricing.sums import display_usd, usd_from_json
    from agentstudy.protocol.arm_names import server_label
    line = summary.line
    note = note or line.get("note", "")
    table = Table(title=f"run {line['status']}" + (f" ({note})" if note else ""), show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("attempts", f"{line['attempts']} of {line['plannedAttempts']} planned ({line['mode']})")
    if isinstance(line.get("sequential"), dict):
        table.add_row("sequential stop", sequential_text(line["sequential"]))
    table.add_row("by status", ", ".join(f"{k}: {v}" for k, v in line["byStatus"].items()) or "none")
    server = line.get("mcpServer") if isinstance(line.get("mcpServer"), str) else None
    def name(scenario: str) -> str:
        return arm_label(scenario, line.get("armLabels"), server)
    table.add_row("by arm", ", ".join(f"{name(k)}: {v}" for k, v in line["byScenario"].items()) or "none")
    if line.get("mcpServer"):
        table.add_row("server studied", str(line["mcpServer"]))
    def count(value: Any) -> str:
        return "unknown" if value is None else str(value)
    table.add_row("tokens", f"input {count(line['inputTokens'])}, output {count(line['outputTokens'])}"
                  + ("" if line.get("usageComplete", True) else " (usage incomplete)"))
    table.add_row("tool calls", str(line["toolCalls"]))
    spent, cap = usd_from_json(line["spentUsd"]), usd_from_json(line["capUsd"])
    notional = " notional USD (rehearsal: nothing was paid)" if line.get("rehearsal") else " USD"
    table.add_row("spent", f"{display_usd(spent)}{notional} of a {display_usd(cap, places=2)} USD cap")
    extrapolated = line["extrapolatedFullRunUsd"]
    projection = (f"{display_usd(usd_from_json(extrapolated))} USD, not an upper bound" if extrapolated is not None
                  else "not applicable")
    factor = line.get("fullRunFactor", 18)  # a line without the key is the seed's pilot (x 18)
    table.add_row(f"full run (x{factor})" if factor is not None else "full run",
                  "this is the full run" if line.get("mode") == "full" else projection)
    if line.get("reservationRule"):
        table.add_row("reservation rule", reservation_rule_text(line))
    treatment = line.get("treatment")
    if isinstance(treatment, dict) and treatment.get("treatmentAttempts"):
        table.add_row("treatment", f"{server_label(server)} used in {treatment['attemptsUsingServer']} of "
                                   f"{treatment['treatmentAttempts']} treatment attempts "
                                   f"({treatment['serverCalls']} calls)")
    control = treatment.get("control") if isinstance(treatment, dict) else None
    if isinstance(control, dict) and control.get("server"):  # the control arm's own server (issue 44)
        table.add_row("control server", f"{control['server']} used in {control.get('attemptsUsingServer')} of "
                                        f"{control.get('attempts')} control attempts ({control.get('serverCalls')} "
                                        "calls)")
    table.add_row("ledger", line["ledger"])
    console = Console(stderr=True)
    console.print(table)
    if isinstance(treatment, dict) and treatment.get("warning"):
        whose = "control arm's server" if treatment.get("notDeliveredArm") == "control" else "treatment"
        console.print(Panel(str(treatment["warning"]), title=f"WARNING: {whose} not delivered", style="bold red"))
    stopped = line.get("stoppedBy")
    if isinstance(stopped, dict):
        console.print(stopped_line(stopped, name), markup=False, highlight=False, soft_wrap=True)


def sequential_text(sequential: dict[str, Any]) -> str:
    """A sequential run's stop in words (issue 42), from the summary line's ``sequential`` block: "efficacy after
    7 of 9 tasks (e-value 21.3 >= 20; the treatment did better)", or "no stop decided after 3 of 9 tasks"."""
    reason, done, most = sequential.get("stopReason"), sequential.get("tasksCompleted"), sequential.get("maxTasks")
    value, bound = sequential.get("eValue"), sequential.get("threshold")
    evidence = f"e-value {value:.3g}" + (f" >= {bound:g}" if reason == "efficacy" and bound is not None else
                                         f", bound {bound:g}" if bound is not None else "") \
        if isinstance(value, float | int) else "no look yet"
    words = {"efficacy": "efficacy", "futility": "futility (the bound is out of reach)",
             "maxTasks": "the most tasks were run"}
    direction = {"better": "; the treatment did better", "worse": "; the treatment did worse"}.get(
        str(sequential.get("direction")), "") if reason == "efficacy" else ""
    head = f"{words.get(str(reason), str(reason))} after" if reason is not None else "no stop decided after"
    return f"{head} {done} of {most} tasks ({evidence}{direction})"


def stopped_line(stopped: dict[str, Any], name: Callable[[str], str] = arm_label) -> str:
    """The one line under a blocked run's summary table (issue 32): which attempt stopped the run and the first
    problem it met, in the server's own words when a server call failed; every credential of the environment
    (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``) redacted (``protocol.redaction``); ``name`` labels the arm."""
    from agentstudy.io.environment import FORBIDDEN as CREDENTIAL_VARIABLES
    from agentstudy.protocol.redaction import redact
    text = (f"why: {stopped.get('status')} in task {stopped.get('taskId')} ({name(str(stopped.get('scenario')))}, "
            f"repetition {stopped.get('repetition')}): {stopped.get('reason')}")
    for variable in CREDENTIAL_VARIABLES:
        secret = os.environ.get(variable)
        if secret:
            text = redact(text, secret)
    return str(text)


def reservation_rule_text(line: dict[str, Any]) -> str:
    """The reservation rule and the largest overshoot in words (issue 19), from a summary line's or a ledger
    budget block's ``reservationRule``, ``worstTurnUsd`` and ``largestOvershootUsd`` (USD)."""
    from agentstudy.pricing.sums import display_usd, usd_from_json
    def usd_text(value: Any) -> str:
        try:
            return f"{display_usd(usd_from_json(value))} USD"
        except (TypeError, ValueError):  # an unverified ledger read tolerantly
            return repr(value)

    rule = str(line["reservationRule"])
    if line.get("worstTurnUsd") is not None:
        rule += f" (worst turn {usd_text(line['worstTurnUsd'])})"
    over = line.get("largestOvershootUsd")
    return rule + "; largest overshoot of the per-attempt limit: " + ("none" if over is None else usd_text(over))


def print_server_tools(server: dict[str, Any]) -> None:
    """Print ``--dry-run --probe``'s finding on stderr: one row per listed tool with its annotations (issue 18).

    ``server`` is ``runners.server_probe.probe_servers``'s object; stdout keeps the one JSON line.
    """
    from rich.console import Console
    from rich.table import Table
    checkouts = ", ".join(server["checkouts"])
    title = (f"MCP server {server['name']}: started {server['serversStarted']}x ({checkouts}), "
             f"probe {server['probe']['tool']} ok")
    table = Table(title=title)
    table.add_column("tool", style="bold")
    table.add_column("agent may call")
    table.add_column("annotations")
    for tool in server["tools"]:
        may = f"yes, {tool['readOnlyEvidence']}" if tool["allowed"] else "no (denied)"
        notes = ", ".join(f"{key}: {json.dumps(value)}" for key, value in tool["annotations"].items())
        table.add_row(tool["name"], may, notes or "none")
    Console(stderr=True).print(table, "nothing was reserved or written", highlight=False)
