"""Records of the minimal-study ledger (seed 000, "The private JSON ledger records…"; digest section 4).

Field names are the seed's camelCase JSON names. Money is a JSON number of USD converted
from ``Decimal`` at this edge; token counts are integers; ``None`` means missing, never zero.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RunStatus = Literal["running", "blocked", "awaiting-adjudication"]


class CliObservation(BaseModel):
    """One CLI attempt as recorded in the ledger (seed 000, "Each attempt records…").

    ``answer`` is private and is empty unless ``status`` is ``completed``; ``correctness``
    stays ``None`` and ``adjudication`` ``pending`` until a separate blind adjudication.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    task_id: str = Field(alias="taskId")
    scenario: str
    repetition: int
    transport: Literal["cli"] = "cli"
    cli_version: str = Field(alias="cliVersion")
    expected_cli_version: str = Field(alias="expectedCliVersion")
    attempt_budget_usd: float = Field(alias="attemptBudgetUsd")
    model: str | None
    tools: list[str] | None
    mcp_servers: list[dict[str, Any]] | None
    tool_calls_by_name: dict[str, int] = Field(alias="toolCallsByName")
    tool_calls: int = Field(alias="toolCalls")
    permission_denials: list[dict[str, Any]] = Field(alias="permissionDenials")
    input_tokens: int | None = Field(alias="inputTokens")
    output_tokens: int | None = Field(alias="outputTokens")
    cache_creation_input_tokens: int | None = Field(alias="cacheCreationInputTokens")
    cache_read_input_tokens: int | None = Field(alias="cacheReadInputTokens")
    num_turns: int | None = Field(alias="numTurns")
    cli_subtype: str | None = Field(alias="cliSubtype")
    is_error: bool | None = Field(alias="isError")
    usage_complete: bool = Field(alias="usageComplete")
    tool_errors_by_name: dict[str, int] = Field(alias="toolErrorsByName")
    cli_reported_cost_usd: float | None = Field(alias="cliReportedCostUsd")
    computed_cost_usd: float | None = Field(alias="computedCostUsd")
    cost_basis: dict[str, Any] | None = Field(alias="costBasis")
    setup_problem: str | None = Field(default=None, alias="setupProblem")
    cost_problem: str | None = Field(default=None, alias="costProblem")
    reserved_usd: float = Field(alias="reservedUsd")
    charged_usd: float = Field(alias="chargedUsd")
    cumulative_cap_exceeded: bool = Field(alias="cumulativeCapExceeded")
    exit_code: int | None = Field(alias="exitCode")
    export_files: int | None = Field(default=None, alias="exportFiles")
    export_bytes: int | None = Field(default=None, alias="exportBytes")
    export_tree_sha256: str | None = Field(default=None, alias="exportTreeSha256")
    isolation_achieved: list[str] | None = Field(default=None, alias="isolationAchieved")
    isolation_not_achieved: list[str] | None = Field(default=None, alias="isolationNotAchieved")
    wall_time_ms: int = Field(alias="wallTimeMs")
    status: str
    answer: str
    correctness: None = None
    adjudication: Literal["pending"] = "pending"

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to the ledger (camelCase, optional problems omitted when unset)."""
        data = self.model_dump(by_alias=True)
        for key in ("setupProblem", "costProblem"):
            if data[key] is None:
                del data[key]
        return data


class CliRunSettings(BaseModel):
    """The ledger's ``cli`` block: probed and expected versions, the per-attempt limit and the prices used."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    cli_version: str = Field(alias="cliVersion")
    expected_cli_version: str = Field(alias="expectedCliVersion")
    attempt_budget_usd: float = Field(alias="attemptBudgetUsd")
    prices: dict[str, Any] | None


class McpServerRecord(BaseModel):
    """The MCP server under study as preflight saw it: its name, live tool list and the derived deny list."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    name: str
    command: list[str]
    listed_tools: list[str] = Field(alias="listedTools")
    denied_tools: list[str] = Field(alias="deniedTools")


class BudgetRecord(BaseModel):
    """The ledger's ``budget`` block, USD.

    ``spent`` includes open reservations; ``reserved`` is the sum of every reservation made;
    ``measured`` the sum of the attempts' valid measured costs (the larger of reported and
    computed); ``cumulativeCapExceeded`` is ``spent > cap``.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    cap: float
    spent: float
    reserved: float
    measured: float
    cumulative_cap_exceeded: bool = Field(alias="cumulativeCapExceeded")


class OpenReservation(BaseModel):
    """A reservation on disk whose attempt has not been settled yet (a crash leaves it charged)."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    task_id: str = Field(alias="taskId")
    scenario: str
    repetition: int
    reserved_usd: float = Field(alias="reservedUsd")


class AdjudicationDeclaration(BaseModel):
    """``{method: "agent", humanReview: false}``: correctness comes from a blind agent run, never a human."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    method: Literal["agent"] = "agent"
    human_review: Literal[False] = Field(default=False, alias="humanReview")


class MinimalLedger(BaseModel):
    """The private ledger of a minimal-study run (seed 000; digest section 4.1).

    Hashes are SHA-256 hex: ``protocolHash`` of the manifest's compact JSON in file key order
    (the original's definition), ``manifestSha256`` of the manifest file's bytes, ``runnerHash``
    of agentstudy's own sources, ``engineBundleHash`` of the resolved Claude Code binary.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    version: str
    protocol_hash: str = Field(alias="protocolHash")
    manifest_sha256: str = Field(alias="manifestSha256")
    runner_hash: str = Field(alias="runnerHash")
    engine_revision: str | None = Field(alias="engineRevision")
    engine_bundle_hash: str = Field(alias="engineBundleHash")
    repositories: dict[str, str]
    transport: Literal["cli", "http"]
    model: str
    cli: CliRunSettings | None = None
    mcp_server: McpServerRecord = Field(alias="mcpServer")
    rehearsal: bool
    adjudication: AdjudicationDeclaration
    mode: Literal["pilot", "full"]
    planned_attempts: int = Field(alias="plannedAttempts")
    budget: BudgetRecord
    observations: list[CliObservation]
    open_reservation: OpenReservation | None = Field(default=None, alias="openReservation")
    stop_reason: str | None = Field(default=None, alias="stopReason")
    started_at: str = Field(alias="startedAt")
    finished_at: str | None = Field(default=None, alias="finishedAt")
    status: RunStatus

    def to_json(self) -> dict[str, Any]:
        """The JSON document written to disk (camelCase; unset optional blocks omitted)."""
        data = self.model_dump(by_alias=True, exclude_none=False)
        data["observations"] = [o.to_json() for o in self.observations]
        for key in ("openReservation", "stopReason", "finishedAt", "cli"):
            if data[key] is None:
                del data[key]
        return data
