"""``--dry-run --probe``: start the MCP server under study once per checkout, as preflight does, and say what it lists.

Issue 18, item 5. The server runs exactly as the run's preflight runs it
(``runners.preflight.prepare_study``: roots and corpus checks, containment proof, the server's
per-corpus snapshot, one contained server per checkout of the MCP arm, its tools vetted and
its freshness probe called); nothing is reserved, no ledger is written, no agent is started,
and every snapshot is removed before this returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from agentstudy.io.containment import ContainmentMode
from agentstudy.protocol.manifest import StudyDefinition
from agentstudy.protocol.mcp_spec import McpServerSpec, mcp_tool_name
from agentstudy.protocol.prepare_steps import prepare_outcomes
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.preflight import prepare_study


def probe_servers(
    spec: McpServerSpec,
    manifest: StudyDefinition,
    schedule: Sequence[ScheduleEntry],
    roots: Mapping[str, Path],
    containment: ContainmentMode,
    parent_env: Mapping[str, str],
    control: McpServerSpec | None = None,
) -> dict[str, Any]:
    """Run the study's preflight without a run and describe the server (the dry run's ``mcpProbe`` object).

    Returns:
        ``{"name", "serversStarted", "checkouts": [repository…], "containment",
        "probe": {"tool", "ok": true}, "tools": [{"name", "cliName", "allowed",
        "readOnlyEvidence" (str or None), "annotations": {camelCase: value}}…], "prepared": [...]}``, tools
        in the server's sorted order; ``prepared`` (issue 32) only when the study declares preparation steps
        (``protocol.prepare_steps.prepare_outcomes``, the ledger's ``mcpServer.prepared``); ``control`` (issue 44:
        the control arm's own server, given as ``control``, checked the same way) as
        ``{"name", "serversStarted", "probe", "listedTools"}``.

    Raises:
        PreflightError: as ``prepare_study`` (a missing ``--root``, a failed corpus check, a
            server that does not start or lists or annotates the tools otherwise, a failed probe
            quoting the server's own bounded, scrubbed text).
    """
    with ExitStack() as stack:
        prepared = prepare_study(stack, spec, manifest, schedule, roots, containment, parent_env, control=control)
        checkouts = list(prepared.corpora.names)
    mcp = prepared.mcp
    tools = [
        {
            "name": tool,
            "cliName": mcp_tool_name(spec.name, tool),
            "allowed": tool in spec.read_only_tools,
            "readOnlyEvidence": mcp.read_only_evidence.get(tool),
            "annotations": dict(mcp.annotations.get(tool, {})),
        }
        for tool in mcp.listed_tools
    ]
    return {
        "name": spec.name,
        "serversStarted": mcp.servers_started,
        "checkouts": checkouts,
        "containment": prepared.containment,
        "probe": {"tool": spec.probe_tool, "ok": True},
        "tools": tools,
        **({"prepared": prepare_outcomes(mcp.prepared)} if mcp.prepared else {}),
        **({"control": {"name": control.name, "serversStarted": prepared.control[0].servers_started,
                        "probe": {"tool": control.probe_tool, "ok": True},
                        "listedTools": list(prepared.control[0].listed_tools)}}
           if control is not None and prepared.control is not None else {}),
    }
