"""CPU accounting of a benchmarked command (issue 31 item 7): the CPU floor and whose CPU it was.

The *total* is exact: the benchmark makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``), so
every process the command starts — also one orphaned by its parent — is reaped by a process of the
tree or by the benchmark, and ``getrusage(RUSAGE_CHILDREN)``'s user + system seconds grow by all of
them. The *CPU floor* is that total over the machine's cores: the shortest wall time the work could
take with every core busy; *efficiency* = floor / wall (1.0: the cores never waited).

The *split* by role is sampled: every 0.25 s each live process of the tree is read from ``/proc``
(utime + stime, its name and command line) and its last reading is kept, so a process shorter than
a sampling interval is missed and the split sums to a little less than the total (``unsampled``).
Roles: ``agent`` (the agent CLI: node / claude / codex), ``containment`` (bwrap), ``export`` (git,
tar), ``driver`` (the agentstudy command itself and its Python children), ``mcp`` (the MCP server),
``other``.
"""

from __future__ import annotations

import ctypes
import os
import resource
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
TICKS = os.sysconf("SC_CLK_TCK")


def become_subreaper() -> None:
    """Make this process the reaper of every orphaned descendant (Linux)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)


def reap_orphans() -> None:
    """Wait for every exited child without blocking (orphans handed to us as subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def children_cpu_seconds() -> float:
    """User + system CPU seconds of every reaped descendant so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _role(name: str, cmdline: str) -> str:
    if name == "bwrap":
        return "containment"
    if name in ("git", "tar"):
        return "export"
    if "mcp-server" in cmdline or "mcp_server" in cmdline:
        return "mcp"
    if name in ("node", "claude", "codex") or "claude-code" in cmdline or "/codex" in cmdline:
        return "agent"
    if name.startswith("python") or "agentstudy" in cmdline:
        return "driver"
    return "other"


class TreeSampler:
    """The last-seen CPU seconds of each process under ``root``, by role (see the module docstring)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, tuple[str, float]] = {}

    def sample(self) -> None:
        """Read every live process of the tree once."""
        parents: dict[int, int] = {}
        stats: dict[int, tuple[str, float]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                raw = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            name = raw[raw.index("(") + 1:raw.rindex(")")]
            fields = raw.rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            stats[int(entry)] = (_role(name, cmdline), (int(fields[11]) + int(fields[12])) / TICKS)
        tree, frontier = {self.root}, [self.root]
        while frontier:
            pid = frontier.pop()
            children = [child for child, parent in parents.items() if parent == pid and child not in tree]
            tree.update(children)
            frontier.extend(children)
        for pid in tree & stats.keys():
            self.seen[pid] = stats[pid]

    def by_role(self) -> dict[str, float]:
        """CPU seconds per role over every process seen."""
        roles: dict[str, float] = {}
        for role, seconds in self.seen.values():
            roles[role] = roles.get(role, 0.0) + seconds
        return roles
