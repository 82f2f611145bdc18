"""Run this checkout's ``agentstudy`` as a real subprocess.

The shared virtual environment's editable install may point at another checkout, so the
command and the bundled MCP server child get ``PYTHONPATH`` set to this checkout's ``src``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from agentstudy.runners.preflight import DEFAULT_MCP_SERVER

SRC = Path(__file__).resolve().parents[1] / "src"


def run_agentstudy(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m agentstudy args`` with ``env`` (default: ours) plus ``PYTHONPATH``; not checked."""
    child = {**(os.environ if env is None else env), "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "agentstudy", *args], capture_output=True, text=True, env=child,
                          timeout=300, check=False)


def bundled_server_config(directory: Path) -> Path:
    """Write ``directory/mcp.json`` naming the bundled server run from this checkout; its path."""
    command = DEFAULT_MCP_SERVER.command
    entry = {"command": command[0], "args": list(command[1:]), "env": {"PYTHONPATH": str(SRC)}}
    path = directory / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {DEFAULT_MCP_SERVER.name: entry}}), encoding="utf-8")
    return path
