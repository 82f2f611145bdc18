"""Issue 16, deliverable 2: one parser for every money input; a refusal is one line, exit 2, nothing written.

Each command is run for real (click's CliRunner over the example study, with the fake ``claude``
for the cli transport and the rehearsal server for http, ``--containment restricted`` as for every
fake), with the roots a run needs, so that without the parser the run would go on and write a ledger.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from test_adjudication_support import observation, write_ledger

from fakes import FakeClaude

MODEL = "claude-haiku-5-5"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("money") / "study")


def _roots(study: ExampleStudy) -> list[str]:
    return [f"--root={name}={path}" for name, path in study.roots.items()]


def _invoke(args: list[str], env: dict[str, str | None]) -> Result:
    base: dict[str, str | None] = {"ANTHROPIC_API_KEY": None, "STUDY_BUDGET_USD": None, "STUDY_MODEL": None,
                                   "STUDY_INPUT_USD_PER_MILLION": None, "STUDY_OUTPUT_USD_PER_MILLION": None,
                                   "ADJUDICATOR_BUDGET_USD": None, "ADJUDICATOR_MODEL": None,
                                   "AGENTSTUDY_CONTAINMENT": "restricted"}
    return CliRunner().invoke(main, args, env={**base, **env}, catch_exceptions=False)


def _refused(result: Result, reason: str, *never_written: Path) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("agentstudy: error: ") and reason in line, line
    for path in never_written:
        assert not path.exists(), f"{path} was written"


# -- minimal, cli transport ------------------------------------------------------------------------------------


def _cli_run(study: ExampleStudy, fake: FakeClaude, output: Path, *extra: str) -> list[str]:
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "cli", "--approve-budget",
            *_roots(study), "--output", str(output), "--claude-bin", str(fake.path), "--model", MODEL, *extra]


@pytest.mark.parametrize(("env", "flags", "reason"), [
    ({"STUDY_BUDGET_USD": "1e309"}, [], "the cumulative cap"),
    ({"STUDY_BUDGET_USD": "1"}, ["--attempt-budget-usd", "1e309"], "--attempt-budget-usd"),
    ({"STUDY_BUDGET_USD": "1"}, ["--attempt-budget-usd", "1e-7"], "--attempt-budget-usd"),
    ({"STUDY_BUDGET_USD": "1"}, ["--attempt-budget-usd", "0.0000001"], "at least 0.000001"),
    ({"STUDY_BUDGET_USD": "0.05"}, ["--attempt-budget-usd", "0.10"], "above the cumulative cap"),
    ({"STUDY_BUDGET_USD": "1_0"}, [], "plain decimal"),
    ({"STUDY_BUDGET_USD": "١"}, [], "plain decimal"),
    ({}, ["--budget-usd", "1", "--attempt-budget-usd", "0.1_0"], "plain decimal"),
    ({}, ["--budget-usd", "1", "--attempt-budget-usd", "0.٥"], "plain decimal"),
    ({}, ["--budget-usd", "1", "--attempt-budget-usd", "0.1000000001"], "more than 9 decimals"),
])
def test_cli_money_is_refused_before_the_ledger_exists(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude, env: dict[str, str | None], flags: list[str],
    reason: str,
) -> None:
    output = tmp_path / "ledger.json"
    _refused(_invoke(_cli_run(study, fake_claude, output, *flags), env), reason, output)
    assert fake_claude.calls == [], "not even the version probe ran"


def test_cli_money_that_fits_still_runs(tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude) -> None:
    output = tmp_path / "ledger.json"
    result = _invoke(_cli_run(study, fake_claude, output, "--attempt-budget-usd", "0.10"), {"STUDY_BUDGET_USD": "0.2"})
    assert result.exit_code == 0, result.output
    ledger = json.loads(output.read_text(encoding="utf-8"))
    assert ledger["budget"]["cap"] == 0.2 and ledger["cli"]["attemptBudgetUsd"] == 0.1
    assert len(ledger["observations"]) == 2


# -- minimal, http transport -----------------------------------------------------------------------------------


def _http_run(study: ExampleStudy, output: Path, *extra: str) -> list[str]:
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "http", "--rehearsal",
            *_roots(study), "--output", str(output), "--model", MODEL, *extra]


PRICES = {"STUDY_INPUT_USD_PER_MILLION": "1", "STUDY_OUTPUT_USD_PER_MILLION": "5"}


@pytest.mark.parametrize(("env", "reason"), [
    ({**PRICES, "STUDY_BUDGET_USD": "1e309"}, "the cumulative cap"),
    ({**PRICES, "STUDY_BUDGET_USD": "1", "STUDY_INPUT_USD_PER_MILLION": "1e309"}, "the input price"),
    ({**PRICES, "STUDY_BUDGET_USD": "1", "STUDY_OUTPUT_USD_PER_MILLION": "1e309"}, "the output price"),
    ({**PRICES, "STUDY_BUDGET_USD": "1", "STUDY_INPUT_USD_PER_MILLION": "1_0"}, "plain decimal"),
    ({**PRICES, "STUDY_BUDGET_USD": "1", "STUDY_OUTPUT_USD_PER_MILLION": "٥"}, "plain decimal"),
    ({**PRICES, "STUDY_BUDGET_USD": "0.000001"}, "cannot hold the reservation of the first request"),
])
def test_http_money_is_refused_before_the_ledger_exists(
    tmp_path: Path, study: ExampleStudy, env: dict[str, str | None], reason: str
) -> None:
    output = tmp_path / "ledger.json"
    _refused(_invoke(_http_run(study, output), env), reason, output)


def test_an_http_cap_that_holds_the_first_request_runs(tmp_path: Path, study: ExampleStudy) -> None:
    output = tmp_path / "ledger.json"
    result = _invoke(_http_run(study, output), {**PRICES, "STUDY_BUDGET_USD": "1"})
    assert result.exit_code == 0, result.output
    assert json.loads(output.read_text(encoding="utf-8"))["budget"]["cap"] == 1.0


# -- adjudicate ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("env", "flags", "reason"), [
    ({"ADJUDICATOR_BUDGET_USD": "1e309"}, [], "the adjudication cap"),
    ({"ADJUDICATOR_BUDGET_USD": "1"}, ["--item-budget-usd", "1e309"], "--item-budget-usd"),
    ({"ADJUDICATOR_BUDGET_USD": "1"}, ["--item-budget-usd", "0.0000001"], "at least 0.000001"),
    ({"ADJUDICATOR_BUDGET_USD": "0.05"}, ["--item-budget-usd", "0.10"], "above the adjudication cap"),
    ({"ADJUDICATOR_BUDGET_USD": "1_0"}, [], "plain decimal"),
    ({"ADJUDICATOR_BUDGET_USD": "١"}, [], "plain decimal"),
])
def test_adjudication_money_is_refused_before_the_companion_exists(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude, env: dict[str, str | None], flags: list[str],
    reason: str,
) -> None:
    answer = "Deadlines use time.monotonic (src/lantern/cache.py:29)."
    ledger = write_ledger(tmp_path / "ledger.json", study, [
        observation("lantern-discovery", "repository-only", answer),
        observation("lantern-discovery", "doc-bridge-mcp", answer),
    ])
    companion = tmp_path / "ledger.adjudication.json"
    args = ["adjudicate", str(ledger), "--manifest", str(study.manifest_path), *_roots(study), "--approve-budget",
            "--claude-bin", str(fake_claude.path), "--model", MODEL, *flags]
    _refused(_invoke(args, env), reason, companion)
    assert fake_claude.calls == []


# -- transcript ------------------------------------------------------------------------------------------------


def test_transcript_reservation_is_parsed_the_same_way(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type": "result"}\n', encoding="utf-8")
    for raw in ("1e309", "1_0", "١"):
        result = _invoke(["transcript", str(transcript), "--scenario", "repository-only", "--model", MODEL,
                          "--reservation-usd", raw, "--json"], {})
        _refused(result, "--reservation-usd")
