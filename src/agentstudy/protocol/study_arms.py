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
from typing import Any

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

ARM_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_LABEL_CHARS = 200
STUDY_NAMES = ChoiceNames(tools="arms.treatment.tools", probe="arms.treatment.probe.tool",
                          arguments="arms.treatment.probe.arguments")
"""How the shared tool-choice check words a study file's errors."""

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


class TreatmentArm(Arm):
    """The treatment arm: the control's repository tools plus one read-only MCP server (issue 18).

    Fields beyond ``id`` and ``label``:
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
            private prepared state, copied afresh into every treatment attempt's server (issue 32).
        prepareLimits: the cap on that state (``maxFiles``, ``maxBytes``;
            :class:`~agentstudy.protocol.prepare_steps.PreparedStateCap`).
        undecided: the decisions ``agentstudy init`` left open; a study with any is refused,
            naming this field (issue 32).
    """

    mcp_config: dict[str, Any] | None = Field(default=None, alias="mcpConfig")
    tools: list[str] = Field(min_length=1)
    probe: Probe
    server_config_candidates: list[str] | None = Field(default=None, alias="serverConfigCandidates")
    sandbox_binds: list[str] | None = Field(default=None, alias="sandboxBinds")
    allow_open_world: list[str] = Field(default_factory=list, alias="allowOpenWorld")
    prepare: list[PrepareStep] = Field(default_factory=list, max_length=MAX_STEPS)
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
            raise ValueError(f"arms.treatment.undecided holds {len(open_decisions)} open decision(s) of the draft "
                             f"(first: {field}, settled by agentstudy init {settle}); settle each and remove it")
        return data

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: list[str]) -> list[str]:
        problem = listing_problem(value)
        if problem is not None:
            raise ValueError(problem)
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
    def _server(self) -> TreatmentArm:
        try:
            check_tool_choice(self.tools, self.probe.tool, self.probe.arguments, STUDY_NAMES)
            strays = [tool for tool in self.allow_open_world if tool not in self.tools]
            if strays:
                raise McpConfigError(f"arms.treatment.allowOpenWorld names {', '.join(strays)}, not among "
                                     "arms.treatment.tools")
            unknown = unknown_placeholders([text for step in self.prepare for text in step.strings()])
            if unknown:
                raise McpConfigError(f"arms.treatment.prepare names unknown placeholders {unknown} "
                                     f"(known: {' '.join(PLACEHOLDERS)})")
            if self.mcp_config is not None:
                self.server_name()
        except McpConfigError as error:
            raise ValueError(str(error)) from None
        return self

    def server_name(self) -> str | None:
        """The one server's name in ``mcpConfig`` (``None``: the bundled server).

        Raises:
            McpConfigError: the config is malformed (``parse_mcp_config``'s rules).
        """
        if self.mcp_config is None:
            return None
        spec = parse_mcp_config(self.mcp_config, tuple(self.tools), self.probe.tool, dict(self.probe.arguments),
                                tuple(self.server_config_candidates or ()))
        return spec.name


class StudyArms(BaseModel):
    """``{"control": Arm, "treatment": TreatmentArm}``; the two ids differ."""

    model_config = _STRICT

    control: Arm
    treatment: TreatmentArm

    @model_validator(mode="after")
    def _distinct(self) -> StudyArms:
        if self.control.id == self.treatment.id:
            raise ValueError("the control and treatment arm ids must differ")
        return self

    def labels(self) -> dict[str, str]:
        """Ledger scenario → label: ``{"repository-only": control label, "doc-bridge-mcp": treatment label}``."""
        return {REPOSITORY_ONLY: self.control.label, DOC_BRIDGE_MCP: self.treatment.label}


def arms_record(arms: StudyArms, server_name: str) -> list[dict[str, str]]:
    """The ledger's ``arms`` block (issue 18): one object per scenario, control first.

    Shape: ``[{"scenario": "repository-only", "id": ..., "label": ...}, {"scenario":
    "doc-bridge-mcp", "id": ..., "label": ..., "mcpServer": server_name}]``; ``server_name`` is
    the server actually run (a flag may have replaced the file's).
    """
    return [
        {"scenario": REPOSITORY_ONLY, "id": arms.control.id, "label": arms.control.label},
        {"scenario": DOC_BRIDGE_MCP, "id": arms.treatment.id, "label": arms.treatment.label,
         "mcpServer": server_name},
    ]
