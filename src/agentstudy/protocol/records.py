"""Records of the minimal-study ledger (seed 000, "The private JSON ledger records…"; digest section 4).

Field names are the seed's camelCase JSON names. Money is a JSON number of USD converted
from ``Decimal`` at this edge; token counts are integers; ``None`` means missing, never zero.
The observations (one attempt each) live in :mod:`agentstudy.protocol.observations`; their names are
re-exported here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentstudy.protocol.analysis import AnalysisPlan
from agentstudy.protocol.arm_order import DesignRecord
from agentstudy.protocol.observations import (
    NEVER_STARTED,
    RETRY_FIELDS,
    CliObservation,
    ContainmentMechanism,
    Count,
    FailureKind,
    Flag,
    HttpAttemptStatus,
    HttpObservation,
    Name,
    Observation,
    Repetition,
)
from agentstudy.protocol.run_records import (
    AdjudicationDeclaration,
    ArmRecord,
    BudgetRecord,
    CliRunSettings,
    ExcludedWorker,
    HttpPrices,
    HttpRunSettings,
    McpServerRecord,
    OpenReservation,
)
from agentstudy.protocol.sequential_record import SequentialRecord

__all__ = [
    "JOURNAL_FORMAT", "MINIMAL_VERSION_PREFIX", "NEVER_STARTED", "RETRY_FIELDS", "STUDY_LEDGER_VERSION",
    "BackoffPause", "CliObservation", "ContainmentMechanism", "ContinuesRecord", "Count", "FailureKind", "Flag",
    "HttpAttemptStatus", "HttpObservation", "MinimalLedger", "Name", "Observation", "Repetition", "RunLink",
    "RunStatus", "is_minimal_ledger_version",
]

RunStatus = Literal["running", "blocked", "awaiting-adjudication"]

JOURNAL_FORMAT = "agentstudy-ledger-journal-v1"
"""The journal's format name: its start record's ``journal`` and a running snapshot's ``journal`` (issue 19, 29)."""

MINIMAL_VERSION_PREFIX = "minimal-study-"
STUDY_LEDGER_VERSION = "agentstudy-study-v1"
"""A study file's run writes its file's version (issue 18); the seed's ledgers a ``minimal-study-`` one."""


def is_minimal_ledger_version(version: object) -> bool:
    """Whether ``version`` is a minimal-study ledger's: ``minimal-study-…`` or ``agentstudy-study-v1`` (issue 18)."""
    if not isinstance(version, str):
        return False
    return version.startswith(MINIMAL_VERSION_PREFIX) or version == STUDY_LEDGER_VERSION


class BackoffPause(BaseModel):
    """One run-wide pause (issue 33): ``start`` and ``end`` (ISO 8601 UTC, ms) and its ``cause`` (``429``, ``529``)."""

    model_config = ConfigDict(extra="forbid")

    start: str
    end: str
    cause: str


class RunLink(BaseModel):
    """One earlier run of a chain: ``ledgerSha256`` (SHA-256 hex of its ledger's bytes) and ``runId``."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    ledger_sha256: str = Field(alias="ledgerSha256", pattern=r"^[0-9a-f]{64}$")
    run_id: str | None = Field(alias="runId")


class ContinuesRecord(BaseModel):
    """The predecessor of a continuation run (``--continue-from``): ``ledgerSha256``, the
    SHA-256 hex of the old ledger file's bytes as read, and its ``runId`` (``None`` for a ledger written before
    runs had ids).

    A chain is one study: ``earlierRuns`` lists the links before the predecessor, oldest first
    (:class:`RunLink`; empty for a second run), and ``completedBefore`` counts the cells the whole chain before
    this run observed ``completed``, so the ledger verifies alone: ``fullAttempts`` = ``plannedAttempts`` +
    ``completedBefore`` in a full run. Both are absent in continuations written before.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    ledger_sha256: str = Field(alias="ledgerSha256", pattern=r"^[0-9a-f]{64}$")
    run_id: str | None = Field(alias="runId")
    earlier_runs: list[RunLink] | None = Field(default=None, alias="earlierRuns")
    completed_before: int | None = Field(default=None, alias="completedBefore", ge=0)


class MinimalLedger(BaseModel):
    """The private ledger of a minimal-study run (seed 000; digest section 4.1).

    Hashes are SHA-256 hex: ``protocolHash`` of the manifest's compact JSON in file key order
    (the original's definition), ``manifestSha256`` of the manifest file's bytes, ``runnerHash``
    of agentstudy's own sources, ``engineBundleHash`` of the resolved Claude Code binary (``None``
    for ``http``, which runs no binary). ``cli`` is set for the CLI transport, ``prices`` and
    ``http`` for the HTTP one; unset blocks are omitted from the JSON. ``containment`` is the
    mechanism preflight proved (``"bwrap 0.8.0"`` or ``"restricted"``; issue 15). ``arms`` (issue 18)
    names a study file's arms (:class:`ArmRecord`, control first) and ``fullAttempts`` the size of its
    full schedule (what a pilot extrapolates to); a seed manifest's ledger has neither (36).
    ``analysis`` (issue 30) is the study file's declared analysis section, only when it declares one.

    Tamper evidence (issue 16): every observation carries ``observationHash`` and the ledger
    ``hashAlgo`` and ``ledgerHash``, over the canonical JSON of exactly what is written
    (:mod:`agentstudy.protocol.ledger_integrity`, which also names the invariants readers check).
    They are ``None`` in the runner's in-memory model and in ledgers written before they existed.

    Concurrency (issue 19): a run with ``--concurrency N`` above 1 records ``concurrency`` (N) and
    keeps every open reservation in ``openReservations`` (a list in admission order, possibly empty;
    ``openReservation`` stays unset); ``spent`` is the observations' charges plus every open
    reservation. A sequential run (N = 1) writes neither field, so its ledger is the seed's.

    Back-off (issue 33): ``backoffPauses`` lists the run-wide pauses a 429 or 529 caused
    (:class:`BackoffPause`); omitted when there was none.

    Executor (issue 20): a run with ``--executor ray`` records ``executor`` (``"ray"``) and the
    worker nodes its worker preflight excluded (``excludedWorkers``, possibly empty); the local
    executor writes neither.

    Sequential design (issue 35): ``sequential`` (:class:`~agentstudy.protocol.sequential_record.SequentialRecord`)
    records every look of the anytime-valid test and why the study stopped; absent in a fixed-design run.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    version: str
    protocol_hash: str = Field(alias="protocolHash")
    manifest_sha256: str = Field(alias="manifestSha256")
    runner_hash: str = Field(alias="runnerHash")
    engine_revision: str | None = Field(alias="engineRevision")
    engine_bundle_hash: str | None = Field(alias="engineBundleHash")
    repositories: dict[str, str]
    transport: Literal["cli", "http"]
    model: str
    cli: CliRunSettings | None = None
    prices: HttpPrices | None = None
    http: HttpRunSettings | None = None
    mcp_server: McpServerRecord = Field(alias="mcpServer")
    arms: list[ArmRecord] | None = None
    full_attempts: int | None = Field(default=None, alias="fullAttempts")
    analysis: AnalysisPlan | None = None
    transcripts: bool | None = None
    """Whether private transcripts are kept in ``LEDGER.transcripts/`` (issue 28; ``false`` with
    ``--no-transcripts``; absent in ledgers written before)."""
    rehearsal: bool
    containment: str | None = None
    adjudication: AdjudicationDeclaration
    mode: Literal["pilot", "full"]
    planned_attempts: int = Field(alias="plannedAttempts")
    budget: BudgetRecord
    observations: list[Observation]
    open_reservation: OpenReservation | None = Field(default=None, alias="openReservation")
    concurrency: int | None = None
    open_reservations: list[OpenReservation] | None = Field(default=None, alias="openReservations")
    executor: Literal["ray"] | None = None
    excluded_workers: list[ExcludedWorker] | None = Field(default=None, alias="excludedWorkers")
    sequential: SequentialRecord | None = None
    design: DesignRecord | None = None
    """The arms' order when randomised (issue 41 item 8: ``{"order": "randomized", "orderSeed"}``); absent means
    the counterbalanced rule (every ledger written before)."""
    journal: Literal["agentstudy-ledger-journal-v1"] | None = None
    """Set (to ``JOURNAL_FORMAT``) in every ``running`` snapshot written with a journal beside it (issue 29):
    the snapshot then says a journal must exist, so a deleted or emptied one is refused, never read as "no
    change since". Never in a closed ledger (``to_json`` drops it once the status is not ``running``)."""
    backoff_pauses: list[BackoffPause] | None = Field(default=None, alias="backoffPauses")
    run_id: str | None = Field(default=None, alias="runId")
    """This run's id: a random hex id every new ledger records; absent in older ledgers."""
    continues: ContinuesRecord | None = None
    """The run this one continues (``--continue-from``); absent in a run of its own."""
    stop_reason: str | None = Field(default=None, alias="stopReason")
    started_at: str = Field(alias="startedAt")
    finished_at: str | None = Field(default=None, alias="finishedAt")
    status: RunStatus
    hash_algo: str | None = Field(default=None, alias="hashAlgo")
    ledger_hash: str | None = Field(default=None, alias="ledgerHash")

    def to_json(self) -> dict[str, Any]:
        """The JSON document written to disk (camelCase; unset optional blocks and hashes omitted).

        The runners write it through :func:`agentstudy.protocol.ledger_integrity.seal_ledger`,
        which adds the hashes.
        """
        data = self.model_dump(by_alias=True, exclude_none=False)
        data["observations"] = [o.to_json() for o in self.observations]
        return _drop_unset(data)

    def header_json(self) -> dict[str, Any]:
        """``to_json()`` without ``observations``: what a journal record compares (issue 19; O(1) in observations)."""
        return _drop_unset(self.model_dump(by_alias=True, exclude_none=False, exclude={"observations"}))


def _drop_unset(data: dict[str, Any]) -> dict[str, Any]:
    """A ledger's JSON with its unset optional blocks and hashes removed (``MinimalLedger.to_json``)."""
    if isinstance(data.get("prices"), dict) and data["prices"].get("nominal") is None:
        data["prices"].pop("nominal", None)
    for key in ("openReservation", "stopReason", "finishedAt", "cli", "prices", "http", "containment",
                "hashAlgo", "ledgerHash", "arms", "fullAttempts", "analysis", "concurrency", "openReservations",
                "executor", "excludedWorkers", "sequential", "design", "journal", "backoffPauses", "transcripts",
                "runId", "continues"):
        if data[key] is None:
            del data[key]
    if isinstance(data.get("analysis"), dict):
        for key in ("secondary", "minRepositories", "minimumEffect"):  # unset: a ledger's hash as before
            if data["analysis"].get(key) is None:
                data["analysis"].pop(key, None)
    if data.get("status") != "running":
        data.pop("journal", None)  # a closed ledger has no journal beside it
    if isinstance(data.get("mcpServer"), dict) and data["mcpServer"].get("prepared") is None:
        data["mcpServer"].pop("prepared", None)  # a study without preparation steps keeps its ledger's hash
    if isinstance(data.get("mcpServer"), dict) and data["mcpServer"].get("corpusPath") is None:
        data["mcpServer"].pop("corpusPath", None)  # older ledgers keep their hash
    for arm in data.get("arms") or []:
        for key in ("mcpServer", "toolDescriptionsSha256", "toolsListSha256", "mcpCommand", "offeredTools",
                    "shownDescriptions", "serverVersion", "prepareSteps"):
            if arm.get(key, "") is None:
                del arm[key]
    for opened in [data.get("openReservation"), *(data.get("openReservations") or [])]:
        if isinstance(opened, dict) and opened.get("agent", "") is None:
            del opened["agent"]  # Claude Code's: absent, so ledgers written before issue 21 keep their hash
    if isinstance(data.get("continues"), dict):  # a continuation written before issue 40 keeps its hash
        for key in ("earlierRuns", "completedBefore"):
            if data["continues"].get(key) is None:
                del data["continues"][key]
    if isinstance(data.get("sequential"), dict):  # a sequential ledger written before issues 40/41 keeps its hash
        for key in ("taskPool", "construction", "sidedness", "betSize", "carried"):
            if data["sequential"].get(key) is None:
                data["sequential"].pop(key, None)
    if data.get("http") is not None and data["http"].get("attemptBudgetUsd") is None:
        del data["http"]["attemptBudgetUsd"]  # a sequential http ledger is unchanged
    if data.get("cli") is not None and data["cli"].get("baseUrl") is None:
        del data["cli"]["baseUrl"]  # absent, never null: the schema (``agentstudy schema ledger``) says so
    if data.get("cli") is not None and data["cli"].get("agent") is None:
        del data["cli"]["agent"]  # a ledger written before issue 21 keeps its hash
    elif data.get("cli") is not None and data["cli"]["agent"].get("features") is None:
        del data["cli"]["agent"]["features"]
    if data.get("cli") is not None and data["cli"].get("otherAgents") is None:
        del data["cli"]["otherAgents"]  # a one-agent run's ledger is unchanged
    for other in (data.get("cli") or {}).get("otherAgents") or []:
        if other.get("features") is None:
            del other["features"]
    return data
