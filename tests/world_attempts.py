"""Shared helper of the server-world tests (issue 39): one real treatment attempt on either agent, in process.

The pinned Claude Code or Codex binary runs under bubblewrap against its scripted model server on
127.0.0.1, in an export of a real git corpus, with the given MCP server; Codex's per-attempt homes go
under ``.codex-scratch/`` in the checkout (never under a temp dir, docs/codex.md).
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

from agentstudy.agents.registry import agent_cli
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.runners.preflight import check_mcp_servers
from agentstudy.transports.cli import CliAttemptResult, CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools

ROOT = Path(__file__).resolve().parent.parent
HOMES = ROOT / ".codex-scratch" / "attempts"
PROMPT = "Alpha: where is the retention window configured? Cite the file and line."
AGENTS = ("claude-code", "codex")


def treatment_attempt(agent_name: str, spec: McpServerSpec, root: Path, pin: str) -> CliAttemptResult:
    """One real treatment attempt of ``agent_name`` with server ``spec`` over ``root`` at ``pin`` (bwrap)."""
    agent = agent_cli(agent_name)
    HOMES.mkdir(parents=True, exist_ok=True)
    with ServerCorpora(spec, {"alpha": (root, pin)}) as corpora, agent.rehearsal_endpoint(0) as base_url:
        settings = CliSettings(binary=agent.find_binary(None, os.environ), model=agent.rehearsal_model, mcp=spec,
                               rehearsal_base_url=base_url, containment="bwrap", agent=agent_name,
                               agent_home_root=HOMES, timeout_s=180.0)
        return run_cli_attempt(settings, agent=agent_cli(settings.agent),
                               scenario=DOC_BRIDGE_MCP, tools=arm_tools(DOC_BRIDGE_MCP, spec, ()),
                               root=root, pin=pin, prompt=PROMPT, reservation_usd=Decimal("0.50"),
                               parent_env=dict(os.environ), server=corpora.paths("alpha"))


def probe(spec: McpServerSpec, root: Path, pin: str) -> None:
    """The preflight's probe of ``spec`` on the corpus (bwrap), in process.

    Raises:
        agentstudy.runners.preflight.PreflightError: the server failed to start, list or answer the probe.
    """
    with ServerCorpora(spec, {"alpha": (root, pin)}) as corpora:
        check_mcp_servers(spec, corpora, "bwrap", dict(os.environ))


def successful_server_calls(result: CliAttemptResult) -> int:
    """The attempt's server calls that did not fail (``serverCalls - serverCallErrors``; 0 without a record)."""
    record = result.fields.get("treatment") or {}
    return int(record.get("serverCalls") or 0) - int(record.get("serverCallErrors") or 0)
