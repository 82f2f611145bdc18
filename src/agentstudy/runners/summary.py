"""The run's stdout summary (digest section 4.4): counts, tokens and spend, never answers or credentials."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.pricing.budget import Budget
from agentstudy.pricing.sums import scaled
from agentstudy.protocol.records import CliObservation, HttpObservation

FULL_ATTEMPTS = 36
"""The full schedule's attempts; a pilot of ``n`` attempts extrapolates by ``36 / n`` (18 for 2)."""


@dataclass(frozen=True)
class RunSummary:
    """The final summary: ``status`` of the run, the ledger path, and ``line`` (the JSON summary object)."""

    status: str
    ledger: Path
    line: dict[str, Any]


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _cache_tokens(observations: Sequence[CliObservation] | Sequence[HttpObservation]) -> dict[str, int | None]:
    cli = [o for o in observations if isinstance(o, CliObservation)]
    return {
        "cacheCreationInputTokens": _sum([o.cache_creation_input_tokens for o in cli]),
        "cacheReadInputTokens": _sum([o.cache_read_input_tokens for o in cli]),
    }


def _factor(planned: int) -> str:
    """``36 / planned`` as the shortest decimal text ("18", "4.5")."""
    return format(scaled(Decimal(1), FULL_ATTEMPTS, max(planned, 1)).normalize(), "f")


def summarize(
    status: str,
    mode: str,
    planned: int,
    observations: Sequence[CliObservation] | Sequence[HttpObservation],
    budget: Budget,
    ledger: Path,
    transport: str = "cli",
) -> RunSummary:
    """Build the summary of a finished run (``transport`` ``cli`` or ``http``; HTTP has no cache tokens).

    The pilot extrapolation (spend x 36 / ``planned``, x 18 for the 2-attempt pilot: charged spend for
    CLI, upper-price spend for HTTP) is
    given only for a pilot that ended ``awaiting-adjudication`` with complete usage; it is not an
    upper bound.
    """
    usage_complete = all(o.usage_complete for o in observations)
    extrapolate = mode == "pilot" and status == "awaiting-adjudication" and usage_complete
    line: dict[str, Any] = {
        "transport": transport,
        "status": status,
        "mode": mode,
        "plannedAttempts": planned,
        "attempts": len(observations),
        "byStatus": dict(Counter(o.status for o in observations)),
        "byScenario": dict(Counter(o.scenario for o in observations)),
        "toolCalls": sum(o.tool_calls for o in observations),
        "inputTokens": _sum([o.input_tokens for o in observations]),
        "outputTokens": _sum([o.output_tokens for o in observations]),
        **(_cache_tokens(observations) if transport == "cli" else {}),
        "spentUsd": float(budget.spent),
        "capUsd": float(budget.cap),
        "usageComplete": usage_complete,
        "extrapolatedFullRunUsd": float(scaled(budget.spent, FULL_ATTEMPTS, planned)) if extrapolate else None,
        "extrapolation": (f"{FULL_ATTEMPTS} attempts / {planned} pilot attempts; not an upper bound" if extrapolate
                          else "not applicable"),
        "fullRunFactor": _factor(planned),
        "ledger": str(ledger),
    }
    return RunSummary(status=status, ledger=ledger, line=line)
