"""Issue 19, item 4: SIGKILL at spread moments of a real rehearsal run leaves a snapshot + journal that verify.

Each run is a real subprocess of this checkout's ``agentstudy minimal --pilot --transport http
--rehearsal --rehearsal-latency-ms 300`` over real git corpora and the bundled MCP server
(every request answered after 300 ms, so the kills land among the journal's appends). Each
kill lands a fixed delay after the journal appears (2.4 to 6 s: inside the attempts, the
pilot's requests take about 5 s). After each kill: if the ledger exists, the ledger
as every reader reads it (last snapshot + journal, a torn last line discarded) verifies,
``spent`` is the observations' charges plus the open reservation (reserved + charged), the
command ``agentstudy ledger`` accepts it, and the next run refuses the path (never resumes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.ledger_journal import read_ledger
from agentstudy.io.ledger_store import OutputPathError, journal_path, resolve_output
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.protocol.records import MinimalLedger
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from checkout_run import SRC
from one_corpus import one_corpus

MOMENTS_S = (2.4, 4.2, 6.0)
"""Seconds after the journal appears (the ledger's creation, after preflight) that the kill lands: the span the
six seeded draws of 0-6 s used to cover (2.36-5.98 s) at 1.8 s steps, each moment a whole run. With every request
answered after 300 ms the journal grows by a line every few hundred ms, so each moment lands among its appends as
the four moments 1.2 s apart of before did; the fourth run showed no other kind of moment (issue 42 item 7)."""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    """The example study file narrowed to its first corpus: the pilot's one task, a preflight of one MCP server."""
    return one_corpus(build_example_study(tmp_path_factory.mktemp("journal-kill") / "study"))


def _command(study: ExampleStudy, ledger: Path) -> list[str]:
    return [sys.executable, "-m", "agentstudy", "minimal", "--manifest", str(study.manifest_path), "--pilot",
            "--transport", "http", "--rehearsal", "--rehearsal-latency-ms", "300",
            *(f"--root={name}={path}" for name, path in study.roots.items()), "--output", str(ledger),
            "--model", "claude-haiku-5-5", "--budget-usd", "1", "--input-usd-per-million", "1",
            "--output-usd-per-million", "5", "--containment", "restricted"]


@pytest.mark.parametrize("moment_s", MOMENTS_S, ids=[f"{m:.1f}s" for m in MOMENTS_S])
def test_sigkill_at_a_random_moment_leaves_a_ledger_that_verifies(tmp_path: Path, study: ExampleStudy,
                                                                   moment_s: float) -> None:
    out, scratch = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    scratch.mkdir()
    ledger = out / "ledger.json"
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(SRC)}
    runner = subprocess.Popen(_command(study, ledger), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    end = time.monotonic() + 180
    while not journal_path(ledger).exists():
        assert runner.poll() is None, f"the run ended (exit {runner.returncode}) before its journal appeared"
        assert time.monotonic() < end, "the journal never appeared"
        time.sleep(0.01)
    try:
        runner.wait(timeout=moment_s)
    except subprocess.TimeoutExpired:
        os.killpg(runner.pid, signal.SIGKILL)  # the runner and every child it started (its MCP server)
        runner.wait()
    read = read_ledger(ledger, ledger.read_bytes())
    assert verify_ledger_bytes(read.data).problems == ()
    model = MinimalLedger.model_validate(json.loads(read.data))
    charges = sum((Decimal(repr(o.charged_usd)) for o in model.observations), Decimal(0))
    opened = model.open_reservation
    at_risk = Decimal(repr(opened.reserved_usd)) + Decimal(repr(opened.charged_usd)) if opened else Decimal(0)
    assert abs(Decimal(repr(model.budget.spent)) - (charges + at_risk)) < Decimal("1e-12")
    assert model.budget.spent <= model.budget.cap
    if read.journal is None:  # killed before the journal existed, or the run had closed cleanly
        assert model.status != "running" or (not model.observations and opened is None)
    result = CliRunner().invoke(main, ["ledger", str(ledger), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["ledger"]["verified"] is True
    with pytest.raises(OutputPathError):
        resolve_output(ledger, ())
