"""Talk to the MCP server under study through the official ``mcp`` client SDK (stdio).

Used before any reservation: list the server's live tools (``tools/list``) and call its
freshness probe (``tools/call``), so that the deny list comes from what the server really
exposes and a broken server refuses the run with nothing charged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

MCP_PROBE_TIMEOUT_S = 30.0


class McpProbeError(RuntimeError):
    """The MCP server could not be started, listed or probed."""


@dataclass(frozen=True)
class McpProbe:
    """What the server showed: ``tools`` (names as listed, e.g. ``doc.search``) and whether the probe call succeeded."""

    tools: tuple[str, ...]
    probe_ok: bool


async def _probe(
    params: StdioServerParameters, probe_tool: str | None, probe_arguments: Mapping[str, Any]
) -> McpProbe:
    with anyio.fail_after(MCP_PROBE_TIMEOUT_S):
        with open(os.devnull, "w") as errlog:  # the SDK wants a text stream for server stderr
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:
                listed = await client.list_tools()
                names = tuple(tool.name for tool in listed.tools)
                ok = True
                if probe_tool is not None:
                    result = await client.call_tool(probe_tool, dict(probe_arguments))
                    ok = not result.is_error
                return McpProbe(names, ok)


def probe_mcp_server(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    probe_tool: str | None = None,
    probe_arguments: Mapping[str, Any] | None = None,
    cwd: Path | None = None,
) -> McpProbe:
    """Start the server over stdio, list its tools and optionally call ``probe_tool``.

    Raises:
        McpProbeError: on any start, protocol or timeout failure (one-line reason).
    """
    params = StdioServerParameters(command=command, args=list(args), env=dict(env) if env else None, cwd=cwd)
    try:
        return anyio.run(_probe, params, probe_tool, probe_arguments or {})
    except Exception as error:  # the SDK raises many kinds; the caller needs one
        raise McpProbeError(f"MCP server {command} could not be probed: {error.__class__.__name__}") from None
