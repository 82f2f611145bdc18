"""``--agent``, ``--agent-version``, ``--agent-bin``: which coding agent a cli run drives (issue 21)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentstudy.commands.common import fail

if TYPE_CHECKING:
    from agentstudy.agents.base import AgentCli


def agent_flags(transport: str, agent: str, agent_version: str | None, cli_version: str | None,
                 agent_bin: str | None, claude_bin: str | None, strict_cap: bool) -> tuple[AgentCli, str, str | None]:
    """The agent, its expected version and the explicit executable, from the flags (issue 21); exit 2 on a
    contradiction: another agent than claude-code with http, --claude-bin or --cli-version with codex,
    --cli-version and --agent-version both, --claude-bin and --agent-bin both, --strict-cap with codex."""
    from agentstudy.agents.registry import DEFAULT_AGENT, agent_cli
    chosen = agent_cli(agent)
    if transport != "cli" and agent != DEFAULT_AGENT:
        fail(f"--agent {agent} needs --transport cli (the http loop is the Messages API's)")
    if agent != DEFAULT_AGENT and (cli_version is not None or claude_bin is not None):
        fail("--cli-version and --claude-bin are Claude Code's; use --agent-version and --agent-bin")
    if cli_version is not None and agent_version is not None:
        fail("--cli-version and --agent-version say the same thing; give one")
    if claude_bin is not None and agent_bin is not None:
        fail("--claude-bin and --agent-bin say the same thing; give one")
    if strict_cap and not chosen.bounds_worst_turn:
        fail(f"--strict-cap bounds an attempt by one worst-case turn after the agent's own limit check; "
             f"{chosen.label} {chosen.limit_rule} instead")
    version = agent_version or cli_version or chosen.pinned_version
    if not version.strip() or any(c in version for c in "\r\n\0"):
        fail("--agent-version must be a version such as " + chosen.pinned_version)
    return chosen, version.strip(), agent_bin or claude_bin


def require_agent_price(agent: AgentCli, model: str, given: str) -> None:
    """Exit 2 with one line when ``agent`` reports no cost of its own (Codex) and ``model`` has no price row
    (``AgentCli.price_entry``): our computed cost would be the only meter of the per-attempt limit and of
    settlement, and every attempt would be ``invalid-cost`` (charged in full), so nothing starts (issue 21
    item 4). An agent that reports its cost passes. ``given`` is the flag as the operator wrote it."""
    if not agent.reports_cost and agent.price_entry(model.strip()) is None:
        fail(f"{given} has no price for {agent.name}, and {agent.label} reports no cost of its own: the "
             "per-attempt limit could not be metered (prices: docs/codex.md, Money)")


def agent_binary(agent: AgentCli, explicit: str | None) -> Path:
    """The agent's executable as an absolute path (nothing started); else exit 2 with one line."""
    from agentstudy.io.agent_binary import AgentBinaryError
    try:
        return agent.find_binary(explicit, os.environ)
    except AgentBinaryError as error:
        fail(str(error))


