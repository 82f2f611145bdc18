"""Which agents exist (issue 21 item 1): ``--agent NAME`` -> its ``agents.base.AgentCli``.

The modules are imported on first use, so this registry is cheap to import anywhere (commands,
report code) and ``transports.cli`` can use it without an import cycle.
"""

from __future__ import annotations

import importlib
from functools import cache

from agentstudy.agents.base import AgentCli

DEFAULT_AGENT = "claude-code"
"""The agent of a study that names none (every ledger written before issue 21)."""
AGENT_MODULES: dict[str, str] = {
    "claude-code": "agentstudy.agents.claude_code",
    "codex": "agentstudy.agents.codex",
}
"""Agent name -> the module whose ``AGENT`` is its ``AgentCli``."""
AGENT_NAMES: tuple[str, ...] = tuple(AGENT_MODULES)


class UnknownAgent(ValueError):
    """No agent of that name (one line naming the known ones)."""


@cache
def agent_cli(name: str) -> AgentCli:
    """The ``AgentCli`` of ``name`` (``claude-code`` or ``codex``).

    Raises:
        UnknownAgent: ``name`` is not in ``AGENT_NAMES``.
    """
    module = AGENT_MODULES.get(name)
    if module is None:
        raise UnknownAgent(f"unknown agent {name!r} (known: {', '.join(AGENT_NAMES)})")
    agent: AgentCli = importlib.import_module(module).AGENT
    return agent
