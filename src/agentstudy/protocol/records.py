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
