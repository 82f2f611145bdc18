"""A timed-out real Claude Code attempt leaves no process behind: the CLI and its MCP server die together."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.agents.registry import agent_cli
from agentstudy.io.git import head
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools


def _processes_mentioning(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().split()[2]
            except (OSError, IndexError):
                continue
            if marker in cmdline and state != "Z":
                found.append(cmdline)
    return found


def test_timeout_kills_the_cli_and_its_mcp_server(tmp_path: Path, claude_bin: Path) -> None:
    study = build_example_study(tmp_path / "study")
    name, root = next(iter(study.roots.items()))
    corpora = ServerCorpora(DEFAULT_MCP_SERVER, {name: (root, head(root))})
    release = threading.Event()
    seen: list[str] = []
    marker = ""  # the server's snapshot: on its command line (and on bwrap's), nowhere else

    def hanging_policy(body: Mapping[str, Any]) -> ScriptedReply:
        seen.append(str(_processes_mentioning(marker)))  # the MCP server is up while the API call hangs
        release.wait(timeout=60)
        return next_reply(body)

    with corpora, RehearsalServer(policy=hanging_policy) as server:
        marker = corpora.paths(name).root
        settings = CliSettings(binary=claude_bin, model="claude-haiku-5-5", mcp=DEFAULT_MCP_SERVER,
                               rehearsal_base_url=server.base_url, timeout_s=10)
        try:
            result = run_cli_attempt(
                settings,
                agent=agent_cli(settings.agent),
                scenario=DOC_BRIDGE_MCP,
                tools=arm_tools(DOC_BRIDGE_MCP, DEFAULT_MCP_SERVER, ("mcp__doc-bridge__doc_write",)),
                root=root,
                pin=head(root),
                prompt="Where is the sweeper described?\nCite path:line.",
                reservation_usd=Decimal("0.1"),
                parent_env=dict(os.environ),
                server=corpora.paths(name),
            )
            leftovers = _processes_mentioning(marker)
        finally:
            release.set()
    assert result.status == "timed-out"
    assert result.fields["containment"] == "bwrap"
    assert seen and "agentstudy.rehearsal.mcp_server" in seen[0], "the MCP server was running during the call"
    assert leftovers == []
