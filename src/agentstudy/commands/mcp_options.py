"""Flags that configure the MCP server under study, shared by the commands that run studies."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from agentstudy.commands.common import fail
from agentstudy.io.server_config import load_mcp_config
from agentstudy.protocol.json_input import JsonInputError, load_json
from agentstudy.protocol.mcp_spec import (
    DOC_BRIDGE_CONFIG_CANDIDATES,
    PLACEHOLDERS,
    McpConfigError,
    McpServerSpec,
    json_strings,
    unknown_placeholders,
)
from agentstudy.protocol.read_only import ReadOnlyError, require_probe_allowed
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER

F = TypeVar("F", bound=Callable[..., Any])


def mcp_options(function: F) -> F:
    """Add the MCP flags: ``--mcp-config``, ``--server-config-candidates``, ``--mcp-tools``, ``--mcp-probe``,
    ``--mcp-probe-arguments``, ``--sandbox-bind``."""
    options = [
        click.option("--mcp-config", "mcp_config_file", type=click.Path(path_type=Path),
                     help="Claude Code MCP config naming exactly one stdio server (default: the bundled read-only "
                          "server). Placeholders in its command/args: {root} a read-only snapshot of the pinned "
                          "corpus (the export's tree), {pin}, {config} the server config found in that snapshot, "
                          "{git} a private read-only clone with the pin's history only, {checkout} the live "
                          "checkout (recorded as not isolated)."),
        click.option("--server-config-candidates", default=",".join(DOC_BRIDGE_CONFIG_CANDIDATES), show_default=True,
                     help="Files tried in order in each corpus snapshot for {config}; NAME#KEY needs that JSON key; "
                          "\"\" means the server needs no config file."),
        click.option("--mcp-tools", default="doc.search,doc.get,handoff.resolve", show_default=True,
                     help="The server's read-only tools the agent may call; every other listed tool is denied. "
                          "Preflight refuses a named tool the server annotates readOnlyHint: false or "
                          "destructiveHint: true; one without readOnlyHint is allowed on your word, and the "
                          "ledger says so."),
        click.option("--mcp-probe", default="doc.search", show_default=True,
                     help="Freshness probe called at the pin before the run; one of --mcp-tools."),
        click.option("--mcp-probe-arguments", default='{"query": "the"}', show_default=True,
                     help="JSON object of arguments for the probe; the placeholders are filled in its strings."),
        click.option("--sandbox-bind", "sandbox_binds", multiple=True, metavar="PATH",
                     help="An absolute path the MCP server needs read-only inside the sandbox, beyond its command, "
                          "interpreter and the existing absolute paths among its arguments (repeatable)."),
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
    sandbox_binds: tuple[str, ...] = (),
) -> McpServerSpec:
    """Build the MCP server spec from the flags; exit 2 with one line on a bad value.

    Bad values: ``--mcp-tools`` naming no tool, ``--mcp-probe`` not one of them, probe arguments
    that are not a bounded JSON object or name an unknown ``{placeholder}``, a missing or
    malformed ``--mcp-config`` (not exactly one server, unknown placeholders), or a
    ``--sandbox-bind`` that is not an existing absolute path. Nothing is started.
    """
    for bind in sandbox_binds:
        if not os.path.isabs(bind) or any(c in bind for c in "\r\n\0"):
            fail(f"--sandbox-bind must be an absolute path, got {bind!r}")
        if not os.path.lexists(bind):
            fail(f"--sandbox-bind {bind} does not exist")
    tools = tuple(t.strip() for t in mcp_tools.split(",") if t.strip())
    candidates = tuple(c.strip() for c in server_config_candidates.split(",") if c.strip())
    if not tools:
        fail("--mcp-tools names no tool")
    try:
        require_probe_allowed(mcp_probe, tools)
    except ReadOnlyError as error:
        fail(str(error))
    try:
        arguments = load_json(mcp_probe_arguments)
    except JsonInputError as error:
        fail(f"--mcp-probe-arguments {error}")
    if not isinstance(arguments, dict):
        fail("--mcp-probe-arguments must be a JSON object")
    unknown = unknown_placeholders(json_strings(arguments))
    if unknown:
        fail(f"--mcp-probe-arguments names unknown placeholders {unknown} (known: {' '.join(PLACEHOLDERS)})")
    if mcp_config_file is None:
        return McpServerSpec(
            name=DEFAULT_MCP_SERVER.name,
            command=DEFAULT_MCP_SERVER.command,
            read_only_tools=tools,
            probe_tool=mcp_probe,
            probe_arguments=arguments,
            config_candidates=candidates,
            sandbox_binds=(*DEFAULT_MCP_SERVER.sandbox_binds, *sandbox_binds),
        )
    try:
        spec = load_mcp_config(mcp_config_file, tools, mcp_probe, arguments, candidates)
    except McpConfigError as error:
        fail(str(error))
    return spec.with_sandbox_binds(sandbox_binds)
