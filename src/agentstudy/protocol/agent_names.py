"""The coding agents a study or a ledger may name: pure data the core checks against.

``agents.registry`` maps each name to its module (``agents.base.AgentCli``) above the core; the
core (study files, ledger checks) needs only the names, so it never imports the agents (issue 21
item 1; the pure core imports nothing outside it, issue 31).
"""

from __future__ import annotations

__all__ = ["AGENT_NAMES", "DEFAULT_AGENT"]

AGENT_NAMES: tuple[str, ...] = ("claude-code", "codex", "gemini")
"""Every ``--agent`` value, in the order help texts and errors list them; ``agents.registry.AGENT_MODULES``
has one module per name."""

DEFAULT_AGENT = "claude-code"
"""The agent of a study that names none (every ledger written before issue 21)."""
