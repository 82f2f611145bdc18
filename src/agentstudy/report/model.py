"""What a report knows about a study: its attempts (joined with adjudication) and the run's header.

Every number is ``None`` when the ledger does not record it: missing stays missing, never zero.
Tokens are counts, wall time is milliseconds, money is exact ``Decimal`` USD.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agentstudy.pricing.cost import CacheWrites, ModelTokens
from agentstudy.protocol.analysis import AnalysisPlan
from agentstudy.protocol.arm_names import arm_label, server_label
from agentstudy.protocol.sequential_record import SequentialRecord
from agentstudy.protocol.study_agents import DEFAULT_AGENT
from agentstudy.protocol.treatment import TreatmentRecord

BASELINE = "repository-only"
TREATMENT = "doc-bridge-mcp"
SCENARIOS = (BASELINE, TREATMENT)
COMPLETED = "completed"


class ReportInputError(ValueError):
    """A ledger, companion or price file the report cannot use (the command exits 2)."""


class NotSupportedYet(ReportInputError):
    """A ledger kind the report does not render yet (controlled-study ledgers)."""


@dataclass(frozen=True)
class StoredUsage:
    """An attempt's usage as recorded, enough to price it again.

    ``totals`` per model (tokens), the cache-write TTL split, and the per-message prompt sizes
    that pick the tier (empty: the aggregate prompt decides). ``source`` says where it came
    from: ``costBasis`` (exact reconstruction) or ``token fields`` (aggregate tier, every
    cache write at the 1-hour rate).
    """

    totals: dict[str, ModelTokens]
    cache_writes: CacheWrites
    message_prompts: tuple[int, ...]
    source: str


@dataclass(frozen=True)
class AttemptContainment:
    """How one attempt was confined, as its observation records it (issue 15).

    ``mechanism``: ``bwrap``, ``restricted`` (or another recorded string), ``None`` when not
    recorded (ledgers written before containment was). ``not_achieved``: the
    ``isolationNotAchieved`` sentences, ``None`` when not recorded. ``refused_reads``: the
    built-in file-tool permission denials (refused out-of-export reads), ``None`` when not
    recorded; ``applicable`` is ``False`` for HTTP attempts, whose repository tools read pinned
    git blobs only and record no denials.
    """

    mechanism: str | None = None
    not_achieved: tuple[str, ...] | None = None
    refused_reads: int | None = None
    applicable: bool = True


@dataclass(frozen=True)
class AttemptRetries:
    """One attempt's refused requests (issue 33; ``report.infrastructure``): ``retries`` and ``wait_ms``
    (``None`` when not recorded) and the ``failure_kind`` of a failed attempt (``None`` when not recorded)."""

    retries: int | None = None
    wait_ms: int | None = None
    failure_kind: str | None = None


@dataclass(frozen=True)
class Attempt:
    """One observation of the ledger, in execution order (``index`` is 0-based, shown 1-based).

    ``correctness`` is the adjudicated score in [0, 1] (``None`` unless scored);
    ``adjudication`` is ``scored``, ``pending``, ``missing`` (the attempt did not complete) or
    ``not adjudicated`` (no companion). ``reasons`` are runner-written facts (status, setup or
    cost problem, exit code ...), never answer text. ``containment`` is how it was confined.
    ``agent`` is the coding agent that ran it (the observation's ``agent``; ``claude-code`` when
    absent, issue 21).
    """

    index: int
    task_id: str
    scenario: str
    repetition: int
    status: str
    transport: str | None
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_creation_tokens: int | None
    usage_complete: bool | None
    tool_calls: int | None
    tool_calls_by_name: dict[str, int]
    wall_time_ms: int | None
    charged_usd: Decimal | None
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    usage: StoredUsage | None
    correctness: float | None = None
    rubric: str | None = None
    adjudication: str = "not adjudicated"
    pending_reason: str | None = None
    containment: AttemptContainment = AttemptContainment()
    agent: str = DEFAULT_AGENT
    retries: AttemptRetries = AttemptRetries()
    treatment: TreatmentRecord | None = None
    """The observation's treatment record (issue 28); ``None`` in a ledger written before it (or unreadable)."""
    agent_version: str | None = None
    """The agent's version (``protocol.arm_differences.observed_agent_version``; issue 28 item 2)."""
    run_id: str | None = None
    """The run (ledger ``runId``) the attempt came from, in a report over a chain of runs (issue 33 item 7)."""
    superseded: bool = False
    """In a chain: a later run observed this attempt's cell again (it stays as evidence, outside the ITT view)."""
    repository: str | None = None
    """The task's repository (the observation's ``repository``, issue 41); ``None`` when the ledger does not say."""

    @property
    def completed(self) -> bool:
        """Whether the attempt's status is ``completed`` (an answer returned, not that it was correct)."""
        return self.status == COMPLETED


@dataclass(frozen=True)
class ChainRun:
    """One ledger of a chain of runs (issue 33 item 7): its ``run_id`` (``runId``; ``None`` in a ledger written
    before runs had ids), file name, SHA-256 hex of its bytes, status and the 1-based indices of its attempts
    in the chain's report."""

    run_id: str | None
    file_name: str
    sha256: str
    status: str | None
    attempts: tuple[int, ...]


@dataclass(frozen=True)
class AdjudicationInfo:
    """The verified companion: its SHA-256 binding, status, adjudicator model(s) and its own spend (USD)."""

    file_name: str
    ledger_sha256: str
    status: str
    adjudicator_models: tuple[str, ...]
    spent_usd: Decimal
    cap_usd: Decimal
    scored: int
    pending: int


@dataclass(frozen=True)
class Study:
    """A minimal-study ledger as the report reads it.

    ``header`` holds display strings (version, hashes, transport, model, times ...);
    ``budget_*`` are the ledger's ``budget`` block in USD (``None`` when absent). ``unverified``
    lists why the ledger did not verify (read with ``--allow-unverified``); empty when it did.
    ``arm_labels`` maps a scenario to its arm's label (a study file's ledger ``arms``; issue 18),
    empty for a seed ledger; ``server_name`` is the MCP server studied (``mcpServer.name``),
    ``None`` when not recorded; ``full_attempts`` the full schedule's size a pilot extrapolates to
    (the ledger's ``fullAttempts``; 36, the seed's, when absent). ``reservation_rule``,
    ``worst_turn_usd`` and ``largest_overshoot_usd`` are the budget block's rule (issue 19; ``None``
    in a ledger written before it, and the overshoot ``None`` when nothing overshot). ``analysis`` is
    the study file's declared analysis section as the ledger records it (issue 30), ``None`` when it
    declares none (the report then uses and states the defaults).
    """

    file_name: str
    sha256: str
    header: dict[str, str]
    mode: str | None
    status: str | None
    planned: int | None
    rehearsal: bool
    transport: str | None
    cap_usd: Decimal | None
    spent_usd: Decimal | None
    reserved_usd: Decimal | None
    measured_usd: Decimal | None
    cumulative_cap_exceeded: bool | None
    stop_reason: str | None
    open_reservation_usd: Decimal | None
    attempts: tuple[Attempt, ...]
    adjudication: AdjudicationInfo | None = None
    unverified: tuple[str, ...] = ()
    arm_labels: dict[str, str] = field(default_factory=dict)
    server_name: str | None = None
    arm_records: tuple[dict[str, Any], ...] = ()
    """The ledger's ``arms`` as written (issue 44: a comparison study's per-arm servers); ``()`` when absent."""
    full_attempts: int = 36
    reservation_rule: str | None = None
    worst_turn_usd: Decimal | None = None
    largest_overshoot_usd: Decimal | None = None
    analysis: AnalysisPlan | None = None
    sequential: SequentialRecord | None = None
    """A sequential run's ``sequential`` block (issue 35), ``None`` for a fixed design."""
    sequential_differences: tuple[float | None, ...] = ()
    """A sequential run's task differences of its stopping metric in the order the tasks completed, replayed from
    the observations as the run's monitor saw them (issue 41: the confidence sequence); ``()`` otherwise."""
    order: str = "counterbalanced"
    """The arms' order (the ledger's ``design.order``; issue 41 item 8): ``counterbalanced`` when absent."""
    order_seed: int | None = None
    """A randomised order's ``orderSeed``; ``None`` otherwise."""
    runs: tuple[ChainRun, ...] = ()
    chain_missing: tuple[dict[str, str | None], ...] = ()
    """The runs of the chain before the first ledger given (issue 40; ``--partial-chain``), oldest first, each
    ``{"ledgerSha256", "runId"}``; ``()`` when the chain given is whole."""
    """A report over a chain of runs (``--continue-from``; issue 33 item 7): one entry per ledger, in order;
    ``()`` for one ledger."""

    @property
    def agents(self) -> tuple[str, ...]:
        """The agents of the observed attempts, in order of first appearance (``()`` with no attempt)."""
        return tuple(dict.fromkeys(a.agent for a in self.attempts))

    def arm_name(self, scenario: str) -> str:
        """How every report names ``scenario``'s arm: its label (``protocol.arm_names.arm_label``; issue 28 item 7)."""
        return arm_label(scenario, self.arm_labels, self.server_name)

    @property
    def server(self) -> str:
        """How every report names the server under study (``protocol.arm_names.server_label``)."""
        return server_label(self.server_name)
