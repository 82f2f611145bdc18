"""Shared helpers of the Gemini CLI attempt tests: one real attempt through ``run_cli_attempt``.

Each attempt runs the pinned Gemini CLI (``.tools/gemini-cli``, installed by scripts/setup.sh) contained
(bubblewrap unless asked otherwise) against the scripted Gemini API server with a chosen policy and fault
schedule, in an export of a real git corpus.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.agents.registry import agent_cli
from agentstudy.io.containment import ContainmentMode
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.rehearsal.gemini_server import GeminiRehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliAttemptResult, CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools

PROMPT = "Who owns handoff H-1? Cite the file and line."
MODEL = "rehearsal-scripted"
SENTINELS = {"OPENAI_API_KEY": "sk-parent-SENTINEL-openai", "ANTHROPIC_API_KEY": "sk-ant-parent-SENTINEL",
             "GOOGLE_API_KEY": "parent-SENTINEL-google", "GEMINI_API_KEY": "parent-SENTINEL-gemini"}
"""The parent's credentials: none may reach a rehearsal child (its GEMINI_API_KEY is the dummy)."""


def gemini_binary() -> Path:
    """The pinned Gemini CLI in .tools (installed by scripts/setup.sh)."""
    return agent_cli("gemini").find_binary(None, {"PATH": "/usr/bin:/bin"})


def run_gemini_attempt(root: Path, pin: str, scenario: str, *,
                       policy: Callable[[Mapping[str, Any]], ScriptedReply] = next_reply,
                       spec: McpServerSpec = DEFAULT_MCP_SERVER, containment: ContainmentMode = "bwrap",
                       faults: str | None = None, max_retries: int = 2, binary: Path | None = None,
                       reservation_usd: Decimal = Decimal("0.10"),
                       parent_env: Mapping[str, str] | None = None) -> tuple[CliAttemptResult, GeminiRehearsalServer]:
    """One real Gemini attempt of ``scenario`` over the corpus ``root`` at ``pin``; the parent environment holds
    the sentinel credentials unless ``parent_env`` is given."""
    env = {**os.environ, **SENTINELS} if parent_env is None else parent_env
    schedule = None if faults is None else parse_fault_schedule(faults)
    with ServerCorpora(spec, {"corpus": (root, pin)}) as corpora, \
            GeminiRehearsalServer(policy=policy, faults=schedule) as server:
        settings = CliSettings(binary=binary or gemini_binary(), model=MODEL, mcp=spec,
                               rehearsal_base_url=server.agent_base_url, containment=containment, agent="gemini",
                               timeout_s=240.0, max_retries=max_retries)
        result = run_cli_attempt(settings, agent=agent_cli(settings.agent),
                                 scenario=scenario, tools=arm_tools(scenario, spec, ()), root=root, pin=pin,
                                 prompt=PROMPT, reservation_usd=reservation_usd, parent_env=env,
                                 server=corpora.paths("corpus") if scenario == DOC_BRIDGE_MCP else None)
    return result, server
