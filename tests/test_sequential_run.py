"""A sequential study run end to end in rehearsal (issue 35): it stops when the answer is clear, the ledger
records every look and verifies, nothing is reserved after the stop, and a SIGTERM keeps the looks intact."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.pricing.sums import display_usd
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger
from agentstudy.protocol.records import MinimalLedger
from concurrent_ledgers import live_state, moment, verified
from plans_once import plans_simulated_once
from sequential_study import sequential_rehearsal

MODEL = "claude-haiku-5-5"


def _roots(study: Any) -> list[str]:
    return [f"--root={name}={path}" for name, path in study.roots.items()]


@pytest.fixture(scope="module", autouse=True)
def plans_once() -> Iterator[None]:
    """The report's four formats plan the same metrics of the same ledger: each distinct power plan is simulated
    once in this module (``plans_once``)."""
    with plans_simulated_once():
        yield


@pytest.fixture(scope="module")
def stopped_run(sequential_stopped: tuple[Any, Path, Path]) -> tuple[Path, MinimalLedger, Path]:
    """The 20-task, one-repetition rehearsal run once (http, one attempt at a time; shared, read only)."""
    _, manifest, output = sequential_stopped
    return output, verified(output), manifest


def test_every_difference_of_one_sign_stops_for_efficacy_before_twenty_tasks(
        stopped_run: tuple[Path, MinimalLedger, Path]) -> None:
    _, ledger, _ = stopped_run
    record = ledger.sequential
    assert record is not None
    assert record.stop_reason == "efficacy" and record.stopped_early
    assert 7 <= record.tasks_completed < 20 and record.max_tasks == 20
    assert record.looks[-1].e_value >= 20 > record.looks[-2].e_value
    assert [look.decision for look in record.looks[:-1]] == ["continue"] * (record.tasks_completed - 1)
    # Every task difference had the same sign: the MCP arm read more input tokens on every task (declared better).
    by_task: dict[str, dict[str, int]] = {}
    for o in ledger.observations:
        assert o.input_tokens is not None
        by_task.setdefault(o.task_id, {})[o.scenario] = o.input_tokens
    assert all(arms["doc-bridge-mcp"] > arms["repository-only"] for arms in by_task.values())
    assert record.direction == "better" and record.construction == "magnitudeBet"
    assert record.sidedness == "one-sided" and record.bet_size == 0.648  # planned from maxTasks 20, alpha 0.05
    # Nothing after the stop: exactly the decided tasks' blocks, in the recorded order, all completed.
    assert len(ledger.observations) == 2 * record.tasks_completed < ledger.planned_attempts == 40
    assert list(by_task) == record.task_order[:record.tasks_completed]
    assert ledger.status == "awaiting-adjudication"
    # Every attempt cost something, so the full study (a superset of these attempts) spends strictly more.
    assert all(Decimal(str(o.charged_usd)) > 0 for o in ledger.observations)
    assert Decimal(str(ledger.budget.spent)) == sum(Decimal(str(o.charged_usd)) for o in ledger.observations)


@pytest.mark.parametrize("change, problem", [
    (lambda s: s["looks"][-2].update(eValue=s["looks"][-2]["eValue"] * 1.01), "eValue is not what the observations"),
    (lambda s: s["looks"].pop(), "stopReason"),
    (lambda s: s.update(stoppedEarly=False), "stoppedEarly"),
    (lambda s: s.update(taskOrder=list(reversed(s["taskOrder"]))), "out of the planned block order"),
    (lambda s: s.update(direction="worse"), "direction"),
    # issue 41: each block replays with its own construction; an older (absent) one is the two-sided e-process
    (lambda s: (s.pop("construction"), s.pop("betSize")), "not what the observations give"),
    (lambda s: s.update(sidedness="two-sided"), "sidedness"),
    # the recorded bet is the one replayed: another bet gives other e-values; none, or one beside another
    # construction, is refused
    (lambda s: s.update(betSize=0.9), "not what the observations give"),
    (lambda s: s.pop("betSize"), "betSize is required"),
    (lambda s: s.update(construction="magnitudeMixture"), "betSize is required"),
])
def test_the_verifier_refuses_changed_looks(stopped_run: tuple[Path, MinimalLedger, Path], change: Any,
                                            problem: str) -> None:
    document = json.loads(stopped_run[0].read_bytes())
    change(document["sequential"])
    problems = verify_ledger(seal_ledger(document)).problems
    assert any(problem in p for p in problems), problems


def test_a_ledger_that_ran_on_after_the_stop_is_refused(stopped_run: tuple[Path, MinimalLedger, Path]) -> None:
    document = json.loads(stopped_run[0].read_bytes())
    extra = {**document["observations"][-1], "taskId": document["sequential"]["taskOrder"][-1]}
    document["observations"].append(extra)
    document["budget"]["spent"] = document["budget"]["spent"] + extra["chargedUsd"]
    problems = verify_ledger(seal_ledger(document)).problems
    assert any("after the sequential stop" in p for p in problems), problems


def test_sequential_input_is_refused_in_one_line(tmp_path: Path, stopped_run: tuple[Path, MinimalLedger, Path]) -> None:
    manifest = stopped_run[2]
    result = CliRunner().invoke(main, ["study", "--manifest", str(manifest), "--pilot", "--dry-run"])
    assert result.exit_code == 2 and "not a pilot" in result.output
    dry = CliRunner().invoke(main, ["study", "--manifest", str(manifest), "--run", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    line = json.loads(dry.stdout.strip().splitlines()[-1])
    assert line["attempts"] == 40 and line["sequential"]["maxTasks"] == 20 and line["sequential"]["seed"] == 7
    assert (line["sequential"]["construction"], line["sequential"]["betSize"]) == ("magnitudeBet", 0.648)
    assert sorted(line["sequential"]["taskOrder"]) == sorted(json.loads(manifest.read_text())["tasks"][i]["id"]
                                                             for i in range(20))


def test_sigterm_at_concurrency_four_keeps_the_looks_and_reserves_nothing_after(tmp_path: Path) -> None:
    study, manifest = sequential_rehearsal(tmp_path / "study")
    ledger_path = tmp_path / "out" / "ledger.json"
    ledger_path.parent.mkdir()
    command = [sys.executable, "-m", "agentstudy", "study", "--manifest", str(manifest), "--run", "--rehearsal",
               *_roots(study), "--output", str(ledger_path), "--model", MODEL, "--budget-usd", "5",
               "--attempt-budget-usd", "0.1", "--concurrency", "4", "--rehearsal-latency-ms", "1000"]
    runner = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    looks_before: list[dict[str, Any]] = []
    while runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        document = live_state(ledger_path)
        if document is not None:
            looks_before = document["sequential"]["looks"]
            if len(looks_before) >= 2 and len(document.get("openReservations") or []) == 4:
                break
    assert len(looks_before) >= 2, "the run never took two looks with four attempts in flight"
    signalled = datetime.now(UTC)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=120) == 128 + signal.SIGTERM
    ledger = verified(ledger_path)  # hashes, invariants and the looks replayed from the observations
    assert ledger.status == "blocked" and ledger.stop_reason is not None and "SIGTERM" in ledger.stop_reason
    assert ledger.sequential is not None
    recorded = [look.model_dump(by_alias=True) for look in ledger.sequential.looks]
    assert recorded[:len(looks_before)] == looks_before  # the looks taken before the signal are intact
    assert ledger.open_reservations == []
    # No attempt was admitted (reserved) after the signal; every task touched is a started block.
    assert all(moment(o.started_at) <= signalled + timedelta(milliseconds=200) for o in ledger.observations)
    touched = {o.task_id for o in ledger.observations}
    assert touched == set(ledger.sequential.task_order[:len(touched)])


def test_the_report_opens_with_the_stop_and_the_money_not_spent(stopped_run: tuple[Path, MinimalLedger, Path],
                                                               tmp_path: Path) -> None:
    output, ledger, _ = stopped_run
    record = ledger.sequential
    assert record is not None
    text = CliRunner().invoke(main, ["report", str(output)], catch_exceptions=False).output
    glance = text.split("Result at a glance", 1)[1].split("About this report", 1)[0]
    first = next(line for line in glance.splitlines() if line.strip() and set(line.strip()) != {"-"})
    assert first.startswith(f"Stopped after {record.tasks_completed} of 20 tasks: more input tokens with ")
    assert f"(e-value {record.looks[-1].e_value:,.1f} ≥ 20)" in first
    spent = sum(Decimal(str(o.charged_usd)) for o in ledger.observations)
    planned = spent / len(ledger.observations) * 40
    assert f"{display_usd(planned - spent)} USD of the planned {display_usd(planned)} USD not spent" in first
    assert "not the stopping rule" in glance
    html_path = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(output), "--format", "html", "--output", str(html_path)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    html = html_path.read_text()
    glance_html = html.split("Result at a glance", 1)[1].split("About this report", 1)[0]
    assert "<svg" in glance_html and "e-value" in glance_html
    machine = json.loads(CliRunner().invoke(main, ["report", str(output), "--format", "json"]).output)
    assert machine["sequential"]["stopReason"] == "efficacy" and machine["sequential"]["line"] == first[0].lower() + \
        first[1:-1]
    assert abs(Decimal(str(machine["sequential"]["notSpentUsd"])) - (planned - spent)) < Decimal("1e-12")
    # issue 41: the answer after a stop is the anytime-valid confidence sequence, shown right after the stop line
    sequence = machine["sequential"]["confidenceSequence"]
    assert (machine["sequential"]["construction"], machine["sequential"]["betSize"]) == ("magnitudeBet", 0.648)
    assert sequence["low"] is not None and sequence["low"] > 0  # an efficacy stop: the sequence excludes 0
    paragraphs = [" ".join(block.split()) for block in glance.split("\n\n") if block.strip()]
    stop = next(i for i, block in enumerate(paragraphs) if block.startswith("Stopped after"))
    assert paragraphs[stop + 1].startswith("Anytime-valid 95% confidence sequence for the mean task difference")
    # The first screen shows the stop, the confidence sequence and the design; the fixed-design p and interval are
    # an appendix at the end, labelled optionally stopped (issue 41 item 7).
    verdict = next(block for block in paragraphs if "Does doc-bridge help?" in block)
    assert "the sequential test decided: more input" in verdict and "a difference at" not in verdict
    assert re.search(r"\bp [0-9<]", verdict) is None and f"{record.tasks_completed} tasks × 1 repetition" in verdict
    primary = next(block for block in paragraphs if block.startswith("Primary endpoint"))
    assert "Primary result: The sequential test decided" in primary and "in the appendix" in primary
    assert re.search(r"\bp [0-9<]", primary) is None
    assert "task level (exploratory" not in glance and "p (test of the mean)" not in glance
    assert "one-sided magnitude-aware e-process (magnitudeBet: one bet of size 0.648" in " ".join(glance.split())
    markdown = CliRunner().invoke(main, ["report", str(output), "--format", "md"], catch_exceptions=False).output
    for page in (text, markdown, html):  # the html is the one written above (--output writes what stdout would)
        assert page.count("Appendix: fixed-design figures (optionally stopped)") == 1
        appendix = " ".join(page.split("Appendix: fixed-design figures (optionally stopped)", 1)[1].split())
        assert "Appendix: provenance" not in appendix  # the last section
        assert "task level (exploratory; fixed design on an optionally stopped sample, not the answer)" in appendix
        assert ("Fixed-design figures of the primary endpoint, inputTokens (fixed design on an optionally stopped "
                "sample, not the answer)") in appendix and re.search(r"\bp [0-9<]", appendix) is not None


def test_power_sequential_plans_from_the_ledger(stopped_run: tuple[Path, MinimalLedger, Path]) -> None:
    output = stopped_run[0]
    result = CliRunner().invoke(main, ["power", str(output), "--sequential", "--effect", "500", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["maxTasks"] == 20 and plan["metric"] == "inputTokens" and plan["repetitions"] == 1
    assert 0 < plan["power"] <= 1 and 7 <= plan["expectedTasks"] <= 20
    assert plan["expectedUsd"] < plan["fixedDesignUsd"]
    assert (plan["construction"], plan["sidedness"], plan["betSize"]) == ("magnitudeBet", "one-sided", 0.648)
    # another maxTasks is a new study: its own planned bet
    other = CliRunner().invoke(main, ["power", str(output), "--sequential", "--effect", "500", "--json",
                                      "--max-tasks", "40"], catch_exceptions=False)
    assert other.exit_code == 0, other.output
    assert json.loads(other.output)["betSize"] == 0.396
    missing = CliRunner().invoke(main, ["power", str(output), "--sequential"])
    assert missing.exit_code == 2 and "--effect" in missing.output


def test_the_cli_transport_one_at_a_time_stops_the_same_way(tmp_path: Path) -> None:
    """The real pinned Claude Code against the rehearsal server, one attempt at a time (the seed's walk)."""
    study, manifest = sequential_rehearsal(tmp_path / "study", tasks=6, alpha=0.2, futility=None)
    output = tmp_path / "ledger.json"
    result = CliRunner().invoke(main, ["study", "--manifest", str(manifest), "--run", "--rehearsal",
                                       "--transport", "cli", *_roots(study), "--output", str(output),
                                       "--model", MODEL, "--budget-usd", "1"],
                                env={"AGENTSTUDY_CLAUDE_BIN": None, "AGENTSTUDY_CONTAINMENT": None},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ledger = verified(output)
    record = ledger.sequential
    assert record is not None and ledger.concurrency is None
    assert record.stop_reason == "efficacy" and record.stopped_early and record.tasks_completed < 6
    assert len(ledger.observations) == 2 * record.tasks_completed
    assert ledger.status == "awaiting-adjudication" and ledger.open_reservation is None


def test_at_concurrency_four_the_attempts_in_flight_are_recorded_outside_the_decision(
        stopped_run: tuple[Path, MinimalLedger, Path], tmp_path: Path) -> None:
    study, manifest = sequential_rehearsal(tmp_path / "study")
    output = tmp_path / "ledger.json"
    result = CliRunner().invoke(main, ["study", "--manifest", str(manifest), "--run", "--rehearsal", *_roots(study),
                                       "--output", str(output), "--model", MODEL, "--budget-usd", "5",
                                       "--attempt-budget-usd", "0.1", "--concurrency", "4"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ledger = verified(output)
    record, one_at_a_time = ledger.sequential, stopped_run[1].sequential
    assert record is not None and one_at_a_time is not None
    # The same tasks in the same order give the same looks and the same stop, whatever the concurrency.
    assert record.looks == one_at_a_time.looks and record.stop_reason == "efficacy"
    decided = set(record.task_order[:record.tasks_completed])
    beyond = [o for o in ledger.observations if o.task_id not in decided]
    assert len(ledger.observations) == 2 * record.tasks_completed + len(beyond)  # admitted before the stop
    assert record.stopped_at is not None
    assert all(moment(o.started_at) <= moment(record.stopped_at) for o in ledger.observations)
    assert ledger.status == "awaiting-adjudication" and ledger.open_reservations == []
    if beyond:
        text = CliRunner().invoke(main, ["report", str(output)], catch_exceptions=False).output
        assert f"{len(beyond)} attempt" in text and "already running at the stop" in text
