"""Which server an arm runs (issue 44): the one rule every transport, runner and preflight asks. Pure.

The treatment arm (ledger scenario ``doc-bridge-mcp``) always runs its server; the control arm
(``repository-only``) runs one only when the study file gives it one (``arms.control.tools``…): server A against
server B, a version against the next, one server's descriptions against a rewrite. Without a control server every
attempt is set up exactly as before. Agents ask :func:`arm_server` (through their settings' ``arm_mcp``), never
the scenario's name, so a third agent needs nothing new.
"""

from __future__ import annotations

from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, REPOSITORY_ONLY


def arm_server(scenario: str, treatment: McpServerSpec, control: McpServerSpec | None) -> McpServerSpec | None:
    """The server ``scenario``'s arm runs: ``treatment`` for ``doc-bridge-mcp``, ``control`` (``None``: the
    repository-only arm) for ``repository-only``, ``None`` for any other scenario."""
    if scenario == DOC_BRIDGE_MCP:
        return treatment
    return control if scenario == REPOSITORY_ONLY else None


def served_scenarios(control: McpServerSpec | None) -> tuple[str, ...]:
    """The scenarios whose arm runs a server, control first: ``("doc-bridge-mcp",)`` unless the control has one."""
    return (REPOSITORY_ONLY, DOC_BRIDGE_MCP) if control is not None else (DOC_BRIDGE_MCP,)


__all__ = ["arm_server", "served_scenarios"]
