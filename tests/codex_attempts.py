"""Shared helpers of the Codex attempt tests (issue 21): one real attempt through ``run_cli_attempt``.

Each attempt runs the pinned Codex binary contained (bubblewrap unless asked otherwise) against the
scripted Responses server with a chosen policy, in an export of a real git corpus; per-attempt homes go
under ``.codex-scratch/`` in the checkout (git-ignored; never under a temp dir, docs/codex.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

from agentstudy.agents.registry import agent_cli
from agentstudy.io.containment import ContainmentMode
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.rehearsal.responses_server import ResponsesRehearsalServer, responses_policy
from agentstudy.rehearsal.responses_variants import Policy
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliAttemptResult, CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools

ROOT = Path(__file__).resolve().parent.parent
HOMES = ROOT / ".codex-scratch" / "attempts"
PROMPT = "Who owns handoff H-1? Cite the file and line."
MODEL = "rehearsal-scripted"
SENTINELS = {"OPENAI_API_KEY": "sk-parent-SENTINEL-openai", "ANTHROPIC_API_KEY": "sk-ant-parent-SENTINEL"}


def codex_binary() -> Path:
    """The pinned Codex CLI in .tools (installed by scripts/setup.sh)."""
    return agent_cli("codex").find_binary(None, {"PATH": "/usr/bin:/bin"})


def broken_server() -> McpServerSpec:
    """The bundled server pointed at a root that does not exist: it exits at once (a required server fails)."""
    command = list(DEFAULT_MCP_SERVER.command)
    command[command.index("{root}")] = "/nonexistent/agentstudy-codex-root"
    return McpServerSpec(name="doc-bridge", command=tuple(command), sandbox_binds=DEFAULT_MCP_SERVER.sandbox_binds)


def run_codex_attempt(root: Path, pin: str, scenario: str, *, policy: Policy = responses_policy,
                      spec: McpServerSpec = DEFAULT_MCP_SERVER, containment: ContainmentMode = "bwrap",
                      binary: Path | None = None, reservation_usd: Decimal = Decimal("0.10"),
                      parent_env: Mapping[str, str] | None = None) -> tuple[CliAttemptResult, ResponsesRehearsalServer]:
    """One real Codex attempt of ``scenario`` over the corpus ``root`` at ``pin``; the parent environment
    holds the sentinel API keys unless ``parent_env`` is given."""
    HOMES.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **SENTINELS} if parent_env is None else parent_env
    with ServerCorpora(spec, {"corpus": (root, pin)}) as corpora, ResponsesRehearsalServer(policy=policy) as server:
        settings = CliSettings(binary=binary or codex_binary(), model=MODEL, mcp=spec,
                               rehearsal_base_url=server.provider_base_url, containment=containment, agent="codex",
                               agent_home_root=HOMES, timeout_s=180.0)
        result = run_cli_attempt(settings, agent=agent_cli(settings.agent),
                                 scenario=scenario, tools=arm_tools(scenario, spec, ()), root=root, pin=pin,
                                 prompt=PROMPT, reservation_usd=reservation_usd, parent_env=env,
                                 server=corpora.paths("corpus") if scenario == DOC_BRIDGE_MCP else None)
    return result, server


PYTHON = sys.executable
