"""Locate and probe the Claude Code binary (``--version``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from agentstudy.io.process import run_bounded

VERSION_TIMEOUT_S = 10.0
VERSION_OUTPUT_LIMIT = 4096
PINNED_INSTALL = Path(".tools") / "claude-code" / "node_modules" / ".bin" / "claude"
"""Where ``scripts/setup.sh`` installs the pinned CLI, relative to the project root."""


class ClaudeBinaryError(RuntimeError):
    """The binary cannot be found, or its version cannot be read or does not match."""


def project_root() -> Path:
    """The agentstudy checkout this module runs from (``src/agentstudy/io`` -> three levels up)."""
    return Path(__file__).resolve().parents[3]


def find_claude_binary(explicit: str | None, environ: Mapping[str, str]) -> Path:
    """Find the binary: ``explicit``, then ``AGENTSTUDY_CLAUDE_BIN``, then the pinned install, then PATH.

    Raises:
        ClaudeBinaryError: if none is found, or the chosen path holds CR, LF or NUL.
    """
    for candidate in (explicit, environ.get("AGENTSTUDY_CLAUDE_BIN")):
        if candidate:
            if any(c in candidate for c in "\r\n\0"):
                raise ClaudeBinaryError("the Claude Code binary path contains a control character")
            return Path(candidate)
    pinned = project_root() / PINNED_INSTALL
    if pinned.exists():
        return pinned
    found = shutil.which("claude", path=environ.get("PATH", os.defpath))
    if found:
        return Path(found)
    raise ClaudeBinaryError("Claude Code binary not found: run scripts/setup.sh or pass --claude-bin")


def probe_version(binary: Path, env: Mapping[str, str], cwd: Path) -> str:
    """Run ``binary --version`` and return its first stdout line, trimmed (e.g. ``2.1.296 (Claude Code)``).

    Raises:
        ClaudeBinaryError: on a start failure, timeout, truncation, non-zero exit or a line that
            is not 1-120 printable ASCII characters.
    """
    result = run_bounded(
        [str(binary), "--version"], env, cwd, VERSION_TIMEOUT_S, stdout_limit=VERSION_OUTPUT_LIMIT
    )
    if not result.started:
        raise ClaudeBinaryError(f"cannot start {binary}")
    if result.timed_out or result.truncated or result.exit_code != 0:
        raise ClaudeBinaryError(f"{binary} --version failed")
    lines = result.stdout.decode("utf-8", "replace").splitlines()
    line = lines[0].strip() if lines else ""
    if not (1 <= len(line) <= 120) or not all(32 <= ord(c) < 127 for c in line):
        raise ClaudeBinaryError(f"{binary} --version printed an unreadable version line")
    return line


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
