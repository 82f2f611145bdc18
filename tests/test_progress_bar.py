"""Issue 19, item 6: one live bar on a terminal (done/total, running now, spend vs cap, elapsed, ETA); plain lines
when stderr is no terminal; nothing when stdout is none.

The bar is rendered by rich into a recording console, and once for real: the rehearsal pilot
run under a pseudo-terminal (stdout and stderr both a tty), its screen output read back.
"""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from rich.console import Console

from agentstudy.commands import view
from agentstudy.commands.view import BarProgress, ConsoleProgress, progress_for_terminal
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.runners.progress import AttemptProgress, SilentProgress, finish_progress

from checkout_run import SRC

FIRST = AttemptProgress(1, 2, "lantern-discovery", "repository-only", 1)
SECOND = AttemptProgress(2, 2, "lantern-discovery", "doc-bridge-mcp", 1)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _console() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=240, record=True)


def test_the_bar_counts_done_running_and_spend_and_ends_at_finish() -> None:
    bar = BarProgress(_console())
    bar.attempt_started(FIRST)
    [task] = bar.progress.tasks
    assert (task.completed, task.total) == (0, 2)
    assert task.fields["running"] == "running 1: lantern-discovery rep 1 Repository tools"
    bar.attempt_settled(FIRST, "completed", 3, Decimal("0.001"), Decimal("0.001"), Decimal("1"))
    bar.attempt_started(SECOND)
    bar.attempt_settled(SECOND, "completed", 2, Decimal("0.002"), Decimal("0.003"), Decimal("1"))
    assert task.completed == 2 and task.fields["running"] == "running 0"
    assert task.fields["spend"] == "spent 0.003000 of 1.00 USD"
    finish_progress(bar)
    finish_progress(bar)  # idempotent
    text = bar.progress.console.export_text()
    assert "[1/2] completed in " in text and "3 tool calls, charged 0.001000 USD; spent 0.001000 of 1.00 USD" in text
    assert "2/2" in text and "spent 0.003000 of 1.00 USD" in text and "ETA" in text and "running 0" in text


def test_the_plain_lines_are_unchanged() -> None:
    console = _console()
    plain = ConsoleProgress(console)
    plain.attempt_started(FIRST)
    plain.attempt_settled(FIRST, "failed", 0, Decimal("0.1"), Decimal("0.1"), Decimal("1"))
    lines = console.export_text().splitlines()
    assert lines[0] == "[1/2] lantern-discovery rep 1 Repository tools running…"
    assert re.fullmatch(r"\[1/2\] failed in \d+\.\d s, 0 tool calls, charged 0\.100000 USD; "
                        r"spent 0\.100000 of 1\.00 USD", lines[1])
    finish_progress(plain)  # no finish(): nothing happens


@pytest.mark.parametrize(("stdout_tty", "stderr_tty", "kind"), [
    (False, True, SilentProgress), (True, False, ConsoleProgress), (True, True, BarProgress)])
def test_the_view_is_chosen_by_which_streams_are_terminals(monkeypatch: pytest.MonkeyPatch, stdout_tty: bool,
                                                           stderr_tty: bool, kind: type) -> None:
    monkeypatch.setattr(view.sys.stdout, "isatty", lambda: stdout_tty)
    monkeypatch.setattr(view.sys.stderr, "isatty", lambda: stderr_tty)
    assert isinstance(progress_for_terminal(), kind)


def test_a_real_run_on_a_terminal_shows_the_bar(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "agentstudy", "minimal", "--manifest", str(study.manifest_path), "--pilot",
               "--transport", "http", "--rehearsal", *(f"--root={n}={p}" for n, p in study.roots.items()),
               "--output", str(tmp_path / "ledger.json"), "--model", "claude-haiku-5-5", "--budget-usd", "1",
               "--input-usd-per-million", "1", "--output-usd-per-million", "5", "--containment", "restricted"]
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", "TERM": "xterm"}
    runner = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    screen = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], 180)
        if not ready:
            runner.kill()
            pytest.fail("no output for 180 s")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    os.close(master)
    assert runner.wait(timeout=60) == 0
    text = ANSI.sub("", screen.decode("utf-8", "replace"))
    assert "[1/2] completed in " in text and "[2/2] completed in " in text
    assert re.search(r"attempts .*2/2 running 0 spent \d\.\d{6} of 1\.00 USD", text), text[-2000:]
    assert "ETA" in text and '"status":"awaiting-adjudication"' in text


def test_the_plain_lines_time_each_attempt_from_its_own_start_when_several_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 103.0, 110.0, 111.0])  # first starts, second starts, first settles, second settles
    monkeypatch.setattr(view.time, "monotonic", lambda: next(clock))
    console = _console()
    plain = ConsoleProgress(console)
    plain.attempt_started(FIRST)
    plain.attempt_started(SECOND)
    plain.attempt_settled(FIRST, "completed", 1, Decimal("0.001"), Decimal("0.001"), Decimal("1"))
    plain.attempt_settled(SECOND, "completed", 1, Decimal("0.001"), Decimal("0.002"), Decimal("1"))
    lines = console.export_text().splitlines()
    assert lines[2].startswith("[1/2] completed in 10.0 s,") and lines[3].startswith("[2/2] completed in 8.0 s,")
