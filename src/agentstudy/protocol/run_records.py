"""Run-level records of the minimal-study ledger: settings, arms, budget, open reservations, workers.

Split from ``protocol.records`` (which keeps the observations and the ledger document itself).
Field names are the seed's camelCase JSON names; money is a JSON number of USD; ``None`` means
missing, never zero.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


class HttpPrices(BaseModel):
    """The ledger's HTTP ``prices`` block: the upper prices, USD per million tokens.

    ``nominal: true`` marks a rehearsal's nominal prices (``pricing.http.REHEARSAL_PRICES``, no
    money moved; issue 18); the key is absent otherwise.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    input: float
    output: float
    nominal: bool | None = None


class HttpRunSettings(BaseModel):
    """The ledger's ``http`` block: the API base URL (never a credential) and the loop's fixed limits."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    api_base_url: str = Field(alias="apiBaseUrl")
    anthropic_version: str = Field(alias="anthropicVersion")
    max_tokens: int = Field(alias="maxTokens")
    temperature: int
    max_turns: int = Field(alias="maxTurns")
    max_tool_calls_per_turn: int = Field(alias="maxToolCallsPerTurn")
    attempt_deadline_ms: int = Field(alias="attemptDeadlineMs")
    tool_result_chars: int = Field(alias="toolResultChars")
    attempt_budget_usd: float | None = Field(default=None, alias="attemptBudgetUsd")
    """A concurrent run's per-attempt limit (USD; issue 19): each attempt's reservation, its calls' ceiling.
    Absent in a sequential run, whose attempts reserve call by call against the cap alone."""


class AgentRecord(BaseModel):
    """The ledger's ``cli.agent`` block (issue 21): which coding agent ran the attempts — ``name`` (``claude-code``,
    ``codex``), ``version`` (the probed ``--version`` line) and, for Codex, ``features``: its
    ``codex features list`` under the run's configuration (feature name -> enabled), read once per run.
    Ledgers written before issue 21 have no block: their agent is Claude Code."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    name: str
    version: str
    features: dict[str, bool] | None = None


class CliRunSettings(BaseModel):
    """The ledger's ``cli`` block: probed and expected versions, the per-attempt limit, the prices used and
    ``baseUrl``, where the child sent its Messages API requests: the local rehearsal server in a
    rehearsal, the LLM gateway of ``--cli-base-url`` (never its token), ``None`` for the CLI's default.
    Ledgers written before rehearsals recorded it have ``None`` there too."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    cli_version: str = Field(alias="cliVersion")
    expected_cli_version: str = Field(alias="expectedCliVersion")
    attempt_budget_usd: float = Field(alias="attemptBudgetUsd")
    prices: dict[str, Any] | None
    base_url: str | None = Field(default=None, alias="baseUrl")
    agent: AgentRecord | None = None
    other_agents: list[AgentRecord] | None = Field(default=None, alias="otherAgents")
    """A several-agent run's other agents (issue 21 item 6), each probed in preflight; ``agent`` is the
    primary (``--agent``). Each observation records its own agent and ``cliVersion``."""


class McpServerRecord(BaseModel):
    """The MCP server under study as preflight saw it: its name, live tool list and the derived deny list.

    ``readOnlyEvidence`` maps each tool the agent may call to why it counts as read-only:
    ``"annotated read-only by the server"`` (``readOnlyHint: true`` in the live ``tools/list``) or
    ``"declared read-only by the operator"`` (no ``readOnlyHint``; only ``--mcp-tools`` says so).
    Ledgers written before it was recorded load with ``{}``. ``prepared`` (issue 32) lists, per checkout,
    the preparation steps that ran before any reservation, their outcome and the prepared state's hash
    (``protocol.prepare_steps.PrepareOutcome``); absent when the study declares no step. ``corpusPath`` (issue
    39) says where the server sees the repository in an attempt (``CLI_CORPUS_PATH``: the agent's own export,
    at the same absolute path); absent from older ledgers.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    name: str
    command: list[str]
    listed_tools: list[str] = Field(alias="listedTools")
    denied_tools: list[str] = Field(alias="deniedTools")
    read_only_evidence: dict[str, str] = Field(default_factory=dict, alias="readOnlyEvidence")
    prepared: list[dict[str, Any]] | None = None
    corpus_path: str | None = Field(default=None, alias="corpusPath")


CLI_CORPUS_PATH = "the attempt's export: the agent's working directory, at the same absolute path for the server"
"""``mcpServer.corpusPath`` of an agent CLI run (issue 39)."""


class ArmRecord(BaseModel):
    """One arm of a study-file run in the ledger's ``arms`` (issue 18): its ledger ``scenario``, ``id`` and ``label``.

    The treatment arm (scenario ``doc-bridge-mcp``) also names ``mcpServer``, the server run. In a study that
    compares two server configurations (``protocol.study_arms.arms_record``) every arm with a server
    has ``mcpServer``, ``toolDescriptionsSha256`` (SHA-256 of its overrides' canonical JSON), ``toolsListSha256``
    (of the ``tools/list`` the agent was shown, as the preflight read it through the same relay), ``mcpCommand``,
    ``offeredTools``, ``shownDescriptions``, ``prepareSteps`` and ``serverVersion``. Absent when not applicable.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    scenario: str
    id: str
    label: str
    mcp_server: str | None = Field(default=None, alias="mcpServer")
    tool_descriptions_sha256: str | None = Field(default=None, alias="toolDescriptionsSha256")
    tools_list_sha256: str | None = Field(default=None, alias="toolsListSha256")
    mcp_command: list[str] | None = Field(default=None, alias="mcpCommand")
    offered_tools: list[str] | None = Field(default=None, alias="offeredTools")
    shown_descriptions: dict[str, str] | None = Field(default=None, alias="shownDescriptions")
    server_version: str | None = Field(default=None, alias="serverVersion")
    prepare_steps: list[str] | None = Field(default=None, alias="prepareSteps")


class BudgetRecord(BaseModel):
    """The ledger's ``budget`` block, USD.

    ``spent`` includes open reservations; ``reserved`` is the sum of every reservation made;
    ``measured`` the sum of the attempts' valid measured costs (the larger of reported and
    computed); ``cumulativeCapExceeded`` is ``spent > cap``.

    The reservation rule (issue 19; ``pricing.strict_cap``), absent from older ledgers:
    ``reservationRule`` (``"limit"``, ``"limit-plus-worst-turn"`` with ``worstTurnUsd``, or
    ``"per-call-ceiling"`` for http) and, whenever a rule is recorded, ``largestOvershootUsd``:
    the most an observation's measured cost went above its per-attempt limit, ``null`` when none
    did. Unset fields are omitted, so older ledgers serialize (and hash) as before.
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    cap: float
    spent: float
    reserved: float
    measured: float
    cumulative_cap_exceeded: bool = Field(alias="cumulativeCapExceeded")
    reservation_rule: Literal["limit", "limit-plus-worst-turn", "per-call-ceiling"] | None = Field(
        default=None, alias="reservationRule")
    worst_turn_usd: float | None = Field(default=None, alias="worstTurnUsd")
    largest_overshoot_usd: float | None = Field(default=None, alias="largestOvershootUsd",
                                                json_schema_extra={"x-agentstudy-null": True})

    @model_serializer(mode="wrap")
    def _omit_unset_rule(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name, alias in (("reservation_rule", "reservationRule"), ("worst_turn_usd", "worstTurnUsd")):
            if data.get(alias, data.get(name, 0)) is None:
                data.pop(alias, None)
                data.pop(name, None)
        if self.reservation_rule is None:
            data.pop("largestOvershootUsd", None)
            data.pop("largest_overshoot_usd", None)
        return data


class OpenReservation(BaseModel):
    """An attempt whose reservation is on disk and not settled yet (a crash leaves it charged), USD.

    ``reservedUsd`` is what is reserved now (cli: the attempt's reservation; http: the open
    call's, 0 between calls); ``chargedUsd`` what the attempt's settled calls already added to
    ``spent`` (http; always 0 for cli, and for ledgers written before it was recorded). So
    ``spent`` is the observations' ``chargedUsd`` plus both. ``agent`` names the attempt's agent in a
    several-agent run (issue 21; omitted for Claude Code, so older ledgers are unchanged).
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    task_id: str = Field(alias="taskId")
    scenario: str
    repetition: int
    reserved_usd: float = Field(alias="reservedUsd")
    charged_usd: float = Field(default=0.0, alias="chargedUsd")
    agent: str | None = None


class AdjudicationDeclaration(BaseModel):
    """``{method: "agent", humanReview: false}``: correctness comes from a blind agent run, never a human."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    method: Literal["agent"] = "agent"
    human_review: Literal[False] = Field(default=False, alias="humanReview")


class ExcludedWorker(BaseModel):
    """A Ray worker node the worker preflight excluded before any attempt (issue 20): its node id and why."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    node: str
    reason: str
