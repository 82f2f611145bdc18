"""Observations of the minimal-study ledger: one attempt each, either transport (seed 000, "Each attempt
records…"; digest sections 2.1 and 4.2).

Field names are the seed's camelCase JSON names. Money is a JSON number of USD converted from ``Decimal`` at
this edge; token counts are integers; ``None`` means missing, never zero. :mod:`agentstudy.protocol.records`
holds the ledger around them and re-exports every name here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentstudy.pricing.cost import MAX_TOKENS
from agentstudy.protocol.treatment import TreatmentRecord

HttpAttemptStatus = Literal["completed", "failed", "timed-out", "budget-exceeded", "incomplete", "invalid-setup"]
FailureKind = Literal["rate-limited", "overloaded", "server-error", "network", "timeout", "agent"]
"""Why a failed attempt failed (issue 33): the API refused it (429, 529, another 5xx), the network, time, or
the agent itself."""
RETRY_FIELDS = ("apiRetries", "apiRetryWaitMs", "apiRetryStatuses", "failureKind")
"""The retry facts of an observation (issue 33): omitted when unset, so older ledgers and their hashes stay as
they were."""
ContainmentMechanism = Literal["bwrap", "restricted"]
"""How an attempt was confined (issue 15): ``bwrap`` (bubblewrap namespaces, plus ``--restricted`` file
tools for Claude Code) or ``restricted`` (the agent's own file-tool confinement only). ``None`` in
ledgers written before containment was recorded."""


Count = Annotated[int, Field(strict=True, ge=0, le=MAX_TOKENS)]
"""A token, call or millisecond count as a ledger holds it: a JSON integer in [0, 10**15] (issue 29: what the
runner may write is exactly what every reader accepts; a float, a negative or a 31-digit count is refused)."""
Name = Annotated[str, Field(min_length=1)]
"""A task id, scenario or status: a non-empty string (the report refuses an empty one)."""
Repetition = Annotated[int, Field(strict=True, ge=1)]
"""A 1-based repetition number (a JSON integer)."""
Flag = Annotated[bool, Field(strict=True)]
"""A JSON true or false."""


NEVER_STARTED = "never started: "
"""How the ``statusReason`` of an attempt whose agent process never started begins (its scratch, export or sandbox
could not be made; issue 40, break 11): it is ``failed`` and charged its whole reservation, charged but not spent."""


class CliObservation(BaseModel):
    """One CLI attempt as recorded in the ledger (seed 000, "Each attempt records…").

    ``answer`` is private and is empty unless ``status`` is ``completed``; ``correctness``
    stays ``None`` and ``adjudication`` ``pending`` until a separate blind adjudication.
    ``statusReason`` says why the status is not ``completed`` (a spawn error, the timeout,
    stdout over its bound, a signal, …) in our own short words, never provider text; it is
    omitted when unset, and ledgers written before it was recorded load without it.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    task_id: Name = Field(alias="taskId")
    repository: Name | None = None
    """The task's repository (the manifest's name; issue 41): omitted when unset, as in ledgers written before."""
    scenario: Name
    repetition: Repetition
    position: int | None = Field(default=None, ge=1, le=2)
    """The attempt's place (1 or 2) in its arm pair under randomised order (issue 41 item 8); omitted otherwise."""
    transport: Literal["cli"] = "cli"
    cli_version: str = Field(alias="cliVersion")
    expected_cli_version: str = Field(alias="expectedCliVersion")
    attempt_budget_usd: float = Field(alias="attemptBudgetUsd")
    model: str | None
    tools: list[str] | None
    mcp_servers: list[dict[str, Any]] | None
    tool_calls_by_name: dict[str, Count] = Field(alias="toolCallsByName")
    tool_calls: Count = Field(alias="toolCalls")
    permission_denials: list[dict[str, Any]] = Field(alias="permissionDenials")
    input_tokens: Count | None = Field(alias="inputTokens")
    output_tokens: Count | None = Field(alias="outputTokens")
    cache_creation_input_tokens: Count | None = Field(alias="cacheCreationInputTokens")
    cache_read_input_tokens: Count | None = Field(alias="cacheReadInputTokens")
    num_turns: Count | None = Field(alias="numTurns")
    cli_subtype: str | None = Field(alias="cliSubtype")
    is_error: bool | None = Field(alias="isError")
    usage_complete: Flag = Field(alias="usageComplete")
    tool_errors_by_name: dict[str, Count] = Field(alias="toolErrorsByName")
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
    containment: ContainmentMechanism | None = None
    isolation_achieved: list[str] | None = Field(default=None, alias="isolationAchieved")
    isolation_not_achieved: list[str] | None = Field(default=None, alias="isolationNotAchieved")
    wall_time_ms: Count = Field(alias="wallTimeMs")
    started_at: str | None = Field(default=None, alias="startedAt")
    ended_at: str | None = Field(default=None, alias="endedAt")
    worker_node: str | None = Field(default=None, alias="workerNode")
    agent: str | None = None
    api_retries: int | None = Field(default=None, alias="apiRetries", ge=0)
    api_retry_wait_ms: int | None = Field(default=None, alias="apiRetryWaitMs", ge=0)
    api_retry_statuses: list[int | str] | None = Field(default=None, alias="apiRetryStatuses")
    failure_kind: FailureKind | None = Field(default=None, alias="failureKind")
    status: Name
    status_reason: str | None = Field(default=None, alias="statusReason")
    answer: str
    correctness: None = None
    adjudication: Literal["pending"] = "pending"
    treatment: TreatmentRecord | None = None
    transcript_file: str | None = Field(default=None, alias="transcriptFile")
    transcript_sha256: str | None = Field(default=None, alias="transcriptSha256")
    server_stderr_file: str | None = Field(default=None, alias="serverStderrFile")
    server_stderr_sha256: str | None = Field(default=None, alias="serverStderrSha256")
    observation_hash: str | None = Field(default=None, alias="observationHash")

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to the ledger (camelCase; optional problems, the reason, the unset hash and
        the unset ``startedAt``/``endedAt`` omitted).

        ``startedAt``/``endedAt`` (ISO 8601 UTC, ms; issue 19) are recorded by a concurrent run
        (``--concurrency`` above 1): when the child started and when its result was in.
        ``workerNode`` (issue 20) is the Ray node id that ran the attempt's body (``--executor ray``). The
        export's facts are omitted when no export is known (a stop kept the child from starting, or
        its worker died). ``apiRetries`` / ``apiRetryWaitMs`` / ``apiRetryStatuses`` count the requests the
        agent's CLI sent again after a refusal, from its own retry events, and ``failureKind`` says why a failed
        attempt failed (issue 33). ``agent`` (issue 21) names the coding agent (``claude-code``, ``codex``);
        omitted when unset, which means ``claude-code`` (``protocol.study_agents.observation_agent``).
        ``serverStderrFile`` / ``serverStderrSha256`` (issue 39) name the MCP server's stderr tail kept in the
        private transcripts directory (64 KiB, redacted); omitted when the server wrote nothing or none was kept.
        """
        data = self.model_dump(by_alias=True)
        for key in ("repository", "position", "setupProblem", "costProblem", "statusReason", "observationHash",
                    "startedAt", "endedAt",
                    "workerNode", "agent", "exportFiles", "exportBytes", "exportTreeSha256", *RETRY_FIELDS, "treatment",
                    "transcriptFile", "transcriptSha256", "serverStderrFile", "serverStderrSha256"):
            if data[key] is None:
                del data[key]
        if self.treatment is not None:
            data["treatment"] = self.treatment.to_json()
        return data


class HttpObservation(BaseModel):
    """One Messages API attempt as recorded in the ledger (seed 000 ``http``; digest 2.1 and 4.2).

    Tokens are provider input/output tokens summed over every settled turn; with
    ``usageComplete: false`` they hold only the known prior turns (the failed request's usage
    is missing and its reservation stays charged). ``toolCalls`` counts every call the model
    made, failed ones included; ``toolCallsByName`` / ``toolErrorsByName`` use the offered names
    (``(not offered)`` for any other). ``numTurns`` counts paid requests. Money is USD:
    ``reservedUsd`` the sum of the attempt's per-call reservations, ``measuredUsd`` of its
    measured costs, ``chargedUsd`` what it added to spend. ``wallTimeMs`` runs from the attempt's first
    action (before its MCP server starts, so the server's start-up is included, as in a cli
    attempt) to its end (issue 17 item 5). ``statusReason`` is our own short text, never provider text.
    ``answer`` is private and empty unless ``completed``.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    task_id: Name = Field(alias="taskId")
    repository: Name | None = None
    """The task's repository (issue 41): omitted when unset, as in ledgers written before."""
    scenario: Name
    repetition: Repetition
    position: int | None = Field(default=None, ge=1, le=2)
    """The attempt's place (1 or 2) in its arm pair under randomised order (issue 41 item 8); omitted otherwise."""
    transport: Literal["http"] = "http"
    model: str
    tools: list[str]
    tool_calls_by_name: dict[str, Count] = Field(alias="toolCallsByName")
    tool_errors_by_name: dict[str, Count] = Field(alias="toolErrorsByName")
    tool_calls: Count = Field(alias="toolCalls")
    num_turns: Count = Field(alias="numTurns")
    input_tokens: Count = Field(alias="inputTokens")
    output_tokens: Count = Field(alias="outputTokens")
    usage_complete: Flag = Field(alias="usageComplete")
    reserved_usd: float = Field(alias="reservedUsd")
    measured_usd: float = Field(alias="measuredUsd")
    charged_usd: float = Field(alias="chargedUsd")
    cumulative_cap_exceeded: bool = Field(alias="cumulativeCapExceeded")
    wall_time_ms: Count = Field(alias="wallTimeMs")
    containment: ContainmentMechanism | None = None
    isolation_achieved: list[str] | None = Field(default=None, alias="isolationAchieved")
    isolation_not_achieved: list[str] | None = Field(default=None, alias="isolationNotAchieved")
    started_at: str | None = Field(default=None, alias="startedAt")
    ended_at: str | None = Field(default=None, alias="endedAt")
    worker_node: str | None = Field(default=None, alias="workerNode")
    api_retries: int | None = Field(default=None, alias="apiRetries", ge=0)
    api_retry_wait_ms: int | None = Field(default=None, alias="apiRetryWaitMs", ge=0)
    api_retry_statuses: list[int | str] | None = Field(default=None, alias="apiRetryStatuses")
    failure_kind: FailureKind | None = Field(default=None, alias="failureKind")
    status: HttpAttemptStatus
    status_reason: str | None = Field(default=None, alias="statusReason")
    answer: str
    correctness: None = None
    adjudication: Literal["pending"] = "pending"
    treatment: TreatmentRecord | None = None
    transcript_file: str | None = Field(default=None, alias="transcriptFile")
    transcript_sha256: str | None = Field(default=None, alias="transcriptSha256")
    observation_hash: str | None = Field(default=None, alias="observationHash")

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to the ledger (camelCase; ``statusReason``, the unset hash and the unset
        ``startedAt``/``endedAt`` omitted, so a sequential ledger and its observation hashes are unchanged).

        ``startedAt``/``endedAt`` (ISO 8601 UTC, ms; issue 19) are recorded by a concurrent run
        (``--concurrency`` above 1): when the attempt was admitted and when its result was in.
        ``workerNode`` (issue 20) is the Ray node id that ran the agent loop (``--executor ray``).
        ``apiRetries`` (refused requests sent again), ``apiRetryWaitMs`` (waited before them and in the run's
        back-off pauses; not agent time), ``apiRetryStatuses`` (each refusal: an HTTP status or ``network``)
        and ``failureKind`` (why a failed attempt failed) are issue 33's.
        """
        data = self.model_dump(by_alias=True)
        for key in ("repository", "position", "statusReason", "observationHash", "startedAt", "endedAt", "workerNode",
                    *RETRY_FIELDS, "treatment", "transcriptFile", "transcriptSha256"):
            if data[key] is None:
                del data[key]
        if self.treatment is not None:
            data["treatment"] = self.treatment.to_json()
        return data


Observation = Annotated[CliObservation | HttpObservation, Field(discriminator="transport")]
"""A ledger observation of either transport, told apart by ``transport``."""
