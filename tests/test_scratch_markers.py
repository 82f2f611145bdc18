"""Every scratch directory we create carries an owner marker and is swept after a SIGKILL (issue 29, break 10).

The break: after ``SIGKILL``, ``agentstudy-server-corpus-*`` (a full corpus copy) and the http
transport's ``agentstudy-mcp-*`` directories carried no owner marker, so the sweep never removed
them. Here a real child process makes both (a real git corpus, the real ``ServerCorpora`` and
``mcp_child``) in its own TMPDIR and kills itself with ``SIGKILL``; ``sweep_stale`` then leaves
that TMPDIR empty.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from agentstudy.io.scratch import sweep_stale

from corpus_git import committed_repo

CHILD = """
import os, signal, sys
from pathlib import Path
from agentstudy.io.mcp_child import mcp_child
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.mcp_spec import McpServerSpec

repo, pin = Path(sys.argv[1]), sys.argv[2]
spec = McpServerSpec(name="s", command=("srv", "{root}"), config_candidates=())
with ServerCorpora(spec, {"r": (repo, pin)}) as corpora, mcp_child({}) as child:
    assert Path(corpora.paths("r").root).is_dir() and child.home.is_dir()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_server_corpus_and_mcp_directories_are_swept_after_sigkill(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    pin = committed_repo(repo, {"README.md": "hello\n", "docs/a.md": "alpha\n"})
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    done = subprocess.run([sys.executable, "-c", CHILD, str(repo), pin], env={**os.environ, "TMPDIR": str(scratch)},
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    left = sorted(p.name for p in scratch.iterdir())
    assert any(n.startswith("agentstudy-server-corpus-") for n in left), left
    assert any(n.startswith("agentstudy-mcp-") for n in left), left
    assert all(n.endswith(".owner") or f"{n}.owner" in left for n in left), f"every directory is marked: {left}"
    removed = sweep_stale(scratch)
    assert len(removed) == 2
    assert list(scratch.iterdir()) == []


def test_init_into_a_directory_inside_the_checkout_is_refused_and_leaves_it_clean(tmp_path: Path) -> None:
    """Issue 29, break 15: ``init`` into a directory inside the checkout left the checkout dirty."""
    from checkout_run import run_agentstudy

    repo = tmp_path / "repo"
    committed_repo(repo, {"README.md": "hello\n"})
    for inside in (repo / "study", repo):
        done = run_agentstudy("init", str(inside), f"--repo=r={repo}", "--containment", "restricted",
                              "--mcp-command", f"{sys.executable} -m agentstudy.rehearsal.mcp_server --root {{root}} "
                                               "--pin {pin}")
        assert done.returncode == 2, done.stderr[-2000:]
        [line] = done.stderr.strip().splitlines()
        assert "inside the checkout of --repo r" in line, line
        status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                                capture_output=True, text=True, check=True)
        assert status.stdout == "", "the checkout stays clean"
    assert not (repo / "study").exists()
