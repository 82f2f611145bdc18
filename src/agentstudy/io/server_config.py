"""Find the MCP server's own config file in a corpus checkout, and read a Claude Code MCP config file.

Candidates are tried in order; ``NAME#KEY`` accepts the JSON file ``NAME`` only when its
top-level object has ``KEY`` (doc-bridge reads ``package.json`` only with a ``docBridge`` key).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentstudy.io.user_file import UserFileError, read_json_file
from agentstudy.protocol.mcp_spec import McpConfigError, McpServerSpec, parse_mcp_config

MAX_MCP_CONFIG_BYTES = 1024 * 1024
"""An MCP config file above 1 MiB is refused."""


def resolve_server_config(checkout: Path, candidates: Sequence[str]) -> Path | None:
    """The first candidate that exists as a regular file in ``checkout`` (absolute path), or ``None``."""
    for candidate in candidates:
        name, _, key = candidate.partition("#")
        path = checkout / name
        if not path.is_file() or path.is_symlink():
            continue
        if not key:
            return path.resolve()
        try:
            document = read_json_file(path, what="the server config")
        except UserFileError:
            continue
        if isinstance(document, dict) and key in document:
            return path.resolve()
    return None


def load_mcp_config(
    path: Path,
    read_only_tools: tuple[str, ...],
    probe_tool: str,
    probe_arguments: dict[str, Any],
    candidates: tuple[str, ...],
) -> McpServerSpec:
    """Read a Claude Code MCP config file (see ``parse_mcp_config``).

    Raises:
        McpConfigError: the file is missing, unreadable (a directory, permission, a name too
            long), not bounded JSON (``protocol.json_input``), or malformed.
    """
    try:
        document = read_json_file(path, what="MCP config", max_bytes=MAX_MCP_CONFIG_BYTES)
    except UserFileError as error:
        raise McpConfigError(f"MCP config not found: {path}" if error.missing else str(error)) from None
    return parse_mcp_config(document, read_only_tools, probe_tool, probe_arguments, candidates)
