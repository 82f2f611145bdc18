"""How every reader-facing text names an arm and the server (issue 28 item 7). Pure.

The ledger keeps the seed's scenario ids (``repository-only``, ``doc-bridge-mcp``) for
compatibility, in the observations and in JSON keys; everything a reader sees (report tables and
headings in every format, the end-of-run summary, ``agentstudy ledger``, warnings) names an arm
by its label: the study file's, else :data:`CONTROL_LABEL` and ``"Repository tools + SERVER"``.
One function, :func:`arm_label`, so no renderer keeps its own copy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, MAX_LABEL_CHARS, REPOSITORY_ONLY, SCENARIOS

CONTROL_LABEL = "Repository tools"
"""The control arm's label when the ledger records none (a seed manifest's run)."""
UNNAMED_SERVER = "the MCP server"
"""How a text names the server when the ledger records no name."""


def server_label(server: str | None) -> str:
    """The server's name as a reader sees it: ``server``, or :data:`UNNAMED_SERVER` when unknown."""
    return server if server else UNNAMED_SERVER


def arm_label(scenario: str, labels: Mapping[str, str] | None = None, server: str | None = None) -> str:
    """The label of ``scenario``'s arm (plain text).

    Args:
        scenario: a ledger scenario id.
        labels: scenario → label from the ledger's ``arms`` (a study file's run; empty or ``None`` otherwise).
        server: the server under study (``mcpServer.name``), ``None`` when not recorded.

    Returns:
        ``labels[scenario]`` when given; else ``"Repository tools"`` for ``repository-only``,
        ``"Repository tools + SERVER"`` for ``doc-bridge-mcp``, and any other scenario as it is.
    """
    given = (labels or {}).get(scenario)
    if given:
        return given
    if scenario == REPOSITORY_ONLY:
        return CONTROL_LABEL
    if scenario == DOC_BRIDGE_MCP:
        return f"{CONTROL_LABEL} + {server_label(server)}"
    return scenario


def namer(labels: Mapping[str, str] | None = None, server: str | None = None) -> Callable[[str], str]:
    """:func:`arm_label` bound to a run's labels and server: scenario → label."""
    return lambda scenario: arm_label(scenario, labels, server)


def arm_labels(labels: Mapping[str, str] | None = None, server: str | None = None) -> dict[str, str]:
    """Both arms' labels, control first: ``{scenario: arm_label(scenario, labels, server)}``."""
    return {scenario: arm_label(scenario, labels, server) for scenario in SCENARIOS}


def _plain(value: Any) -> str | None:
    return " ".join(value.split())[:MAX_LABEL_CHARS] if isinstance(value, str) and value.strip() else None


def ledger_arm_labels(document: Mapping[str, Any]) -> dict[str, str]:
    """Scenario → label from a ledger's ``arms`` (issue 18); ``{}`` when absent or malformed (read tolerantly)."""
    arms = document.get("arms")
    labels: dict[str, str] = {}
    for arm in arms if isinstance(arms, list) else []:
        if isinstance(arm, dict) and isinstance(arm.get("scenario"), str):
            label = _plain(arm.get("label"))
            if label is not None:
                labels[arm["scenario"]] = label
    return labels


def ledger_server_name(document: Mapping[str, Any]) -> str | None:
    """The server studied (a ledger's ``mcpServer.name``), ``None`` when not recorded (read tolerantly)."""
    server = document.get("mcpServer")
    return _plain(server.get("name")) if isinstance(server, dict) else None
