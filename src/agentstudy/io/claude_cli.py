"""Locate the Claude Code binary and its login file; the ``--version`` probe is ``io.agent_binary``'s.

The probe (``probe_version``, an allowlisted environment, private directories, contained like an
attempt) and the lookup order are agent-neutral (issue 21); this module names Claude Code's
install and override variable and re-exports them for the callers that predate the other agents.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentstudy.io.agent_binary import (
    AgentBinaryError,
    BinaryLookup,
    find_agent_binary,
    probe_version,
    project_root,
    version_argv,
    version_environment,
)

__all__ = ["CLAUDE_LOOKUP", "PINNED_INSTALL", "ClaudeBinaryError", "find_claude_binary", "find_login_file",
           "probe_version", "project_root", "version_argv", "version_environment", "version_token"]

PINNED_INSTALL = Path(".tools") / "claude-code" / "node_modules" / ".bin" / "claude"
"""Where ``scripts/setup.sh`` installs the pinned CLI, relative to the project root."""
CLAUDE_LOOKUP = BinaryLookup("Claude Code", "AGENTSTUDY_CLAUDE_BIN", PINNED_INSTALL, "claude", "--claude-bin")
"""Where the Claude Code binary may be (``io.agent_binary.find_agent_binary``)."""

ClaudeBinaryError = AgentBinaryError
"""The binary cannot be found, or its version cannot be read or does not match (the agent-neutral error)."""


def find_claude_binary(explicit: str | None, environ: Mapping[str, str]) -> Path:
    """Find the binary: ``explicit``, then ``AGENTSTUDY_CLAUDE_BIN``, then the pinned install, then PATH.

    Raises:
        ClaudeBinaryError: see ``io.agent_binary.find_agent_binary``.
    """
    return find_agent_binary(CLAUDE_LOOKUP, explicit, environ)


def version_token(line: str) -> str:
    """The first whitespace-separated token of a version line (``2.1.296`` of ``2.1.296 (Claude Code)``)."""
    return line.split()[0] if line.split() else ""


LOGIN_FILE = Path(".claude") / ".credentials.json"
"""Where Claude Code keeps its own login on Linux, relative to the user's HOME."""


def find_login_file(environ: Mapping[str, str]) -> Path | None:
    """The user's Claude Code credentials file (``$HOME/.claude/.credentials.json``) if it is a regular file.

    Only this file is made visible to a real run's attempts (read-only, inside the private HOME);
    the user's settings, memory, projects and other files never are (issue 15, deliverable 3).
    """
    home = environ.get("HOME")
    if not home:
        return None
    path = Path(home) / LOGIN_FILE
    return path.resolve() if path.is_file() else None
