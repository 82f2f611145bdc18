"""``agentstudy adjudicate --concurrency N`` on a minimal-study ledger (issue 19, item 1).

Real parts: the pinned Claude Code binary as the adjudicator, the rehearsal server on 127.0.0.1 with
the scripted key-term adjudicator answering after a delay (so attempts overlap), real corpora. How
many attempts ran at once comes from the companion's ``startedAt`` / ``endedAt`` (stamped by the
coordinator and its workers), checked by ``protocol.adjudication_integrity``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.adjudication.blinding import blind_items
from agentstudy.adjudication.run import run_adjudication
from agentstudy.protocol.adjudication import MinimalAdjudication
from agentstudy.protocol.adjudication_integrity import companion_problems
from agentstudy.protocol.ledger_concurrency import most_at_once, parse_span
from agentstudy.rehearsal.adjudicator_policy import adjudicator_reply
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply
from test_adjudication_support import MODEL, load_view, observation, request_for, write_ledger

SRC = Path(__file__).resolve().parents[1] / "src"
ANSWER = "Deadlines use time.monotonic (src/lantern/cache.py:29); prototypes used time.time (docs/design.md:99)."
OVERSPEND = "OVERSPEND"
UNTIMED = ("itemId", "observationIndex", "taskId", "repetition", "status", "rubric", "score", "attemptStatus",
           "pendingReason")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("adjudication-concurrency"))


def _ledger(path: Path, study: ExampleStudy, marked: int | None = None) -> Path:
    """Six completed observations (two scenarios x three repetitions); ``marked`` (0-based) overspends."""
    answers = [ANSWER + (f" {OVERSPEND}" if index == marked else "") for index in range(6)]
    scenarios = ("repository-only", "doc-bridge-mcp")
    observations = [observation("lantern-discovery", scenario, answers[2 * (rep - 1) + offset], repetition=rep)
                    for rep in (1, 2, 3) for offset, scenario in enumerate(scenarios)]
    return write_ledger(path, study, observations, status="awaiting-adjudication")


def _companion(path: Path) -> MinimalAdjudication:
    return MinimalAdjudication.model_validate(json.loads(path.read_text(encoding="utf-8")))


def _peak(companion: MinimalAdjudication) -> int:
    spans = [parse_span(item.started_at, item.ended_at) for item in companion.items if item.attempt_status]
    assert all(span is not None for span in spans)
    return most_at_once([span for span in spans if span is not None])


def _overspending(body: Mapping[str, Any]) -> ScriptedReply:
    """The key-term adjudicator, but a turn about the marked answer reports 300,000 input tokens (0.15 USD)."""
    reply = adjudicator_reply(body)
    if OVERSPEND in json.dumps(body.get("messages")):
        return replace(reply, usage={**reply.usage, "input_tokens": 300_000})
    return reply


def _run(study: ExampleStudy, ledger: Path, output: Path, binary: Path, *, concurrency: int, cap: str = "1",
         policy: Any = adjudicator_reply, latency_ms: int = 600, seed: int = 1) -> MinimalAdjudication:
    with RehearsalServer(policy=policy, latency_ms=latency_ms) as server:
        request = replace(request_for(ledger, study, binary, output, base_url=server.base_url, cap=cap, seed=seed),
                          concurrency=concurrency)
        run_adjudication(request)
    companion = _companion(output)
    assert companion_problems(companion) == []
    return companion


def test_three_at_once_gives_the_verdicts_of_one_at_a_time(study: ExampleStudy, tmp_path: Path,
                                                           claude_bin: Path) -> None:
    ledger = _ledger(tmp_path / "ledger.json", study)
    one = _run(study, ledger, tmp_path / "one.json", claude_bin, concurrency=1)
    three = _run(study, ledger, tmp_path / "three.json", claude_bin, concurrency=3)
    assert [item.status for item in one.items] == ["scored"] * 6
    project = [[item.model_dump(by_alias=True)[key] for key in UNTIMED] for item in one.items]
    assert [[item.model_dump(by_alias=True)[key] for key in UNTIMED] for item in three.items] == project
    assert [[v.verdict for v in item.verdicts] for item in three.items] == [
        [v.verdict for v in item.verdicts] for item in one.items]
    document = json.loads((tmp_path / "one.json").read_text(encoding="utf-8"))
    assert "concurrency" not in document and "openReservations" not in document  # N = 1: the companion as before
    assert all("startedAt" not in item for item in document["items"])
    assert three.concurrency == 3 and three.open_reservations == []
    assert _peak(three) == 3


def test_a_cap_that_fits_two_reservations_never_has_a_third_attempt_in_flight(study: ExampleStudy, tmp_path: Path,
                                                                            claude_bin: Path) -> None:
    ledger = _ledger(tmp_path / "ledger.json", study)
    companion = _run(study, ledger, tmp_path / "race.json", claude_bin, concurrency=6, cap="0.20")
    assert _peak(companion) == 2  # six slots, but spent + open + one more 0.10 limit fits twice only
    assert Decimal(str(companion.budget.spent)) <= Decimal("0.20")
    assert companion.open_reservations == []
    attempted = [item for item in companion.items if item.attempt_status is not None]
    assert len(attempted) >= 3  # the walk waited for settlements and admitted again


def test_the_first_attempt_that_does_not_complete_stops_admission(study: ExampleStudy, tmp_path: Path,
                                                                  claude_bin: Path) -> None:
    ledger = _ledger(tmp_path / "ledger.json", study, marked=0)
    marked = ledger_observation_with_marker(ledger)
    seed = next(s for s in range(500) if blind_items(load_view(ledger).observations, s)[0].observation.index == marked)
    companion = _run(study, ledger, tmp_path / "stop.json", claude_bin, concurrency=3, cap="5",
                     policy=_overspending, latency_ms=1500, seed=seed)
    first = companion.items[0]
    assert first.attempt_status == "budget-exceeded" and first.status == "pending"
    assert companion.stop_reason == "item 1 of 6: the adjudicator attempt ended budget-exceeded"
    assert Decimal(str(first.charged_usd)) > Decimal("0.10")  # charged what it spent, above its limit
    attempted = [index for index, item in enumerate(companion.items) if item.attempt_status is not None]
    assert attempted == list(range(len(attempted)))  # admission in item order
    assert len(attempted) < 6  # admission stopped
    assert companion.open_reservations == []  # the attempts already running finished and were recorded
    never = [item for item in companion.items if item.attempt_status is None]
    assert all((item.pending_reason or "").startswith("not adjudicated: item 1 of 6") for item in never)


def ledger_observation_with_marker(ledger: Path) -> int:
    """The ledger index of the observation whose answer carries the overspending marker."""
    observations = json.loads(ledger.read_text(encoding="utf-8"))["observations"]
    return next(index for index, item in enumerate(observations) if OVERSPEND in item["answer"])


def test_ctrl_c_leaves_a_companion_that_holds_together(study: ExampleStudy, tmp_path: Path, claude_bin: Path) -> None:
    ledger = _ledger(tmp_path / "ledger.json", study)
    output = tmp_path / "companion.json"
    roots = [arg for name, root in study.roots.items() for arg in ("--root", f"{name}={root}")]
    command = [sys.executable, "-m", "agentstudy", "adjudicate", str(ledger), "--manifest", str(study.manifest_path),
               *roots, "--output", str(output), "--model", MODEL, "--budget-usd", "1", "--rehearsal",
               "--rehearsal-latency-ms", "3000", "--concurrency", "3", "--seed", "1",
               "--allow-unverified"]  # a hand-written ledger: the runner's hashes are not the point here
    env = {**os.environ, "PYTHONPATH": str(SRC), "AGENTSTUDY_CLAUDE_BIN": str(claude_bin)}
    with (tmp_path / "stderr").open("wb") as stderr:
        runner = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        try:
            for _ in range(1200):
                if output.exists() and len(_companion(output).open_reservations or []) == 3:
                    break
                assert runner.poll() is None, (tmp_path / "stderr").read_text(encoding="utf-8")
                time.sleep(0.05)
            else:
                pytest.fail("three attempts were never in flight")
            runner.send_signal(signal.SIGINT)
            assert runner.wait(timeout=90) == 130
        finally:
            if runner.poll() is None:
                runner.kill()
    companion = _companion(output)
    assert companion_problems(companion) == []
    assert "stopped by SIGINT" in (companion.stop_reason or "")
    assert companion.open_reservations == [] and companion.status == "awaiting-adjudication"
    interrupted = [item for item in companion.items if item.attempt_status not in (None, "completed")]
    assert interrupted, "the running attempts were stopped"
    assert all(item.charged_usd >= item.reserved_usd for item in interrupted)  # charged in full
