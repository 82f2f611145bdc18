"""Which coding agents a study runs (issue 21 item 6). Pure.

A study file may list agents (``"agents": ["claude-code", "codex"]``); a study that lists none —
every seed manifest and every study file written before issue 21 — runs the single Claude Code
agent, so its document, protocol hash and schedule are unchanged. Pairs are formed within an
agent: a paired difference never pairs two agents' attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentstudy.protocol.agent_names import AGENT_NAMES, DEFAULT_AGENT

__all__ = ["DEFAULT_AGENT", "KNOWN_AGENTS", "check_agents", "observation_agent", "study_agents"]

KNOWN_AGENTS: tuple[str, ...] = AGENT_NAMES
"""The agents a study file may list: the ``--agent`` values (``protocol.agent_names``)."""


def check_agents(agents: Sequence[str]) -> None:
    """Refuse an empty list, an unknown agent or one listed twice.

    Raises:
        ValueError: a one-line reason naming the known agents.
    """
    if not agents:
        raise ValueError("agents must list at least one agent")
    for name in agents:
        if name not in KNOWN_AGENTS:
            raise ValueError(f"unknown agent {name!r} (known: {', '.join(KNOWN_AGENTS)})")
    if len(set(agents)) != len(agents):
        raise ValueError("agents lists an agent twice")


def study_agents(manifest: Any) -> tuple[str, ...]:
    """The agents of a loaded study definition, in the file's order; ``("claude-code",)`` when it
    lists none (a seed ``Manifest``, or a study file without ``agents``)."""
    agents = getattr(manifest, "agents", None)
    return tuple(agents) if agents else (DEFAULT_AGENT,)


def observation_agent(observation: Any) -> str:
    """The agent of a ledger observation (a JSON object): its ``agent`` string, else ``claude-code``
    (observations written before issue 21, and every Messages API attempt)."""
    agent = observation.get("agent") if isinstance(observation, dict) else None
    return agent if isinstance(agent, str) and agent else DEFAULT_AGENT
