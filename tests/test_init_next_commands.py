"""init's printed "next:" commands carry every flag that shaped the study and not kept in it (issue 39 item 6).

Run as printed, the dry-run probe after an ``init --containment restricted`` works: it is not sent back to
the default containment (which a machine without bubblewrap refuses). The server is one of our own
(tests/data/world_servers/cwd_server.py), the repository a real git checkout.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from checkout_run import run_agentstudy
from corpus_git import committed_repo

SERVER = Path(__file__).resolve().parent / "data" / "world_servers" / "cwd_server.py"


def _next_commands(stdout: str) -> list[list[str]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("next:"))
    return [shlex.split(line) for line in lines[start + 1:] if line.startswith("  agentstudy ")]


@pytest.mark.parametrize("containment", ["restricted", "bwrap"])
def test_the_printed_dry_run_runs_as_printed_under_the_containment_init_used(
    tmp_path: Path, containment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTSTUDY_CONTAINMENT", raising=False)
    repo = tmp_path / "repo"
    committed_repo(repo, {"README.md": "# Alpha\n\nThe retention window is 30 days.\n"})
    made = run_agentstudy("init", str(tmp_path / "study"), f"--repo=alpha={repo}", "--mcp-command",
                          f"{sys.executable} {SERVER}", "--containment", containment, "--probe", "search_docs",
                          "--probe-arguments", '{"query": "retention"}')
    assert made.returncode == 0, made.stderr
    dry_run, pilot = _next_commands(made.stdout)
    for command in (dry_run, pilot):
        assert (f"--containment {containment}" in shlex.join(command)) == (containment != "bwrap"), command
    checked = run_agentstudy(*dry_run[1:])
    assert checked.returncode == 0, checked.stderr
    assert '"ok":true' in checked.stdout.replace(" ", "")
