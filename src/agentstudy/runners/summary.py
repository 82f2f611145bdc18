"""The run's stdout summary (digest section 4.4): counts, tokens and spend, never answers or credentials."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.pricing.budget import Budget
from agentstudy.protocol.records import CliObservation

FULL_TO_PILOT_RATIO = 18
"""36 full attempts / 2 pilot attempts."""


@dataclass(frozen=True)
class RunSummary:
    """The final summary: ``status`` of the run, the ledger path, and ``line`` (the JSON summary object)."""

    status: str
    ledger: Path
    line: dict[str, Any]


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def summarize(
    status: str, mode: str, planned: int, observations: Sequence[CliObservation], budget: Budget, ledger: Path
) -> RunSummary:
    """Build the summary of a finished CLI run.

    The pilot extrapolation (charged spend x 18) is given only for a pilot that ended
    ``awaiting-adjudication`` with complete usage; it is not an upper bound.
    """
    usage_complete = all(o.usage_complete for o in observations)
    extrapolate = mode == "pilot" and status == "awaiting-adjudication" and usage_complete
    line: dict[str, Any] = {
        "transport": "cli",
        "status": status,
        "mode": mode,
        "plannedAttempts": planned,
        "attempts": len(observations),
        "byStatus": dict(Counter(o.status for o in observations)),
        "byScenario": dict(Counter(o.scenario for o in observations)),
        "toolCalls": sum(o.tool_calls for o in observations),
        "inputTokens": _sum([o.input_tokens for o in observations]),
        "outputTokens": _sum([o.output_tokens for o in observations]),
        "cacheCreationInputTokens": _sum([o.cache_creation_input_tokens for o in observations]),
        "cacheReadInputTokens": _sum([o.cache_read_input_tokens for o in observations]),
        "spentUsd": float(budget.spent),
        "capUsd": float(budget.cap),
        "usageComplete": usage_complete,
        "extrapolatedFullRunUsd": float(budget.spent * Decimal(FULL_TO_PILOT_RATIO)) if extrapolate else None,
        "extrapolation": "36 attempts / 2 pilot attempts; not an upper bound" if extrapolate else "not applicable",
        "ledger": str(ledger),
    }
    return RunSummary(status=status, ledger=ledger, line=line)
