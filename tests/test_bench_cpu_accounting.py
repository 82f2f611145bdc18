"""``bench.cpu_accounting``: the CPU of every process a benchmarked command starts is counted, also an
orphan's (the benchmark is their subreaper), and the sampled split names the roles. The accounting runs
in a child interpreter: a subreaper pytest worker would collect other tests' orphans."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.cpu_accounting import _role

REPO = Path(__file__).resolve().parents[1]
ACCOUNT = r"""
import json, os, subprocess, sys, threading
from bench.cpu_accounting import TreeSampler, become_subreaper, children_cpu_seconds
burn = "x = 0\nfor i in range(3_000_000): x += i\nprint('done')"
become_subreaper()
before = children_cpu_seconds()
# the shell starts a Python burner in the background and exits: that burner is orphaned, handed to us
child = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "$0" >/dev/null & exec "{sys.executable}" -c "$0"',
                          burn], stdout=subprocess.PIPE)
tree, done = TreeSampler(child.pid), threading.Event()
def sample():
    while not done.is_set():
        tree.sample()
        done.wait(0.05)
sampler = threading.Thread(target=sample)
sampler.start()
out = child.communicate()[0]
done.set()
sampler.join()
after_child = children_cpu_seconds() - before
orphans = 0
while True:  # as the orphan's reaper: wait for it (blocking) until no child is left
    try:
        os.wait()
        orphans += 1
    except ChildProcessError:
        break
print(json.dumps({"out": out.decode(), "child": after_child, "all": children_cpu_seconds() - before,
                  "orphans": orphans, "roles": tree.by_role()}))
"""


def test_an_orphans_cpu_is_counted_and_the_driver_role_sampled() -> None:
    done = subprocess.run([sys.executable, "-c", ACCOUNT], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["out"] == "done\n"
    assert result["orphans"] == 1  # the background burner came to us and was reaped
    assert result["all"] > result["child"] > 0  # its CPU joined the total only once it was reaped
    assert "driver" in result["roles"] and set(result["roles"]) <= {"driver", "other"}


def test_roles() -> None:
    assert _role("bwrap", "bwrap --unshare-all") == "containment"
    assert _role("git", "git archive") == "export"
    assert _role("node", "node .tools/claude-code/cli.js") == "agent"
    assert _role("codex", ".tools/codex/bin/codex exec") == "agent"
    assert _role("node", "node .tools/mcp-server-filesystem/dist/index.js") == "mcp"
    assert _role("python3.11", "python -m agentstudy minimal") == "driver"
    assert _role("sleep", "sleep 1") == "other"
