"""The two arms of an ``agentstudy-study-v1`` study file: ids, labels, the treatment's MCP server (issue 18). Pure.

The control arm runs with the repository tools only; the treatment arm adds one read-only
stdio MCP server given in the Claude Code MCP config format (``mcpConfig``), its read-only
tools and its freshness probe. Validation reuses the run flags' own checks
(``protocol.mcp_spec.check_tool_choice`` and ``parse_mcp_config``), so a study file and the
flags accept and refuse the same settings. Ledgers keep the seed's scenario names: the
control arm's observations are ``repository-only``, the treatment arm's ``doc-bridge-mcp``;
:func:`arms_record` writes the arms' ids and labels beside them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentstudy.protocol.mcp_spec import (
    PLACEHOLDERS,
    ChoiceNames,
    McpConfigError,
    check_tool_choice,
    parse_mcp_config,
    unknown_placeholders,
)
from agentstudy.protocol.prepare_steps import MAX_STEPS, PreparedStateCap, PrepareStep
from agentstudy.protocol.sandbox_binds import kernel_bind_problem
from agentstudy.protocol.seed_names import DOC_BRIDGE_MCP as DOC_BRIDGE_MCP
from agentstudy.protocol.seed_names import REPOSITORY_ONLY as REPOSITORY_ONLY
from agentstudy.protocol.seed_names import SCENARIOS as SCENARIOS
from agentstudy.protocol.task import plain_text
from agentstudy.protocol.tool_names import listing_problem
from agentstudy.protocol.treatment import tool_set_sha256

ARM_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_LABEL_CHARS = 200
MAX_DESCRIBED_TOOLS = 200
MAX_DESCRIPTION_CHARS = 8000
"""Bounds of an arm's ``toolDescriptions``: tools described, characters of one description."""

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True, validate_by_name=True, validate_by_alias=True)


class Arm(BaseModel):
    """One arm: ``id`` a safe token (``[a-z0-9][a-z0-9-]*``, at most 64 characters) and ``label`` plain text.

    The label (1–200 characters, no control character, not blank) is what summaries and
    reports show for the arm.
    """

    model_config = _STRICT

    id: str = Field(min_length=1, max_length=64, pattern=ARM_ID_PATTERN.pattern,
                    description="Safe token: [a-z0-9][a-z0-9-]*.")
    label: str = Field(min_length=1, max_length=MAX_LABEL_CHARS, description="Human label, plain text.")

    @field_validator("label")
    @classmethod
    def _plain_label(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the label is blank")
        return plain_text(value, "the label")


class Probe(BaseModel):
    """The freshness probe: ``tool`` (one of the treatment's ``tools``) called with ``arguments`` (a JSON object)."""

    model_config = _STRICT

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ServerArm(Arm):
    """An arm that may carry one read-only MCP server (issue 18; either arm since issue 44).

    Fields beyond ``id`` and ``label`` (all absent: the repository-only arm, which only the control may be):
        mcpConfig: ``{"mcpServers": {"NAME": {"command", "args", "env"}}}`` with exactly one stdio
            server and only the known placeholders; absent means the bundled read-only server
            (``doc-bridge``, which serves ``{root}``).
        tools: the server's read-only tools the agent may call (every other listed tool is denied).
        probe: the freshness probe, one of ``tools``.
        serverConfigCandidates: file names tried in each corpus snapshot for ``{config}``
            (``NAME#KEY`` needs that JSON key); ``[]`` means no config file; absent means
            doc-bridge's own list.
        sandboxBinds: absolute paths the server needs read-only inside its sandbox.
        allowOpenWorld: tools annotated ``openWorldHint: true`` the operator lets through (issue 32).
        prepare: preparation steps (``protocol.prepare_steps``: a tool call or a command) run once per
            checkout in the server's sandbox before any reservation; what they write is the server's
            private prepared state, copied afresh into every attempt's server of this arm (issue 32).
        prepareLimits: the cap on that state (``maxFiles``, ``maxBytes``;
            :class:`~agentstudy.protocol.prepare_steps.PreparedStateCap`).
        toolDescriptions: ``{TOOL: DESCRIPTION}``, each TOOL one of ``tools``: the description the agent is
            shown instead of the server's own (names, input schemas and annotations untouched; issue 44).
        undecided: the decisions ``agentstudy init`` left open; a study with any is refused,
            naming this field (issue 32).
    """

    SLOT: ClassVar[str] = "treatment"
    """The arm's key under ``arms`` (how its errors name its fields)."""

    mcp_config: dict[str, Any] | None = Field(default=None, alias="mcpConfig")
    tools: list[str] | None = Field(default=None, min_length=1)
    probe: Probe | None = None
    server_config_candidates: list[str] | None = Field(default=None, alias="serverConfigCandidates")
    sandbox_binds: list[str] | None = Field(default=None, alias="sandboxBinds")
    allow_open_world: list[str] = Field(default_factory=list, alias="allowOpenWorld")
    prepare: list[PrepareStep] = Field(default_factory=list, max_length=MAX_STEPS)
    tool_descriptions: dict[str, str] = Field(default_factory=dict, alias="toolDescriptions",
                                              max_length=MAX_DESCRIBED_TOOLS)
    prepare_limits: PreparedStateCap = Field(default_factory=PreparedStateCap, alias="prepareLimits")
    undecided: list[dict[str, Any]] = Field(default_factory=list, max_length=0)

    @model_validator(mode="before")
    @classmethod
    def _settled(cls, data: Any) -> Any:
        open_decisions = data.get("undecided") if isinstance(data, dict) else None
        if isinstance(open_decisions, list) and open_decisions:
            first = open_decisions[0]
            field = first.get("field", "?") if isinstance(first, dict) else "?"
            settle = first.get("settleWith", "") if isinstance(first, dict) else ""
            raise ValueError(f"arms.{cls.SLOT}.undecided holds {len(open_decisions)} open decision(s) of the draft "
                             f"(first: {field}, settled by agentstudy init {settle}); settle each and remove it")
        descriptions = data.get("toolDescriptions") if isinstance(data, dict) else None
        if isinstance(descriptions, dict):
            for tool, text in descriptions.items():
                if not isinstance(text, str):
                    raise ValueError(f"arms.{cls.SLOT}.toolDescriptions.{tool} must be the description's text: "
                                     "only a description can be replaced (a tool's name, input schema and "
                                     "annotations are the server's)")
        return data

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: list[str] | None) -> list[str] | None:
        problem = None if value is None else listing_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("tool_descriptions")
    @classmethod
    def _descriptions(cls, value: dict[str, str]) -> dict[str, str]:
        for tool, text in value.items():
            if not text.strip() or len(text) > MAX_DESCRIPTION_CHARS or "\0" in text:
                raise ValueError(f"the description of {tool} must be 1-{MAX_DESCRIPTION_CHARS} characters of text, "
                                 "not blank")
        return value

    @field_validator("server_config_candidates")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        for name in value or []:
            if not name.strip() or "," in name or plain_text(name, "a name") != name.strip():
                raise ValueError(f"{name!r} must be a non-blank name without commas or surrounding spaces")
        return value

    @field_validator("sandbox_binds")
    @classmethod
    def _absolute(cls, value: list[str] | None) -> list[str] | None:
        for bind in value or []:
            if not os.path.isabs(bind) or any(c in bind for c in "\r\n\0"):
                raise ValueError(f"a sandbox bind must be an absolute path, got {bind!r}")
            problem = kernel_bind_problem(bind)
            if problem is not None:
                raise ValueError(problem.replace("--sandbox-bind", "sandboxBinds", 1))
        return value

    @model_validator(mode="after")
    def _server(self) -> ServerArm:
        slot = f"arms.{self.SLOT}"
        if self.tools is None or self.probe is None:
            given = [key for key, value in self._server_fields().items() if value]
            if self.tools is not None or self.probe is not None or given:
                missing = "tools" if self.tools is None else "probe"
                raise ValueError(f"{slot} names a server ({', '.join(given) or 'tools or probe'}) but no {missing}: "
                                 "an arm's server needs its tools and probe")
            return self
        try:
            check_tool_choice(self.tools, self.probe.tool, self.probe.arguments,
                              ChoiceNames(tools=f"{slot}.tools", probe=f"{slot}.probe.tool",
                                          arguments=f"{slot}.probe.arguments"))
            strays = [tool for tool in self.allow_open_world if tool not in self.tools]
            if strays:
                raise McpConfigError(f"{slot}.allowOpenWorld names {', '.join(strays)}, not among {slot}.tools")
            unknown_tools = [tool for tool in self.tool_descriptions if tool not in self.tools]
            if unknown_tools:
                raise McpConfigError(f"{slot}.toolDescriptions names {', '.join(unknown_tools)}, not among "
                                     f"{slot}.tools (only a tool the agent is offered can be described)")
            unknown = unknown_placeholders([text for step in self.prepare for text in step.strings()])
            if unknown:
                raise McpConfigError(f"{slot}.prepare names unknown placeholders {unknown} "
                                     f"(known: {' '.join(PLACEHOLDERS)})")
            if self.mcp_config is not None:
                self.server_name()
        except McpConfigError as error:
            raise ValueError(str(error)) from None
        return self

    def _server_fields(self) -> dict[str, Any]:
        return {"mcpConfig": self.mcp_config, "serverConfigCandidates": self.server_config_candidates,
                "sandboxBinds": self.sandbox_binds, "allowOpenWorld": self.allow_open_world, "prepare": self.prepare,
                "toolDescriptions": self.tool_descriptions}

    @property
    def has_server(self) -> bool:
        """Whether this arm runs a server (its ``tools`` and ``probe`` are given)."""
        return self.tools is not None and self.probe is not None

    def server_name(self) -> str | None:
        """The one server's name in ``mcpConfig`` (``None``: the bundled server, or no server).

        Raises:
            McpConfigError: the config is malformed (``parse_mcp_config``'s rules).
        """
        if self.mcp_config is None or self.tools is None or self.probe is None:
            return None
        spec = parse_mcp_config(self.mcp_config, tuple(self.tools), self.probe.tool, dict(self.probe.arguments),
                                tuple(self.server_config_candidates or ()))
        return spec.name


class TreatmentArm(ServerArm):
    """The treatment arm: the control's repository tools plus one read-only MCP server (issue 18); its ``tools``
    and ``probe`` are required (:class:`ServerArm`)."""

    tools: list[str] = Field(min_length=1)
    probe: Probe


class ControlArm(ServerArm):
    """The control arm: the repository tools only, or, given ``tools`` and ``probe``, with a server of its own
    (server A against server B, a version against the next); the same fields and checks as
    :class:`TreatmentArm`."""

    SLOT: ClassVar[str] = "control"


class StudyArms(BaseModel):
    """``{"control": ControlArm, "treatment": TreatmentArm}``; the two ids differ."""

    model_config = _STRICT

    control: ControlArm
    treatment: TreatmentArm

    @model_validator(mode="after")
    def _distinct(self) -> StudyArms:
        if self.control.id == self.treatment.id:
            raise ValueError("the control and treatment arm ids must differ")
        return self

    def labels(self) -> dict[str, str]:
        """Ledger scenario → label: ``{"repository-only": control label, "doc-bridge-mcp": treatment label}``."""
        return {REPOSITORY_ONLY: self.control.label, DOC_BRIDGE_MCP: self.treatment.label}


@dataclass(frozen=True)
class ServedArm:
    """What a run established about one arm's server, for the ledger's ``arms`` (issue 44).

    Attributes:
        name: the server's name (``mcpServers`` key).
        command: its command and arguments, placeholders unfilled.
        tools: the tools the agent is offered (the arm's ``tools``).
        descriptions: each listed tool's description as the agent was shown it (after ``toolDescriptions``).
        tools_list_sha256: SHA-256 of the whole ``tools/list`` the preflight's client saw; ``None`` when unknown.
        server_version: ``serverInfo.version`` of the server's ``initialize`` answer; ``None`` when unknown.
        prepare: the arm's preparation steps as one line each (a tool call with its scope, or a command).
    """

    name: str
    command: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    descriptions: Mapping[str, str] = field(default_factory=dict)
    tools_list_sha256: str | None = None
    server_version: str | None = None
    prepare: tuple[str, ...] = ()


def compares_servers(arms: StudyArms) -> bool:
    """Whether the study compares two configurations of a server (issue 44): the control arm has a server of its
    own or an arm rewrites tool descriptions. Only such a study's ledger records the arms' server facts."""
    return arms.control.has_server or bool(arms.control.tool_descriptions or arms.treatment.tool_descriptions)


def arms_record(arms: StudyArms, server_name: str, treatment: ServedArm | None = None,
                control: ServedArm | None = None) -> list[dict[str, Any]]:
    """The ledger's ``arms`` block (issue 18): one object per scenario, control first.

    Shape: ``[{"scenario": "repository-only", "id": ..., "label": ...}, {"scenario":
    "doc-bridge-mcp", "id": ..., "label": ..., "mcpServer": server_name}]``; ``server_name`` is
    the server actually run (a flag may have replaced the file's). A study that compares two configurations
    (:func:`compares_servers`) also records, for every arm with a server (``treatment``, ``control``: what the
    run established; issue 44), ``mcpServer``, ``toolDescriptionsSha256`` (of the arm's overrides),
    ``toolsListSha256``, ``mcpCommand``, ``offeredTools``, ``shownDescriptions``, ``prepareSteps`` and
    ``serverVersion`` (each when known); any other study's arms are recorded as before.
    """
    compared = compares_servers(arms)
    entries: list[dict[str, Any]] = []
    for scenario, arm, served in ((REPOSITORY_ONLY, arms.control, control), (DOC_BRIDGE_MCP, arms.treatment,
                                                                             treatment)):
        entry: dict[str, Any] = {"scenario": scenario, "id": arm.id, "label": arm.label}
        name = server_name if scenario == DOC_BRIDGE_MCP else (served.name if served and arm.has_server else None)
        if name is not None:
            entry["mcpServer"] = name
        if compared and name is not None:
            entry["toolDescriptionsSha256"] = tool_set_sha256(dict(arm.tool_descriptions))
            if served is not None:
                entry.update(_served(served))
        entries.append(entry)
    return entries


def _served(served: ServedArm) -> dict[str, Any]:
    facts: dict[str, Any] = {"mcpCommand": list(served.command), "offeredTools": list(served.tools),
                             "shownDescriptions": {tool: served.descriptions[tool] for tool in served.tools
                                                   if tool in served.descriptions},
                             "prepareSteps": list(served.prepare)}
    if served.tools_list_sha256 is not None:
        facts["toolsListSha256"] = served.tools_list_sha256
    if served.server_version is not None:
        facts["serverVersion"] = served.server_version
    return facts
