"""The treatment record of one observation: was the server under study offered, and used? (issue 28 item 1)

A manipulation check is part of the study: every observation, on every transport and agent,
records whether the MCP server was in the agent's tool set, its calls by tool, the calls that
errored, the calls whose result was empty and the bytes the server returned; in the control arm
the same record is the proof that no server tool was offered. The transports read these facts
from their own output (Claude Code's stream-json, Codex's exec events, the http transport's own
requests) and build the record here, so the rule and the words are one.

Pure: no IO, no clock.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentstudy.protocol.seed_names import REPOSITORY_ONLY

TREATMENT_LOST = "every MCP tool call returned an error (treatment lost)"
"""The setup problem of a treatment attempt whose every server call errored: the same words on every
transport and agent (cli, Codex, http)."""
CONTROL_SERVER_LOST = "every MCP tool call returned an error (the control arm's server lost)"
"""The same problem in a control arm that runs a server of its own (issue 44): the same rule, its own arm named."""


def server_lost(scenario: str) -> str:
    """The words of an attempt of ``scenario``'s arm whose every call to its server errored: :data:`TREATMENT_LOST`,
    or :data:`CONTROL_SERVER_LOST` in the control arm (``repository-only``; issue 44)."""
    return CONTROL_SERVER_LOST if scenario == REPOSITORY_ONLY else TREATMENT_LOST

DEFAULT_MINIMUM_USE = 0.5
"""The study's minimum share of treatment attempts that must use the server (the study file's
``analysis.minimumTreatmentUse``), when it declares none."""

OfferEvidence = Literal["init", "config", "request", "none"]
"""Where ``serverOffered`` comes from: Claude Code's init event (``mcp_servers`` status and ``mcp__`` tools),
Codex's ``[mcp_servers]`` configuration we wrote (Codex reports no tool set; a required server that
failed to start is a setup problem), the http transport's own request, or nothing (no stream)."""


@dataclass(frozen=True)
class ServerCall:
    """One call to the server under study: the server's own tool name, whether its result was an error
    (``is_error`` / Codex ``failed``), the bytes of its result's text (UTF-8; ``None`` when unknown), and
    whether its answer says the server is not ready (``not_ready``, :func:`server_not_ready`; issue 32)."""

    tool: str
    is_error: bool
    result_bytes: int | None
    not_ready: bool = False


_NOT_READY = re.compile(
    r"\b(?:index(?:es)? (?:is |are |was |has )?(?:not|never) (?:yet )?(?:built|ready|created|available|found)"
    r"|no index|missing index|index (?:is )?missing|not (?:yet )?indexed|(?:server|service) (?:is )?not ready"
    r"|not initiali[sz]ed|run `?[\w.-]+`? first|(?:build|create) (?:the |an )?index first)\b",
    re.IGNORECASE)
NOT_READY_CHARS = 400
"""How much of an answer's start :func:`server_not_ready` reads (a refusal says so at once; a long answer
that merely mentions an index is content)."""


def server_not_ready(text: str) -> bool:
    """Whether a server's answer says it is not ready to answer (pure): a missing or unbuilt index,
    "not initialized", "run X first" — a refusal, not content, although the call itself succeeded
    (issue 32). Only the first :data:`NOT_READY_CHARS` characters are read."""
    return bool(_NOT_READY.search(text[:NOT_READY_CHARS]))


OPTIONAL_KEYS = ("firstRequestInputTokens", "promptSha256", "builtinToolsSha256", "agentVersion")
"""Keys of a treatment record omitted when unknown."""


class TreatmentRecord(BaseModel):
    """An observation's ``treatment`` (camelCase JSON; issue 28 item 1).

    Attributes:
        server: the server under study in this arm (``None`` in the control arm).
        server_offered: whether any server tool was in the agent's tool set (control: must be false).
        offered_server_tools: the server tools in the agent's tool set (control: the proof, ``[]``).
        evidence: where ``server_offered`` comes from (:data:`OfferEvidence`).
        server_calls_by_tool: calls by the server's tool name (refused and failed calls included).
        server_calls: every call to the server.
        server_call_errors: calls whose result was an error or said the server was not ready
            (:func:`server_not_ready`: a missing index, "run X first"; issue 32).
        empty_results: calls whose result carried no text (whitespace only counts as empty).
        result_bytes: UTF-8 bytes of the server's result texts, summed.
        all_calls_failed: at least one call, and every one errored (the treatment was lost).
        answering_models: the models that answered, from the stream (not the flag), in first-seen order.
        first_request_input_tokens: the prompt size of the attempt's first request (input + cache
            read + cache write tokens), the base of the tool-definition overhead; ``None`` when unknown.
        prompt_sha256: SHA-256 of the prompt's UTF-8 bytes as given to the agent (arms must match per task).
        builtin_tools_sha256: SHA-256 of the agent's tool set without the server's tools (canonical JSON of
            the sorted names, or of the http transport's repository tool definitions; Codex, which lists no tool
            set, of what decides its built-in tools: ``transports.codex_args.builtin_tool_basis``).
        agent_version: the agent's version as it reported itself while it ran (Claude Code's init event
            ``claude_code_version``; the http transport: ``agentstudy VERSION``, its own loop); ``None`` when the
            agent reports none (Codex: the observation's probed ``cliVersion`` stands for it).
    """

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    server: str | None
    server_offered: bool = Field(alias="serverOffered")
    offered_server_tools: list[str] = Field(alias="offeredServerTools")
    evidence: OfferEvidence
    server_calls_by_tool: dict[str, int] = Field(alias="serverCallsByTool")
    server_calls: int = Field(alias="serverCalls")
    server_call_errors: int = Field(alias="serverCallErrors")
    empty_results: int = Field(alias="emptyResults")
    result_bytes: int = Field(alias="resultBytes")
    all_calls_failed: bool = Field(alias="allCallsFailed")
    answering_models: list[str] = Field(default_factory=list, alias="answeringModels")
    first_request_input_tokens: int | None = Field(default=None, alias="firstRequestInputTokens")
    prompt_sha256: str | None = Field(default=None, alias="promptSha256")
    builtin_tools_sha256: str | None = Field(default=None, alias="builtinToolsSha256")
    agent_version: str | None = Field(default=None, alias="agentVersion")

    def to_json(self) -> dict[str, Any]:
        """The record as written in the observation (camelCase; the optional keys omitted when unknown, never
        null, as the ledger schema says)."""
        data = self.model_dump(by_alias=True)
        for key in OPTIONAL_KEYS:
            if data[key] is None:
                del data[key]
        return data


def treatment_record(
    *,
    server: str | None,
    offered_server_tools: Sequence[str],
    evidence: OfferEvidence,
    calls: Iterable[ServerCall],
    answering_models: Sequence[str] = (),
    first_request_input_tokens: int | None = None,
) -> TreatmentRecord:
    """Build an observation's treatment record from what the transport saw (pure; never raises).

    Args:
        server: the arm's server name (``None`` in the control arm).
        offered_server_tools: server tools in the agent's tool set (its own names, as offered).
        evidence: where the offer was read.
        calls: the attempt's calls to the server, in order.
        answering_models: models named by the stream's responses (duplicates dropped, order kept).
        first_request_input_tokens: the first request's prompt tokens, when known.
    """
    listed = list(calls)
    by_tool: dict[str, int] = {}
    for call in listed:
        by_tool[call.tool] = by_tool.get(call.tool, 0) + 1
    errors = sum(1 for call in listed if call.is_error or call.not_ready)  # not ready: a failed call (issue 32)
    return TreatmentRecord(
        server=server,
        server_offered=bool(offered_server_tools),
        offered_server_tools=list(offered_server_tools),
        evidence=evidence,
        server_calls_by_tool=by_tool,
        server_calls=len(listed),
        server_call_errors=errors,
        empty_results=sum(1 for call in listed if call.result_bytes == 0),
        result_bytes=sum(call.result_bytes or 0 for call in listed),
        all_calls_failed=bool(listed) and errors == len(listed),
        answering_models=list(dict.fromkeys(answering_models)),
        first_request_input_tokens=first_request_input_tokens,
    )


def sha256_text(text: str) -> str:
    """SHA-256 hex of ``text``'s UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tool_set_sha256(tools: Any) -> str:
    """SHA-256 hex of a tool set: the canonical JSON (sorted keys, compact) of ``tools`` (sorted when a list of
    names)."""
    value = sorted(tools) if isinstance(tools, list) and all(isinstance(t, str) for t in tools) else tools
    return sha256_text(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def text_bytes(text: str) -> int:
    """Bytes of a result's text as the record counts them: UTF-8 of the text with surrounding whitespace
    removed (so a whitespace-only result is empty, 0)."""
    return len(text.strip().encode("utf-8"))


def content_text(content: Any) -> str:
    """The text of a tool result's ``content``: a string as it is, or the ``text`` of every text block of a
    list joined by newlines (Claude Code's ``tool_result``, an MCP ``CallToolResult``'s ``content``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(block.get("text")) for block in content
                         if isinstance(block, dict) and isinstance(block.get("text"), str))
    return ""


def read_treatment(value: Any) -> TreatmentRecord | None:
    """An observation's ``treatment`` as a record, or ``None`` when absent or not a valid record (a reader of
    ledgers written before treatment records, or of a hand-edited one, shows the treatment as not recorded)."""
    if not isinstance(value, dict):
        return None
    try:
        return TreatmentRecord.model_validate(value)
    except ValueError:
        return None


def used_server(record: TreatmentRecord) -> bool:
    """An attempt used the server: at least one of its server calls did not error."""
    return record.server_calls > record.server_call_errors


def is_delivered(attempts_using_server: int, treatment_attempts: int, minimum_use: float) -> bool:
    """The treatment was delivered: at least ``minimum_use`` (a fraction) of the treatment attempts used the
    server, and there was at least one treatment attempt."""
    return treatment_attempts > 0 and attempts_using_server >= minimum_use * treatment_attempts


def not_delivered_sentence(server: str, attempts_using_server: int, treatment_attempts: int,
                           minimum_use: float) -> str:
    """The verdict of a study whose treatment was not delivered: the same words in every report format and
    in the end-of-run summary."""
    return (f"This study cannot answer whether {server} helps: the treatment was not delivered ({server} was used "
            f"in {attempts_using_server} of {treatment_attempts} treatment attempts; the study requires at least "
            f"{minimum_use:.0%}). No comparison is a finding.")
