"""Issue 15, must-show: no descendant outlives an attempt under bwrap, and a killed child leaves nothing in TMPDIR.

The agent is a tiny script written here (not the fake of ``tests/fakes.py``): it starts a
grandchild that calls ``setsid()`` — leaving the process group that ``io.process`` kills — and
sleeps with a unique marker in its command line, which the test looks for in ``/proc``.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from agentstudy.agents.registry import agent_cli
from agentstudy.io.git import head
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools

AGENT = r'''
import os, subprocess, sys, time
if sys.argv[1:] == ["--version"]:
    print("2.1.296 (Claude Code)")
    sys.exit(0)
behaviour = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "behaviour")).read().split()
mode, marker = behaviour[0], behaviour[1]
subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(120)", marker],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open(os.path.join(os.environ["TMPDIR"], "scratch-file"), "w").write("x")
time.sleep(0.5)  # the grandchild has left the process group by now
if mode == "sleep":
    time.sleep(120)
print('{"type":"result","subtype":"success","is_error":false,"result":"x"}')
'''


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and str(os.getpid()) != entry.name:
            found.append(int(entry.name))
    return found


def _agent(directory: Path, mode: str) -> tuple[Path, str]:
    directory.mkdir()
    marker = f"agentstudy-test-grandchild-{uuid.uuid4().hex}"
    (directory / "behaviour").write_text(f"{mode} {marker}", encoding="utf-8")
    script = directory / "claude"
    script.write_text(f"#!{sys.executable}\n{AGENT}", encoding="utf-8")
    script.chmod(0o755)
    return script, marker


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def _run(binary: Path, study: ExampleStudy, containment: str, timeout_s: float = 60.0) -> None:
    root = study.roots["lantern-cache"]
    settings = CliSettings(binary=binary, model="claude-haiku-4-5", mcp=DEFAULT_MCP_SERVER,
                           containment=containment, timeout_s=timeout_s)  # type: ignore[arg-type]
    run_cli_attempt(settings, agent=agent_cli(settings.agent),
                    scenario="repository-only", tools=arm_tools("repository-only", DEFAULT_MCP_SERVER, ()),
                    root=root, pin=head(root), prompt="q", reservation_usd=Decimal("0.10"), parent_env=os.environ)


def _wait_gone(marker: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := _processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def test_a_setsid_grandchild_ends_with_the_attempt_under_bwrap(tmp_path: Path, study: ExampleStudy) -> None:
    binary, marker = _agent(tmp_path / "agent", "exit")
    _run(binary, study, "bwrap")
    assert _wait_gone(marker) == [], "the pid namespace ends every descendant"


def test_without_bwrap_the_setsid_grandchild_survives(tmp_path: Path, study: ExampleStudy) -> None:
    """Why restricted records 'a descendant that leaves the process group can outlive the attempt'."""
    binary, marker = _agent(tmp_path / "agent", "exit")
    _run(binary, study, "restricted")
    survivors = _wait_gone(marker, seconds=0.5)
    try:
        assert survivors, "the grandchild escaped the process group"
    finally:
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)


def test_sigkill_of_the_child_leaves_nothing_in_tmpdir(tmp_path: Path, study: ExampleStudy,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(host_tmp))
    binary, marker = _agent(tmp_path / "agent", "sleep")
    killed: list[int] = []

    def kill_the_agent() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            agents = [pid for pid in _processes_with(str(binary)) if pid not in killed]
            if agents and _processes_with(marker):
                for pid in agents:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        continue  # a process of the launch that had already ended between the scan and the kill
                    killed.append(pid)
                if killed:
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_agent)
    killer.start()
    _run(binary, study, "bwrap")
    killer.join()
    assert killed, "the agent process was found and killed"
    assert _wait_gone(marker) == []
    assert sorted(p.name for p in host_tmp.iterdir()) == [], "no export, no attempt directory, no scratch file"
