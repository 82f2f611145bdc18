"""Find the MCP server's own config file in a corpus checkout, and read a Claude Code MCP config file.

Candidates are tried in order; ``NAME#KEY`` accepts the JSON file ``NAME`` only when its
top-level object has ``KEY`` (doc-bridge reads ``package.json`` only with a ``docBridge`` key).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentstudy.protocol.mcp_spec import McpConfigError, McpServerSpec, parse_mcp_config


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
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
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
        McpConfigError: the file is missing, not JSON, or malformed.
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise McpConfigError(f"MCP config not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise McpConfigError(f"MCP config {path} is not readable JSON") from None
    return parse_mcp_config(document, read_only_tools, probe_tool, probe_arguments, candidates)
