"""Which agents exist (issue 21 item 1): ``--agent NAME`` -> its ``agents.base.AgentCli``.

The modules are imported on first use, so this registry is cheap to import anywhere (commands,
report code) and ``transports.cli`` can use it without an import cycle.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from agentstudy.agents.base import AgentCli
from agentstudy.io.scratch import sweep_stale
from agentstudy.protocol.agent_names import AGENT_NAMES, DEFAULT_AGENT

__all__ = ["AGENT_MODULES", "AGENT_NAMES", "DEFAULT_AGENT", "UnknownAgent", "agent_cli", "sweep_stale_scratch"]

AGENT_MODULES: dict[str, str] = {
    "claude-code": "agentstudy.agents.claude_code",
    "codex": "agentstudy.agents.codex",
    "gemini": "agentstudy.agents.gemini_cli",
}
"""Agent name (``protocol.agent_names.AGENT_NAMES``, in that order) -> the module whose ``AGENT`` is its
``AgentCli``."""


class UnknownAgent(ValueError):
    """No agent of that name (one line naming the known ones)."""


@cache
def agent_cli(name: str) -> AgentCli:
    """The ``AgentCli`` of ``name`` (``claude-code``, ``codex`` or ``gemini``).

    Raises:
        UnknownAgent: ``name`` is not in ``AGENT_NAMES``.
    """
    module = AGENT_MODULES.get(name)
    if module is None:
        raise UnknownAgent(f"unknown agent {name!r} (known: {', '.join(AGENT_NAMES)})")
    agent: AgentCli = importlib.import_module(module).AGENT
    return agent


def sweep_stale_scratch(environ: Mapping[str, str] = os.environ) -> list[Path]:
    """Remove what killed runs of this machine left (``io.scratch.sweep_stale``): owner-marked directories of
    dead owners in the system temp dir and in every agent's own private-directory root (Codex's homes live
    outside temp dirs, issue 21); a root that does not exist is skipped. Returns the removed directories."""
    roots: list[Path | None] = [None]
    for name in AGENT_NAMES:
        root = agent_cli(name).default_scratch_root(environ)
        if root is not None and root.is_dir() and root not in roots:
            roots.append(root)
    return sorted(removed for root in roots for removed in sweep_stale(root))
