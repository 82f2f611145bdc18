"""What a run tells its watcher while it goes: attempt started, attempt settled, run over. No answers, no credentials.

A watcher may also have ``finish()``: the runners call it (through :func:`finish_progress`) once the
run is over, whatever the outcome, so a live terminal display can end before the summary prints.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol


@dataclass(frozen=True)
class AttemptProgress:
    """One attempt's place in the run: 1-based ``index`` of ``total``, its task, scenario and repetition."""

    index: int
    total: int
    task_id: str
    scenario: str
    repetition: int


class RunProgress(Protocol):
    """A watcher of a running study (the command line renders it; tests may record it)."""

    def attempt_started(self, attempt: AttemptProgress) -> None:
        """Called after the reservation is on disk, right before the agent starts."""

    def attempt_settled(
        self, attempt: AttemptProgress, status: str, tool_calls: int, charged_usd: Decimal, spent_usd: Decimal,
        cap_usd: Decimal,
    ) -> None:
        """Called after the settlement is on disk."""


class SilentProgress:
    """A watcher that shows nothing."""

    def attempt_started(self, attempt: AttemptProgress) -> None:
        """Show nothing."""

    def attempt_settled(
        self, attempt: AttemptProgress, status: str, tool_calls: int, charged_usd: Decimal, spent_usd: Decimal,
        cap_usd: Decimal,
    ) -> None:
        """Show nothing."""


def finish_progress(progress: RunProgress) -> None:
    """Call ``progress.finish()`` when the watcher has one (a live bar ends); otherwise nothing (issue 19, item 6)."""
    finish = getattr(progress, "finish", None)
    if callable(finish):
        finish()


def report_excluded(progress: object, node: str, reason: str) -> None:
    """Show a Ray worker the worker preflight excluded, before any attempt (issue 20): through
    ``progress.worker_excluded(node, reason)`` when the watcher has one, else as one line on stderr
    (an excluded worker is never silent)."""
    excluded = getattr(progress, "worker_excluded", None)
    if callable(excluded):
        excluded(node, reason)
    else:
        print(f"worker {node[:12]} excluded: {reason}", file=sys.stderr)
