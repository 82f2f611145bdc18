"""Companion records of an adjudication run: item records, the budget block, progress and the summary.

Items start ``pending`` (``not adjudicated yet``) and are rewritten once their attempt is
settled. Money is converted from ``Decimal`` USD to JSON numbers here, at the edge. The summary
line carries counts, tokens and spend, never an answer, and always says there was no human
review.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from agentstudy.adjudication.items import PreparedItem
from agentstudy.adjudication.prompt import Judgement
from agentstudy.pricing.usd_json import optional_usd_number, usd_number
from agentstudy.protocol.adjudication import (
    RUBRIC_SCORES,
    AdjudicatedItem,
    MinimalAdjudication,
    PropositionVerdict,
)
from agentstudy.transports.cli import CliAttemptResult

NOT_YET = "not adjudicated yet"
NO_HUMAN_REVIEW = "correctness adjudicated by an agent blind to the scenario; there was no human review"


class AdjudicationProgress(Protocol):
    """A watcher of an adjudication run; it only ever sees opaque item ids."""

    def item_started(self, index: int, total: int, item_id: str) -> None:
        """Called after the item's reservation is on disk, right before its adjudicator starts."""

    def item_settled(
        self, index: int, total: int, item_id: str, status: str, charged_usd: Decimal, spent_usd: Decimal,
        cap_usd: Decimal,
    ) -> None:
        """Called after the item's settlement is on disk (``status``: ``scored`` or ``pending``)."""


class SilentAdjudicationProgress:
    """A watcher that shows nothing."""

    def item_started(self, index: int, total: int, item_id: str) -> None:
        """Show nothing."""

    def item_settled(
        self, index: int, total: int, item_id: str, status: str, charged_usd: Decimal, spent_usd: Decimal,
        cap_usd: Decimal,
    ) -> None:
        """Show nothing."""


@dataclass(frozen=True)
class AdjudicationSummary:
    """The end of a run: the companion's ``status``, its path and ``line`` (the one-line JSON summary)."""

    status: str
    companion: Path
    line: dict[str, Any]


def initial_item(item: PreparedItem, model: str) -> AdjudicatedItem:
    """An item before its attempt: ``pending``, its citation checks and scrub count, nothing charged.

    An item without a prompt (too large) is pending for that reason and never attempted
    (``promptBytes`` is ``None``).
    """
    observation = item.blind.observation
    return AdjudicatedItem(
        item_id=item.blind.item_id,
        observation_index=observation.index,
        task_id=observation.task_id,
        repetition=observation.repetition,
        status="pending",
        pending_reason=item.prompt_problem or NOT_YET,
        citations=item.citations,
        adjudicator_model=model,
        charged_usd=0.0,
        scrubbed_mentions=item.scrubbed_mentions,
        prompt_bytes=len(item.prompt.encode("utf-8")) if item.prompt is not None else None,
    )


def _count(fields: dict[str, Any], key: str) -> int | None:
    value = fields.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def finished_item(
    base: AdjudicatedItem,
    item: PreparedItem,
    result: CliAttemptResult,
    attempt_status: str,
    reservation_usd: Decimal,
    charged_usd: Decimal,
    judgement: Judgement | None,
    problem: str | None,
) -> AdjudicatedItem:
    """The item after its settled attempt: ``scored`` with the judgement, or ``pending`` with ``problem``."""
    fields = result.fields
    attempt_problem = "; ".join([*result.setup_problems, *([result.cost_problem] if result.cost_problem else [])])
    by_name = fields.get("tool_calls_by_name")
    update: dict[str, Any] = {
        "attempt_status": attempt_status,
        "input_tokens": _count(fields, "input_tokens"),
        "output_tokens": _count(fields, "output_tokens"),
        "cache_creation_input_tokens": _count(fields, "cache_creation_input_tokens"),
        "cache_read_input_tokens": _count(fields, "cache_read_input_tokens"),
        "tool_calls_by_name": dict(by_name) if isinstance(by_name, dict) else None,
        "reserved_usd": usd_number(reservation_usd),
        "charged_usd": usd_number(charged_usd),
        "cli_reported_cost_usd": optional_usd_number(result.reported_cost_usd),
        "computed_cost_usd": optional_usd_number(result.computed_cost.usd if result.computed_cost else None),
        "wall_time_ms": result.wall_time_ms,
        "attempt_problem": attempt_problem or None,
    }
    if judgement is None:
        update |= {"status": "pending", "pending_reason": problem or "no judgement"}
    else:
        propositions = item.task.expected
        update |= {
            "status": "scored",
            "pending_reason": None,
            "rubric": judgement.rubric,
            "score": RUBRIC_SCORES[judgement.rubric],
            "verdicts": [
                PropositionVerdict(proposition=propositions[number - 1], verdict=verdict, reason=reason)
                for number, verdict, reason in judgement.verdicts
            ],
            "reason": judgement.reason,
        }
    return base.model_copy(update=update)


def _total(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def summarize(companion: MinimalAdjudication, path: Path) -> AdjudicationSummary:
    """The one-line summary of a finished adjudication: counts, tokens, spend; never an answer."""
    attempted = [item for item in companion.items if item.attempt_status is not None]
    scored = [item for item in companion.items if item.status == "scored"]
    line: dict[str, Any] = {
        "kind": "minimal-study",
        "status": companion.status,
        "items": len(companion.items),
        "scored": len(scored),
        "pending": len(companion.items) - len(scored),
        "missing": len(companion.missing),
        "byRubric": dict(Counter(item.rubric for item in scored if item.rubric is not None)),
        "attempts": len(attempted),
        "inputTokens": _total([item.input_tokens for item in attempted]),
        "outputTokens": _total([item.output_tokens for item in attempted]),
        "spentUsd": companion.budget.spent,
        "capUsd": companion.budget.cap,
        "method": "agent",
        "humanReview": False,
        "note": NO_HUMAN_REVIEW,
        "ledgerSha256": companion.ledger_sha256,
        "companion": str(path),
    }
    return AdjudicationSummary(status=companion.status, companion=path, line=line)
