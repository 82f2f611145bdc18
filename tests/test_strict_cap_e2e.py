"""``agentstudy minimal --strict-cap`` end to end against the fake ``claude`` (issue 19, item 1).

Claude Code checks ``--max-budget-usd`` only after a turn, so an attempt can be charged more than
its limit (measured: 0.0015186 against 0.0015). With four attempts in flight under the seed's rule
those overshoots pass the cap, and the ledger says by how much; under ``--strict-cap`` every
attempt reserves its limit plus one worst-case turn (claude-haiku-5-5: 1.32 USD), so spent <= cap
even when every attempt overshoots by a whole worst turn.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger, verify_ledger_bytes
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.schemas import json_schema
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from fakes import FakeClaude

LIMIT = "0.0015"
OVERSHOT = 0.0015186  # what Claude Code 2.1.296 was measured to charge against a 0.0015 limit
SIX = ("--pilot", "--pilot-repetitions", "3")
"""Six attempts on one corpus (the first task's pilot, three repetitions): more than the four a cap admits, with
one MCP server and one probe in the preflight where the full schedule's three corpora start three of each."""


def _args(study: ExampleStudy, fake: FakeClaude, ledger: Path, *flags: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--transport", "cli", "--approve-budget", *roots,
            "--output", str(ledger), "--claude-bin", str(fake.path), "--model", "claude-haiku-5-5",
            "--attempt-budget-usd", LIMIT, *flags]


def _run(study: ExampleStudy, fake: FakeClaude, ledger: Path, *flags: str) -> Any:
    return CliRunner().invoke(main, _args(study, fake, ledger, *flags), catch_exceptions=False)


def _verified(path: Path) -> tuple[MinimalLedger, dict[str, Any]]:
    data = path.read_bytes()
    assert verify_ledger_bytes(data).problems == ()
    document = json.loads(data)
    jsonschema.validate(document, json_schema("ledger"))
    return MinimalLedger.model_validate(document), document


def _attempts(fake: FakeClaude) -> list[list[str]]:
    return [call for call in fake.calls if call != ["--version"]]


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def test_without_strict_cap_four_overshoots_pass_the_cap_and_the_ledger_says_so(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path
) -> None:
    fake_claude.behave(mode="sleep", sleepSeconds=1.5, reportedCost=OVERSHOT)
    path = tmp_path / "ledger.json"
    result = _run(study, fake_claude, path, *SIX, "--concurrency", "4", "--budget-usd", "0.006")
    assert result.exit_code != 0, result.output
    ledger, document = _verified(path)
    assert len(_attempts(fake_claude)) == 4  # four limits fit the cap exactly, so four were in flight
    assert document["budget"]["reservationRule"] == "limit" and "worstTurnUsd" not in document["budget"]
    assert [o.reserved_usd for o in ledger.observations] == [0.0015] * 4
    assert Decimal(repr(ledger.budget.spent)) == 4 * Decimal(repr(OVERSHOT))  # 0.0060744 > 0.006
    assert ledger.budget.cumulative_cap_exceeded
    assert ledger.budget.largest_overshoot_usd == 0.0000186
    assert {o.status for o in ledger.observations} == {"budget-exceeded"}


def test_with_strict_cap_spent_stays_under_the_cap_when_every_attempt_overshoots_by_a_worst_turn(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path
) -> None:
    worst = Decimal("1.32")  # claude-haiku-5-5: 1,000,000 x 1.00 / 1e6 + 128,000 x 2.50 / 1e6
    reservation = Decimal(LIMIT) + worst
    fake_claude.behave(mode="sleep", sleepSeconds=1.5, reportedCost=float(reservation))  # limit + a whole turn
    path = tmp_path / "ledger.json"
    cap = 4 * reservation
    result = _run(study, fake_claude, path, *SIX, "--concurrency", "4", "--budget-usd", str(cap),
                  "--strict-cap")
    assert result.exit_code != 0, result.output  # blocked: an attempt over its limit stops admission
    ledger, document = _verified(path)
    attempts = _attempts(fake_claude)
    assert len(attempts) == 4
    assert all(call[call.index("--max-budget-usd") + 1] == "0.001500" for call in attempts)  # Claude gets the limit
    assert document["budget"]["reservationRule"] == "limit-plus-worst-turn"
    assert document["budget"]["worstTurnUsd"] == 1.32
    assert [Decimal(repr(o.reserved_usd)) for o in ledger.observations] == [reservation] * 4
    spent = Decimal(repr(ledger.budget.spent))
    assert spent == cap and spent <= Decimal(repr(ledger.budget.cap))
    assert not ledger.budget.cumulative_cap_exceeded
    assert ledger.budget.largest_overshoot_usd == 1.32
    assert {o.status for o in ledger.observations} == {"budget-exceeded"}
    assert ledger.status == "blocked"
    report = CliRunner().invoke(main, ["report", str(path), "--format", "json"])
    assert report.exit_code == 0, report.output
    spend = json.loads(report.output)["spend"]
    assert (spend["reservationRule"], spend["worstTurnUsd"], spend["largestOvershootUsd"]) == (
        "limit-plus-worst-turn", 1.32, 1.32)
    text = CliRunner().invoke(main, ["report", str(path), "--format", "md"]).output
    assert "limit-plus-worst-turn (--strict-cap)" in text and "largest overshoot" in text


def test_strict_cap_sequential_run_records_no_overshoot_when_none_happened(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path
) -> None:
    path = tmp_path / "ledger.json"
    result = _run(study, fake_claude, path, "--pilot", "--budget-usd", "3", "--strict-cap")
    assert result.exit_code == 0, result.output
    ledger, document = _verified(path)
    assert document["budget"]["largestOvershootUsd"] is None
    assert [o.status for o in ledger.observations] == ["completed", "completed"]
    assert "limit-plus-worst-turn" in result.output  # the summary names the rule
    shown = CliRunner().invoke(main, ["ledger", str(path)])
    assert shown.exit_code == 0, shown.output
    assert ("limit-plus-worst-turn (worst turn 1.320000 USD); largest overshoot of the per-attempt limit: none"
            in shown.output)


def test_the_verifier_holds_the_rule_and_the_overshoot_to_the_observations(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path
) -> None:
    fake_claude.behave(mode="ok", reportedCost=OVERSHOT)
    path = tmp_path / "ledger.json"
    _run(study, fake_claude, path, "--pilot", "--budget-usd", "1")
    _, document = _verified(path)

    def problems(**budget: Any) -> tuple[str, ...]:
        changed = json.loads(json.dumps(document))
        changed["budget"].update(budget)
        for key in [k for k, v in budget.items() if v is ...]:
            del changed["budget"][key]
        return verify_ledger(seal_ledger({k: v for k, v in changed.items() if k != "ledgerHash"})).problems

    assert problems() == ()
    assert any("largestOvershootUsd" in p for p in problems(largestOvershootUsd=0.00001))
    assert any("largestOvershootUsd" in p for p in problems(largestOvershootUsd=None))
    assert any("reservation" in p for p in problems(reservationRule="limit-plus-worst-turn", worstTurnUsd=1.32))
    assert any("worstTurnUsd" in p for p in problems(worstTurnUsd=1.32))
    assert any("per-call-ceiling" in p for p in problems(reservationRule="per-call-ceiling"))
    assert any("without budget.reservationRule" in p
               for p in problems(reservationRule=..., worstTurnUsd=...))
    old = problems(reservationRule=..., largestOvershootUsd=...)  # a ledger from before the rule existed
    assert old == ()


@pytest.mark.parametrize(("flags", "message"), [
    (("--model", "claude-unknown-9", "--budget-usd", "5"), "--strict-cap needs prices for model 'claude-unknown-9'"),
    (("--budget-usd", "1"), "is below one --strict-cap reservation of 1.321500 USD"),
])
def test_strict_cap_bad_input_is_one_line_exit_2_nothing_written(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    path = tmp_path / "ledger.json"
    result = CliRunner().invoke(main, [*_args(study, fake_claude, path, "--pilot", "--strict-cap"), *flags])
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert not path.exists() and not _attempts(fake_claude)


def test_dry_run_prints_the_rule_and_the_reservation_per_attempt(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path
) -> None:
    base = ["minimal", "--manifest", str(study.manifest_path), "--transport", "cli", "--dry-run", "--pilot",
            "--claude-bin", str(fake_claude.path), "--model", "claude-haiku-5-5", "--attempt-budget-usd", LIMIT]
    strict = json.loads(CliRunner().invoke(main, [*base, "--strict-cap"]).output)
    assert strict["budget"] == {"reservationRule": "limit-plus-worst-turn", "reservationPerAttemptUsd": 1.3215,
                                "maxBudgetUsdPassedToClaude": 0.0015, "worstTurnUsd": 1.32}
    seed = json.loads(CliRunner().invoke(main, base).output)
    assert seed["budget"] == {"reservationRule": "limit", "reservationPerAttemptUsd": 0.0015,
                              "maxBudgetUsdPassedToClaude": 0.0015}
