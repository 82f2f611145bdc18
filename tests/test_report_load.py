"""Reading ledgers tolerantly and joining companions strictly (binding by SHA-256, items by index)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from agentstudy.report.load import load_study, parse_ledger
from agentstudy.report.model import NotSupportedYet, ReportInputError
from test_report_builders import TASKS, cli_obs, companion, full_study, http_obs, ledger, sealed, write

ORIGINAL_LEDGER = (Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"
                   / "observation-ledger-v1.json")


def test_cli_and_http_observations_are_read_by_their_camel_case_names(tmp_path: Path) -> None:
    observations = [cli_obs(TASKS[0], "repository-only", 1, input_tokens=1234, charged=0.0015),
                    http_obs(TASKS[0], "doc-bridge-mcp", 1, input_tokens=999, charged=None, wall_ms=77)]
    data = write(tmp_path / "l.json", ledger(observations))
    study = parse_ledger(data, "l.json")
    cli, http = study.attempts
    assert (cli.input_tokens, cli.charged_usd, cli.transport) == (1234, Decimal("0.0015"), "cli")
    assert cli.usage is not None and cli.usage.source == "costBasis"
    assert (http.input_tokens, http.charged_usd, http.wall_time_ms, http.transport) == (999, None, 77, "http")
    assert http.cache_read_tokens is None
    assert http.usage is not None and http.usage.source == "token fields"
    assert http.tool_calls_by_name == {"read_file": 2}


def test_missing_numbers_are_missing_not_zero(tmp_path: Path) -> None:
    obs = cli_obs(TASKS[0], "repository-only", 1, status="failed", input_tokens=None, output_tokens=None)
    del obs["wallTimeMs"]
    study = parse_ledger(write(tmp_path / "l.json", ledger([obs], status="blocked")), "l.json")
    attempt = study.attempts[0]
    assert (attempt.input_tokens, attempt.output_tokens, attempt.wall_time_ms, attempt.usage) == (None,) * 4


@pytest.mark.parametrize(("change", "message"), [
    ({"inputTokens": "12"}, "inputTokens is not a whole number"),
    ({"inputTokens": -1}, "inputTokens is not a whole number"),
    ({"toolCalls": True}, "toolCalls is not a whole number"),
    ({"repetition": 0}, "repetition is not a whole number >= 1"),
    ({"chargedUsd": -0.5}, "chargedUsd"),
    ({"chargedUsd": "0.1"}, "chargedUsd"),
    ({"status": ""}, "status is missing"),
    ({"usageComplete": "yes"}, "usageComplete is not true or false"),
])
def test_malformed_observations_are_refused(tmp_path: Path, change: dict[str, object], message: str) -> None:
    obs = cli_obs(TASKS[0], "repository-only", 1) | change
    with pytest.raises(ReportInputError, match=message):
        parse_ledger(write(tmp_path / "l.json", ledger([obs])), "l.json")


def test_duplicates_and_foreign_documents_are_refused(tmp_path: Path) -> None:
    twice = [cli_obs(TASKS[0], "repository-only", 1), cli_obs(TASKS[0], "repository-only", 1)]
    with pytest.raises(ReportInputError, match="two observations"):
        parse_ledger(write(tmp_path / "l.json", ledger(twice)), "l.json")
    for document in (b"[]", b"{", json.dumps({"type": "study-protocol", "observations": []}).encode(),
                     json.dumps({"version": "x"}).encode()):
        with pytest.raises(ReportInputError):
            parse_ledger(document, "x.json")


def test_a_controlled_ledger_is_not_supported_yet() -> None:
    with pytest.raises(NotSupportedYet, match="not supported yet"):
        parse_ledger(ORIGINAL_LEDGER.read_bytes(), ORIGINAL_LEDGER.name)


def test_a_companion_joins_scores_pending_and_missing(tmp_path: Path) -> None:
    observations = full_study()[:4]
    observations.append(cli_obs(TASKS[2], "repository-only", 1, status="failed", charged=0.1))
    data = write(tmp_path / "l.json", ledger(observations, status="blocked"))
    (tmp_path / "c.json").write_text(json.dumps(companion(data, {0: "partial", 1: None, 3: "correct"})))
    study = load_study(tmp_path / "l.json", tmp_path / "c.json", allow_unverified=True)
    states = [(a.adjudication, a.correctness) for a in study.attempts]
    assert states == [("scored", 0.5), ("pending", None), ("pending", None), ("scored", 1.0), ("missing", None)]
    assert study.attempts[1].pending_reason == "the adjudicator's reply was not valid JSON"
    assert study.attempts[2].pending_reason == "no adjudication item"
    assert study.adjudication is not None
    assert (study.adjudication.scored, study.adjudication.pending) == (2, 2)


def test_a_companion_of_another_ledger_is_refused(tmp_path: Path) -> None:
    data = write(tmp_path / "l.json", ledger(full_study()))
    record = companion(data, {0: "correct"})
    write(tmp_path / "l.json", ledger(full_study(), cap=9.0))  # same study, other bytes
    (tmp_path / "c.json").write_text(json.dumps(record))
    with pytest.raises(ReportInputError, match="bound to ledger SHA-256"):
        load_study(tmp_path / "l.json", tmp_path / "c.json")


@pytest.mark.parametrize(("change", "message"), [
    ({"observationIndex": 99}, "points at no observation"),
    ({"taskId": "other-task"}, "does not match observation 1"),
    ({"repetition": 3}, "does not match observation 1"),
    ({"score": None, "rubric": None}, "scored without a score"),
])
def test_items_that_do_not_join_are_refused(tmp_path: Path, change: dict[str, object], message: str) -> None:
    data = write(tmp_path / "l.json", ledger(full_study()))
    record = companion(data, {0: "correct"})
    record["items"][0].update(change)
    (tmp_path / "c.json").write_text(json.dumps(sealed(record)))
    with pytest.raises(ReportInputError, match=message):
        load_study(tmp_path / "l.json", tmp_path / "c.json")


def test_an_invalid_companion_is_refused(tmp_path: Path) -> None:
    data = write(tmp_path / "l.json", ledger(full_study()))
    record = companion(data, {0: "correct"})
    record["humanReview"] = True
    (tmp_path / "c.json").write_text(json.dumps(record))
    with pytest.raises(ReportInputError, match="not valid: humanReview"):
        load_study(tmp_path / "l.json", tmp_path / "c.json")
    with pytest.raises(ReportInputError, match="cannot read"):
        load_study(tmp_path / "l.json", tmp_path / "absent.json")
