"""An attempt body that raises stops admission at once (issue 29, break 6).

The break: TMPDIR filling up mid-run at ``--concurrency 4``; an attempt whose body raised (its export
could not be written) was noticed only when it reached the head of the admission-ordered queue,
while its slot was refilled at once, so every later attempt raised too: 35 open reservations charged
for attempts that never ran, "the runner stopped on an internal error" with no reason, 7 orphan
owner markers. Here TMPDIR is a real 2 MiB tmpfs that the fake ``claude`` fills; the run must stop
admitting at the first raise, name the error on stderr and in the ledger, and leave no directory or
owner marker behind. Settled at stop (issue 40, break 11): the attempts admitted when the first one
raised never started an agent process; each is recorded as ``failed`` with ``statusReason``
``never started: No space left on device``, charged its whole reservation (named charged, not spent),
and no reservation is left open — one attempt at a time as in the concurrent walk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.schedule import build_schedule
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from tmpfs import small_tmpfs

from checkout_run import run_agentstudy
from fakes import FakeClaude
from inprocess_cli import invoke_agentstudy
from one_corpus import one_corpus

NO_SPACE = "No space left on device"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    """The example study file narrowed to its first corpus (a preflight of one MCP server; 12 attempts planned), built
    once: both runs only read the checkout (each exports its own copy)."""
    return one_corpus(build_example_study(tmp_path_factory.mktemp("admission") / "study"))


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_full_tmpdir_mid_run_stops_admission_at_the_first_raise(tmp_path: Path, study: ExampleStudy,
                                                                  fake_claude: FakeClaude, concurrency: int) -> None:
    schedule = build_schedule(load_manifest(study.manifest_path).manifest, "full")
    output = tmp_path / "out" / "ledger.json"
    output.parent.mkdir()
    with small_tmpfs(tmp_path / "tmpdir", "2m") as tmpdir:
        fake_claude.behave(mode="ok", fillDirectory=str(tmpdir))
        done = run_agentstudy(
            "minimal", "--manifest", str(study.manifest_path), "--run", "--transport", "cli", "--approve-budget",
            *(f"--root={name}={path}" for name, path in study.roots.items()), "--output", str(output),
            "--claude-bin", str(fake_claude.path), "--model", "claude-haiku-5-5", "--budget-usd", "10",
            "--concurrency", str(concurrency), "--containment", "restricted",
            env={**os.environ, "TMPDIR": str(tmpdir)},
        )
        left = sorted(p.name for p in tmpdir.iterdir())
    assert done.returncode not in (0, 2), done.stderr[-2000:]
    assert left == ["filler"], f"no scratch directory or owner marker is left: {left}"
    ledger = json.loads(output.read_text(encoding="utf-8"))
    reason = ledger["stopReason"]
    assert ledger["status"] == "blocked"
    assert "could not run" in reason and NO_SPACE in reason, reason
    assert reason in done.stderr, done.stderr[-2000:]
    assert not ledger.get("openReservations"), "settled at stop: no reservation is left open (issue 40, break 11)"
    observations = ledger["observations"]
    admitted = len(observations)
    assert admitted < len(schedule), "admission stopped"
    unstarted = [o for o in observations if str(o.get("statusReason", "")).startswith("never started: ")]
    assert 1 <= len(unstarted) <= 4, "the attempts admitted when the first one raised are recorded as never started"
    for o in unstarted:
        assert o["status"] == "failed" and NO_SPACE in o["statusReason"], o
        assert o["usageComplete"] is False
        assert o["chargedUsd"] == o["reservedUsd"] > 0, "a failure keeps its whole reservation"
    never_started = sum(o["chargedUsd"] for o in unstarted)
    assert never_started > 0 and f"{never_started:g} USD charged, not spent" in done.stderr, done.stderr[-2000:]
    assert abs(sum(o["chargedUsd"] for o in observations) - ledger["budget"]["spent"]) < 1e-9, \
        "spent is explained by the observations alone"
    # every recorded attempt had its child: a completed one wrote the fake's record; a child that the full
    # TMPDIR broke before it could write one is recorded as not completed (seen under load)
    completed = [o for o in observations if o["status"] == "completed"]
    assert len(completed) <= len(fake_claude.records) <= len(observations) - len(unstarted), "a child ran unrecorded"
    # the report reads the ledger only: in this process (the run above is the process under test)
    report = invoke_agentstudy("report", str(output), "--format", "json")
    assert report.returncode == 0, report.stderr[-2000:]
    spend = json.loads(report.stdout)["spend"]
    assert (spend["neverStarted"], spend["chargedNotSpentUsd"]) == (len(unstarted), never_started), spend
    text = invoke_agentstudy("report", str(output))
    assert "charged, not spent" in text.stdout and f"{len(unstarted)} attempt(s) never started" in text.stdout
    first_open = min(int(reason.split()[1]), admitted)
    assert admitted - first_open < concurrency, "the slot of the attempt that raised was not refilled"
