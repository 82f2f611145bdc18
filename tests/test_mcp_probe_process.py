"""The MCP probe runs in a process of its own (``io.mcp_probe_child``): the run's process never imports the
SDK to probe, the probe's process gets no API key, the server's words are made safe in the run's process, and a
probe process that dies is a one-line refusal. The real SDK and a real server throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io import mcp_client
from agentstudy.io.environment import FORBIDDEN
from agentstudy.io.mcp_child import mcp_child
from agentstudy.io.mcp_client import McpListing, McpProbeError, probe_mcp_server

SERVER = str(Path(__file__).resolve().parent / "data" / "annotated_server.py")


@pytest.fixture(autouse=True)
def _no_idle_probe_process_of_earlier_tests() -> None:
    """This worker's process-wide probe processes left idle by earlier tests end first: each test counts its own."""
    mcp_client.process_probe_processes().end_idle()

PROBE_IN_A_FRESH_INTERPRETER = """
import json, sys
from agentstudy.io.mcp_child import mcp_child
from agentstudy.io.mcp_client import load_mcp_sdk, probe_mcp_server
with mcp_child() as child:
    probe = probe_mcp_server(sys.executable, [{server!r}], child, "notes.find", {{"term": "x"}})
after_probe = "mcp" in sys.modules
load_mcp_sdk()
print(json.dumps({{"ok": probe.probe_ok, "tools": sorted(probe.tools), "afterProbe": after_probe,
                  "afterLoad": "mcp" in sys.modules}}))
"""


def test_the_runs_process_probes_without_importing_the_sdk() -> None:
    """A fresh interpreter probes a real server and still holds no ``mcp`` module; loading the SDK there shows
    that the check sees it."""
    done = subprocess.run([sys.executable, "-c", PROBE_IN_A_FRESH_INTERPRETER.format(server=SERVER)],
                          capture_output=True, text=True, check=False, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {"ok": True, "tools": ["notes.edit", "notes.environment", "notes.find", "notes.purge", "notes.raw"],
                    "afterProbe": False, "afterLoad": True}


def test_the_probes_process_gets_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-parent-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-oa-parent-secret")
    started: list[dict[str, Any]] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> Any:
        started.append({"argv": args[0], "env": kwargs["env"]})
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(mcp_client.subprocess, "Popen", recording_popen)
    with mcp_child() as child:
        probe = probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"})
    assert probe.probe_ok
    [process] = started
    assert process["argv"][1:] == ["-I", "-m", "agentstudy.io.mcp_probe_child"]
    assert not set(process["env"]) & set(FORBIDDEN)
    assert "sk-ant-parent-secret" not in json.dumps(process["env"])


def test_a_failed_probes_words_are_redacted_in_the_runs_process() -> None:
    """The server's ``isError`` answer quotes the arguments; the configured secret among them never shows."""
    with mcp_child({"NOTES_TOKEN": "tok-secret-4444"}) as child:
        probe = probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"bogus": "tok-secret-4444"})
    assert not probe.probe_ok
    assert "[redacted]" in probe.probe_error and "tok-secret-4444" not in probe.probe_error
    assert "\n" not in probe.probe_error


def test_a_probe_process_that_dies_is_a_one_line_refusal() -> None:
    """The probe's process is killed while the listing is vetted: the probe is refused, one line, nothing left."""

    def kill_the_probe(listing: McpListing) -> None:
        assert "notes.find" in listing.tools
        for pid in _children_running("agentstudy.io.mcp_probe_child"):
            os.kill(pid, signal.SIGKILL)

    with pytest.raises(McpProbeError) as caught, mcp_child() as child:
        probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, check=kill_the_probe)
    message = str(caught.value)
    assert message.startswith(f"MCP server {sys.executable} could not be probed: ")
    assert "\n" not in message
    assert _children_running("agentstudy.io.mcp_probe_child") == []


def _children_running(module: str) -> list[int]:
    """This process's live children whose command line names ``module``."""
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text(encoding="ascii").split():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()[0]
            except OSError:
                continue
            if module.encode() in cmdline and state != "Z":
                found.append(int(pid))
    return found


def _record_popens(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[str]]:
    """Every process ``io.mcp_client`` starts from now on (the list fills as they start)."""
    started: list[subprocess.Popen[str]] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> Any:
        process = real_popen(*args, **kwargs)
        started.append(process)
        return process

    monkeypatch.setattr(mcp_client.subprocess, "Popen", recording_popen)
    return started


def test_probes_of_one_preflight_share_one_process_ended_at_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three probes in turn (one refused by the vet) through one ``ProbeProcesses``: one probe process, which
    answers each, and is gone once the set is left."""
    started = _record_popens(monkeypatch)

    def refuse(listing: McpListing) -> None:
        raise LookupError(f"{len(listing.tools)} tools")

    with mcp_client.ProbeProcesses() as processes, mcp_child() as child:
        first = probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, processes=processes)
        with pytest.raises(LookupError, match="5 tools"):
            probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, check=refuse,
                             processes=processes)
        third = probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"bogus": 1}, processes=processes)
        [process] = started
        assert process.poll() is None, "kept for the next probe"
    assert first.probe_ok and not third.probe_ok and first.tools == third.tools
    assert process.returncode == 0, "ended at the end of its stdin"
    assert _children_running("agentstudy.io.mcp_probe_child") == []


def test_the_processs_preflights_share_one_probe_process_that_ends_when_idle(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two probes through the process-wide set (as two preflights of one process, e.g. in-process commands) start
    one probe process; left idle past its time it ends by itself, and the next probe starts a new one."""
    started = _record_popens(monkeypatch)
    shared = mcp_client.process_probe_processes()
    assert mcp_client.process_probe_processes() is shared
    with mcp_child() as child:
        first = probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, processes=shared)
        second = probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, processes=shared)
    [process] = started
    assert first.probe_ok and second.probe_ok and process.poll() is None, "kept for a later preflight"
    monkeypatch.setattr(shared, "_idle_s", 0.2)
    with mcp_child() as child:
        probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, processes=shared)
    assert len(started) == 1, "the idle process answered"
    assert process.wait(timeout=60) == 0, "ended by itself once idle (the end of its stdin)"
    with mcp_child() as child:
        probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, processes=shared)
    assert len(started) == 2 and started[1].poll() is None
    shared.end_idle()
    assert started[1].wait(timeout=60) == 0
    assert _children_running("agentstudy.io.mcp_probe_child") == []


def test_a_probe_process_that_died_while_idle_is_never_reused() -> None:
    """An idle probe process killed meanwhile (a signal to its process group) is reaped; the next probe starts a
    new one and succeeds."""
    shared = mcp_client.process_probe_processes()
    with mcp_child() as child:
        assert probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, processes=shared).probe_ok
        [pid] = _children_running("agentstudy.io.mcp_probe_child")
        os.kill(pid, signal.SIGKILL)
        for _ in range(200):  # dead (a zombie, not yet reaped) before the next probe comes
            if Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()[0] == "Z":
                break
            time.sleep(0.05)
        again = probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"}, processes=shared)
    assert again.probe_ok
    assert pid not in _children_running("agentstudy.io.mcp_probe_child")
