"""The companion record of a minimal-study adjudication (issue: blind agent adjudication).

The run ledger is never edited (ARCHITECTURE decision 10). Adjudication writes this
companion next to it, bound to the ledger's SHA-256 (of its bytes) and sealed with its own
content hash (``adjudicationHash``, issue 29) that every reader checks. Each completed
observation becomes one opaque item judged blind to its scenario; observations that did not
complete stay missing, never scored. Scores follow the protocol's rubric: correct 1,
partial 0.5, incorrect 0, incomplete 0. There is no human review.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentstudy.protocol.controlled.hashing import sha256_normalized_v1
from agentstudy.protocol.run_records import BudgetRecord

Rubric = Literal["correct", "partial", "incorrect", "incomplete"]
Verdict = Literal["supported", "missing", "contradicted"]
RUBRIC_SCORES: dict[str, float] = {"correct": 1.0, "partial": 0.5, "incorrect": 0.0, "incomplete": 0.0}
COMPANION_TYPE: Literal["minimal-study-adjudication"] = "minimal-study-adjudication"
CompanionStatus = Literal["running", "awaiting-adjudication", "adjudicated"]


def rubric_for(verdicts: Iterable[str]) -> Rubric:
    """The rubric that follows from per-proposition verdicts (the rule the adjudicator is given).

    ``incorrect`` if any proposition is ``contradicted``; else ``correct`` if every one is
    ``supported``; else ``partial`` if at least one is; else ``incomplete`` (nothing supported,
    which includes an empty list).
    """
    given = list(verdicts)
    if "contradicted" in given:
        return "incorrect"
    if given and all(verdict == "supported" for verdict in given):
        return "correct"
    if "supported" in given:
        return "partial"
    return "incomplete"


def companion_status(item_statuses: Iterable[str], finished: bool) -> CompanionStatus:
    """The run's adjudication status: ``running`` until ``finished``; then ``adjudicated`` when every
    item is ``scored`` (vacuously so when no observation completed), else ``awaiting-adjudication``."""
    if not finished:
        return "running"
    return "adjudicated" if all(status == "scored" for status in item_statuses) else "awaiting-adjudication"


COMPANION_HASH_KEY = "adjudicationHash"
"""The companion's own content hash (issue 29): ``sha256-normalized-v1`` of the document as written without this
key, so every item, score and verdict is covered, and with it ``ledgerSha256`` (the ledger it is bound to)."""


def companion_hash(document: Mapping[str, Any]) -> str:
    """``adjudicationHash`` of a companion document: of everything written but the hash itself (hex SHA-256).

    Raises:
        ValueError, TypeError: a value JSON cannot hold.
    """
    return sha256_normalized_v1({k: v for k, v in document.items() if k != COMPANION_HASH_KEY})


def companion_hash_problem(document: Mapping[str, Any]) -> str | None:
    """Why a companion's ``adjudicationHash`` does not hold (absent, or not the content's), ``None`` when it does."""
    if COMPANION_HASH_KEY not in document:
        return "it has no adjudicationHash (written before companions were hashed, or stripped since)"
    try:
        if document[COMPANION_HASH_KEY] == companion_hash(document):
            return None
    except (TypeError, ValueError):
        pass
    return "its adjudicationHash does not match its content (changed after it was written)"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)


class PropositionVerdict(_Model):
    """The adjudicator's verdict on one expected proposition, with a short reason."""

    proposition: str
    verdict: Verdict
    reason: str


class CitationFailure(_Model):
    """A citation that did not check out: the citation text and why (``unknown path``, ``line out of range``)."""

    citation: str
    problem: str


class CitationChecks(_Model):
    """Mechanical checks of every ``path:line`` / ``path:start-end`` citation against the pinned corpus."""

    total: int
    valid: int
    failures: list[CitationFailure]


class AdjudicatedItem(_Model):
    """One blinded item and its outcome.

    ``observationIndex`` (0-based position in the ledger's observations), ``taskId`` and
    ``repetition`` join the item back to the ledger; the adjudicator saw none of them nor the
    scenario. ``status`` is ``scored`` or ``pending`` (failed, invalid or refused adjudication:
    never a default score). Money is USD, tokens are counts, time is ms.
    """

    item_id: str = Field(alias="itemId")
    observation_index: int = Field(alias="observationIndex")
    task_id: str = Field(alias="taskId")
    repetition: int
    status: Literal["scored", "pending"]
    pending_reason: str | None = Field(default=None, alias="pendingReason")
    rubric: Rubric | None = None
    score: float | None = None
    verdicts: list[PropositionVerdict] = Field(default_factory=list)
    reason: str | None = None
    citations: CitationChecks
    adjudicator_model: str = Field(alias="adjudicatorModel")
    attempt_status: str | None = Field(default=None, alias="attemptStatus")
    input_tokens: int | None = Field(default=None, alias="inputTokens")
    output_tokens: int | None = Field(default=None, alias="outputTokens")
    charged_usd: float = Field(alias="chargedUsd")
    wall_time_ms: int | None = Field(default=None, alias="wallTimeMs")
    method: Literal["agent"] = "agent"
    human_review: Literal[False] = Field(default=False, alias="humanReview")
    reserved_usd: float = Field(default=0.0, alias="reservedUsd")
    cli_reported_cost_usd: float | None = Field(default=None, alias="cliReportedCostUsd")
    computed_cost_usd: float | None = Field(default=None, alias="computedCostUsd")
    cache_creation_input_tokens: int | None = Field(default=None, alias="cacheCreationInputTokens")
    cache_read_input_tokens: int | None = Field(default=None, alias="cacheReadInputTokens")
    tool_calls_by_name: dict[str, int] | None = Field(default=None, alias="toolCallsByName")
    attempt_problem: str | None = Field(default=None, alias="attemptProblem")
    scrubbed_mentions: int = Field(default=0, alias="scrubbedMentions")
    prompt_bytes: int | None = Field(default=None, alias="promptBytes")
    started_at: str | None = Field(default=None, alias="startedAt")
    """When its attempt was admitted (ISO 8601 UTC ms); only in a concurrent adjudication (issue 19)."""
    ended_at: str | None = Field(default=None, alias="endedAt")
    """When its attempt's outcome was settled (ISO 8601 UTC ms); only in a concurrent adjudication."""


class OpenItemReservation(_Model):
    """A reservation on disk whose adjudicator attempt is not settled yet (a crash leaves it charged), USD."""

    item_id: str = Field(alias="itemId")
    reserved_usd: float = Field(alias="reservedUsd")


class MissingObservation(_Model):
    """An observation that did not complete: it stays missing (no score), with its status."""

    observation_index: int = Field(alias="observationIndex")
    task_id: str = Field(alias="taskId")
    repetition: int
    status: str


AdjudicationBudget = BudgetRecord
"""The adjudication's own money, USD: the same block as a run ledger's (cap, spent with open
reservations, reserved, measured, cumulativeCapExceeded)."""


class MinimalAdjudication(_Model):
    """The companion file (``<ledger>.adjudication.json``), created exclusively with mode 0600."""

    type: Literal["minimal-study-adjudication"] = COMPANION_TYPE
    version: Literal[1] = 1
    ledger_sha256: str = Field(alias="ledgerSha256")
    method: Literal["agent"] = "agent"
    human_review: Literal[False] = Field(default=False, alias="humanReview")
    adjudicator: dict[str, Any]
    blinding: dict[str, Any]
    budget: AdjudicationBudget
    items: list[AdjudicatedItem]
    missing: list[MissingObservation]
    status: CompanionStatus
    started_at: str = Field(alias="startedAt")
    finished_at: str | None = Field(default=None, alias="finishedAt")
    manifest_sha256: str | None = Field(default=None, alias="manifestSha256")
    open_reservation: OpenItemReservation | None = Field(default=None, alias="openReservation")
    concurrency: int | None = None
    """Adjudicator attempts run at once (issue 19); omitted at 1 (the sequential walk)."""
    open_reservations: list[OpenItemReservation] | None = Field(default=None, alias="openReservations")
    """Every open reservation, in admission order, when ``concurrency`` is set (``openReservation``
    stays unset); omitted otherwise."""
    stop_reason: str | None = Field(default=None, alias="stopReason")
    ledger_unverified: list[str] | None = Field(default=None, alias="ledgerUnverified")
    """Why the run ledger did not verify, when it was adjudicated with ``--allow-unverified``
    (``protocol.ledger_integrity``); omitted when it verified."""

    adjudication_hash: str | None = Field(default=None, alias="adjudicationHash")
    """The content hash (``companion_hash``), recomputed by every ``to_json``; every reader checks it."""

    def to_json(self) -> dict[str, Any]:
        """The JSON document written to disk (camelCase; ``ledgerUnverified``, ``concurrency``,
        ``openReservations`` and the items' ``startedAt`` / ``endedAt`` only when set), sealed with a fresh
        ``adjudicationHash`` last."""
        data = self.model_dump(by_alias=True)
        for key in ("ledgerUnverified", "concurrency", "openReservations", COMPANION_HASH_KEY):
            if data[key] is None or key == COMPANION_HASH_KEY:
                del data[key]
        for item in data["items"]:
            for key in ("startedAt", "endedAt"):
                if item[key] is None:
                    del item[key]
        data[COMPANION_HASH_KEY] = companion_hash(data)
        return data
