"""Flags that configure the MCP server under study, shared by the commands that run studies."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from agentstudy.commands.common import fail
from agentstudy.io.server_config import load_mcp_config
from agentstudy.protocol.mcp_spec import DOC_BRIDGE_CONFIG_CANDIDATES, McpConfigError, McpServerSpec
from agentstudy.protocol.read_only import ReadOnlyError, require_probe_allowed
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER

F = TypeVar("F", bound=Callable[..., Any])


def mcp_options(function: F) -> F:
    """Add the MCP flags: ``--mcp-config``, ``--server-config-candidates``, ``--mcp-tools``, ``--mcp-probe``,
    ``--mcp-probe-arguments``."""
    options = [
        click.option("--mcp-config", "mcp_config_file", type=click.Path(path_type=Path),
                     help="Claude Code MCP config naming exactly one stdio server; {root}, {pin} and {config} "
                          "in its command/args are filled per checkout (default: the bundled read-only server)."),
        click.option("--server-config-candidates", default=",".join(DOC_BRIDGE_CONFIG_CANDIDATES), show_default=True,
                     help="Files tried in order in each checkout for {config}; NAME#KEY needs that JSON key."),
        click.option("--mcp-tools", default="doc.search,doc.get,handoff.resolve", show_default=True,
                     help="The server's read-only tools the agent may call; every other listed tool is denied. "
                          "Preflight refuses a named tool the server annotates readOnlyHint: false or "
                          "destructiveHint: true; one without readOnlyHint is allowed on your word, and the "
                          "ledger says so."),
        click.option("--mcp-probe", default="doc.search", show_default=True,
                     help="Freshness probe called at the pin before the run; one of --mcp-tools."),
        click.option("--mcp-probe-arguments", default='{"query": "the"}', show_default=True,
                     help="JSON object of arguments for the probe."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def mcp_spec_from_options(
    mcp_config_file: Path | None,
    server_config_candidates: str,
    mcp_tools: str,
    mcp_probe: str,
    mcp_probe_arguments: str,
) -> McpServerSpec:
    """Build the MCP server spec from the flags; exit 2 with one line on a bad value.

    Bad values: ``--mcp-tools`` naming no tool, ``--mcp-probe`` not one of them, probe arguments
    that are not a JSON object, or a malformed ``--mcp-config``.
    """
    tools = tuple(t.strip() for t in mcp_tools.split(",") if t.strip())
    candidates = tuple(c.strip() for c in server_config_candidates.split(",") if c.strip())
    if not tools:
        fail("--mcp-tools names no tool")
    try:
        require_probe_allowed(mcp_probe, tools)
    except ReadOnlyError as error:
        fail(str(error))
    try:
        arguments = json.loads(mcp_probe_arguments)
    except json.JSONDecodeError:
        fail("--mcp-probe-arguments is not JSON")
    if not isinstance(arguments, dict):
        fail("--mcp-probe-arguments must be a JSON object")
    if mcp_config_file is None:
        return McpServerSpec(
            name=DEFAULT_MCP_SERVER.name,
            command=DEFAULT_MCP_SERVER.command,
            read_only_tools=tools,
            probe_tool=mcp_probe,
            probe_arguments=arguments,
            config_candidates=candidates,
        )
    try:
        return load_mcp_config(mcp_config_file, tools, mcp_probe, arguments, candidates)
    except McpConfigError as error:
        fail(str(error))
