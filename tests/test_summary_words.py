"""The run's summary reads right to a new user (issue 42): no ``None``, money in a rehearsal is notional, a
sequential run says where and why it stopped, and the fidelity line's counts agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentstudy.commands.view import print_summary_table, sequential_text
from agentstudy.protocol.sequential_record import LookRecord, SequentialRecord
from agentstudy.report.treatment import TreatmentSummary, fidelity_line
from agentstudy.runners.summary import RunSummary, sequential_line


def _line(**changes: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "transport": "cli", "rehearsal": True, "note": "rehearsal: no real money", "status": "blocked",
        "mode": "pilot", "plannedAttempts": 2, "attempts": 1, "byStatus": {"blocked": 1},
        "byScenario": {"repository-only": 1}, "toolCalls": 0, "inputTokens": None, "outputTokens": None,
        "spentUsd": 0.1, "capUsd": 1, "usageComplete": False, "extrapolatedFullRunUsd": None,
        "fullRunFactor": "18", "ledger": "/tmp/ledger.json",
    }
    line.update(changes)
    return line


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # one table row per line: the words are not wrapped


def _printed(line: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    print_summary_table(RunSummary(status=line["status"], ledger=Path(line["ledger"]), line=line))
    return " ".join(capsys.readouterr().err.split())


def test_unknown_tokens_and_notional_money_in_a_rehearsal(capsys: pytest.CaptureFixture[str]) -> None:
    text = _printed(_line(), capsys)
    assert "None" not in text
    assert "input unknown, output unknown (usage incomplete)" in text
    assert "0.100000 notional USD (rehearsal: nothing was paid) of a 1.00 USD cap" in text


def test_a_paid_run_spends_plain_usd(capsys: pytest.CaptureFixture[str]) -> None:
    text = _printed(_line(rehearsal=False, note=None, inputTokens=10, outputTokens=3, usageComplete=True), capsys)
    assert "input 10, output 3" in text and "notional" not in text and "0.100000 USD of a 1.00 USD cap" in text


def _record(reason: str | None, looks: list[float]) -> SequentialRecord:
    return SequentialRecord(
        looks=[LookRecord(tasks=i + 1, e_value=e, decision="continue") for i, e in enumerate(looks)],
        stopped_early=reason is not None, stop_reason=reason, tasks_completed=len(looks), max_tasks=9,  # type: ignore[arg-type]
        alpha=0.05, futility=0.1, metric="inputTokens", better_when="lower", seed=1, task_order=[],
        stopped_at=None, direction="better" if reason == "efficacy" else None)


def test_a_sequential_stop_and_its_reason_are_in_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    line = _line(status="awaiting-adjudication", mode="full", plannedAttempts=18, attempts=14,
                 sequential=sequential_line(_record("efficacy", [1.5, 4.0, 9.0, 12.0, 16.0, 19.0, 21.25])))
    text = _printed(line, capsys)
    assert "14 of 18 planned" in text
    assert "efficacy after 7 of 9 tasks (e-value 21.2 >= 20; the treatment did better)" in text


def test_a_sequential_run_without_a_decision_says_so() -> None:
    assert sequential_text(sequential_line(_record(None, [1.5, 0.8]))) == \
        "no stop decided after 2 of 9 tasks (e-value 0.8, bound 20)"
    assert sequential_text(sequential_line(_record("futility", [0.5, 0.05]))).startswith(
        "futility (the bound is out of reach) after 2 of 9 tasks")


def _fidelity(median: float | None, errors: int) -> str:
    summary = TreatmentSummary(
        treatment_attempts=6, attempts_using_server=0 if median is None else 6, server_calls=errors,
        server_call_errors=errors, attempts_all_calls_failed=6 if median is None else 0, median_calls=median,
        tool_definition_tokens=None, control_attempts=6, control_offered=0, recorded=6, models={}, minimum_use=0.5,
        per_protocol_tasks=())
    return fidelity_line(summary, "repomix")


def test_fidelity_counts_agree() -> None:
    assert "(no call answered; 6 calls errored;" in _fidelity(None, 6)
    assert "(no calls; 0 calls errored;" in _fidelity(None, 0)
    assert "(median 3 calls; 1 calls errored;" in _fidelity(3, 1)
