"""The pinned Claude Code versions the end-to-end tests run with (issue 33 item 8): 2.1.296 (the pin) and
2.1.328 (the newest 2.1.x when it was pinned; ``scripts/setup.sh`` installs it into ``.tools/claude-code-next``).

``conftest.claude_code`` is parametrized over :data:`CLAUDE_CODE_VERSIONS`; a test that takes it runs once per
version, with that version's binary and the version the runner must find (``--cli-version`` /
``--agent-version`` / ``expected_cli_version``).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CLAUDE_CODE_VERSIONS = {"2.1.296": ("claude-code", "AGENTSTUDY_CLAUDE_BIN"),
                        "2.1.328": ("claude-code-next", "AGENTSTUDY_CLAUDE_NEXT_BIN")}
"""version -> (the folder under ``.tools``, the environment variable that may name another binary)."""


@dataclass(frozen=True)
class ClaudeCode:
    """One installed Claude Code: its executable and the version it reports (``2.1.328``)."""

    binary: Path
    version: str


@cache
def installed_claude_code(version: str) -> ClaudeCode:
    """The binary of ``version`` (checked once per session by running ``--version``).

    Raises:
        LookupError: the binary is missing or reports another version (run ``scripts/setup.sh``).
    """
    folder, variable = CLAUDE_CODE_VERSIONS[version]
    explicit = os.environ.get(variable)
    binary = Path(explicit) if explicit else REPO / ".tools" / folder / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        raise LookupError(f"Claude Code {version} missing at {binary}: run scripts/setup.sh")
    reported = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False)
    first = (reported.stdout.split() or [""])[0]
    if first != version:
        raise LookupError(f"{binary} reports version {first!r}, not {version}")
    return ClaudeCode(binary, version)
