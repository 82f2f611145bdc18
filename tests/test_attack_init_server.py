"""Hostile MCP servers under ``agentstudy init`` (attack of issue 18): one line, exit 2, nothing written.

Each server is a real child process started by the real ``init`` (``--containment restricted``
so the test needs no namespaces): one that never answers ``initialize``, one that prints 10 MB
of non-JSON on stdout, one that crashes at once; and a SIGTERM while the server starts (exit
143, the server stopped with the command, nothing written).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checkout_run import SRC, run_agentstudy

SERVERS = {
    "hangs": "import time; time.sleep(3600)",
    "floods": "import sys; sys.stdout.write('x' * 10_000_000 + '\\n'); sys.stdout.flush()",
    "crashes": "import sys; sys.stderr.write('boom\\n'); sys.exit(3)",
}


def _repository(root: Path) -> Path:
    root.mkdir()
    (root / "notes.txt").write_text("Plain notes.\n", encoding="utf-8")
    for argv in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "c"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, capture_output=True)
    return root


@pytest.mark.parametrize("behaviour", sorted(SERVERS))
def test_a_hostile_server_is_one_line_and_exit_2(tmp_path: Path, behaviour: str) -> None:
    repo = _repository(tmp_path / "repo")
    script = tmp_path / f"{behaviour}.py"
    script.write_text(SERVERS[behaviour] + "\n", encoding="utf-8")
    study_dir = tmp_path / "study"
    done = run_agentstudy("init", str(study_dir), f"--repo=r={repo}", "--containment", "restricted",
                          "--mcp-command", f"{sys.executable} {script} {{root}}")
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert lines[0].startswith("agentstudy: error: r: MCP server could not be started: ")
    assert "ExceptionGroup" not in lines[0] and len(lines[0]) < 1000
    assert not study_dir.exists()


@pytest.mark.parametrize("where", ["a-file", "under-a-file"])
def test_a_directory_that_cannot_be_made_is_one_plain_line(tmp_path: Path, where: str) -> None:
    repo = _repository(tmp_path / "repo")
    (tmp_path / "a-file").write_text("mine\n", encoding="utf-8")
    directory = tmp_path / "a-file" if where == "a-file" else tmp_path / "a-file" / "study"
    server = f"{sys.executable} -m agentstudy.rehearsal.mcp_server --root {{root}} --pin {{pin}}"
    done = run_agentstudy("init", str(directory), f"--repo=r={repo}", "--containment", "restricted",
                          "--mcp-command", server)
    assert done.returncode == 2, done.stderr
    reason = ("it already exists and is not a directory" if where == "a-file"
              else "a component of the path is not a directory")
    assert done.stderr.strip().splitlines() == [f"agentstudy: error: cannot write {directory}: {reason}"]
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "mine\n"


def test_sigterm_while_the_server_starts_stops_it_and_writes_nothing(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    started = tmp_path / "started"
    script = tmp_path / "hangs.py"
    script.write_text(f"import os, time\nopen({str(started)!r}, 'w').write(str(os.getpid()))\ntime.sleep(3600)\n",
                      encoding="utf-8")
    study_dir = tmp_path / "study"
    child = subprocess.Popen(
        [sys.executable, "-m", "agentstudy", "init", str(study_dir), f"--repo=r={repo}", "--containment",
         "restricted", "--mcp-command", f"{sys.executable} {script} {{root}}"],
        env={**os.environ, "PYTHONPATH": str(SRC)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not started.exists() or not started.read_text(encoding="utf-8"):
        assert child.poll() is None, child.communicate()
        time.sleep(0.05)
    server = int(started.read_text(encoding="utf-8"))
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not study_dir.exists()
    try:
        os.kill(server, 0)
    except ProcessLookupError:
        pass
    else:
        os.kill(server, signal.SIGKILL)
        raise AssertionError("the MCP server outlived the stopped init")
