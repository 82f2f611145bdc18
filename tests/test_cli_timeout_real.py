"""A timed-out real Claude Code attempt leaves no process behind: the CLI, its relay and its MCP server die together.

The MCP server of an attempt runs outside the agent's sandbox: the agent's MCP command is the relay
(``io.server_relay``) and ``io.server_host`` (in this process) starts the server in its own world per
connection. So the processes are found as descendants of this process, by what their command lines run.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.agents.registry import agent_cli
from agentstudy.io.git import head
from agentstudy.io.mcp_client import process_probe_processes
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.io.server_host import RELAY_MODULE
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools

SERVER_MODULE = "agentstudy.rehearsal.mcp_server"
SERVER_WAIT_S = 10.0


@dataclass(frozen=True)
class _Process:
    pid: int
    ppid: int
    started: str  # /proc/PID/stat's starttime: with the pid, one process (a pid can be reused)
    cmdline: str


def _live_processes() -> dict[int, _Process]:
    """Every process not a zombie, by pid."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
        if fields[0] != "Z":
            table[int(entry.name)] = _Process(int(entry.name), int(fields[1]), fields[19], cmdline)
    return table


def _descendants() -> list[_Process]:
    """The live processes descended from this one."""
    table = _live_processes()
    found, frontier = [], {os.getpid()}
    while frontier:
        children = [process for process in table.values() if process.ppid in frontier]
        found += children
        frontier = {process.pid for process in children}
    return found


def _alive(process: _Process) -> bool:
    """Whether ``process`` (this pid, started then) still runs."""
    now = _live_processes().get(process.pid)
    return now is not None and now.started == process.started


def _running(processes: list[_Process], marker: str) -> list[_Process]:
    return [process for process in processes if marker in process.cmdline]


def test_timeout_kills_the_cli_and_its_mcp_server(tmp_path: Path, claude_bin: Path) -> None:
    study = build_example_study(tmp_path / "study")
    name, root = next(iter(study.roots.items()))
    corpora = ServerCorpora(DEFAULT_MCP_SERVER, {name: (root, head(root))})
    release = threading.Event()
    seen: list[_Process] = []
    process_probe_processes().end_idle()  # an earlier in-process preflight's idle probe process is not this attempt's

    def hanging_policy(body: Mapping[str, Any]) -> ScriptedReply:
        if not seen:  # the first call: the agent, its relay and the server it reached are up while it hangs
            deadline = time.monotonic() + SERVER_WAIT_S  # the relay may connect just after the call
            while not _running(processes := _descendants(), SERVER_MODULE) and time.monotonic() < deadline:
                time.sleep(0.1)
            seen.extend(processes)
        release.wait(timeout=60)
        return next_reply(body)

    with corpora, RehearsalServer(policy=hanging_policy) as server:
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
            leftovers = [process.cmdline for process in _descendants()]
            survivors = [process.cmdline for process in seen if _alive(process)]  # reparented ones too
        finally:
            release.set()
    assert result.status == "timed-out"
    assert result.fields["containment"] == "bwrap"
    servers, relays, agents = (_running(seen, marker) for marker in (SERVER_MODULE, RELAY_MODULE, str(claude_bin)))
    assert servers, "the MCP server was running during the call"
    assert relays and agents, "the agent and its relay were running during the call"
    by_pid = {process.pid: process for process in seen}
    for process in servers:  # started by agentstudy (this process), not in the agent's sandbox
        ancestors = set()
        while process.ppid in by_pid:
            process = by_pid[process.ppid]
            ancestors.add(process.pid)
        assert not ancestors & {agent.pid for agent in agents}, "the MCP server ran inside the agent's sandbox"
    assert leftovers == []
    assert survivors == []
