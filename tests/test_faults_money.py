"""Money under faults (round 3): a Codex whose running usage goes backwards, counts a reader would refuse,
a 99-digit token count. Each fake is the real pinned binary for ``--version`` / ``features`` and a bash
script for ``exec`` (restricted containment, as every fake's test)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.pricing.sums import display_usd
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger_bytes
from agentstudy.stream.codex import parse_codex_stream
from agentstudy.transports.codex import UsageWatch
from codex_fakes import HEAD, example_study, fake_codex_stream, run_codex_study, usage_line


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    return example_study(tmp_path_factory.mktemp("faults-money"))


@pytest.fixture(scope="module")
def healthy(study: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The ledger of a one-attempt run of a fake codex with a plain usage."""
    directory = tmp_path_factory.mktemp("healthy")
    return run_codex_study(study, fake_codex_stream(directory, [usage_line(654, 126)]), directory / "ledger.json")


@pytest.mark.parametrize("pause", [False, True], ids=["one-chunk", "paused"])
def test_usage_that_goes_backwards_is_charged_its_largest_running_cost(
        study: tuple[Path, list[str]], tmp_path: Path, pause: bool) -> None:
    # 5e9 in / 1e9 out (1,000 USD at the rehearsal row's 0.10 / 0.50 USD per million), then 10 / 1: the
    # observation kept the last usage and was charged 0.10 USD (its reservation) while the watcher saw 1,000.
    fake = fake_codex_stream(tmp_path, [usage_line(5_000_000_000, 1_000_000_000), usage_line(10, 1)], pause=pause)
    ledger = run_codex_study(study, fake, tmp_path / "ledger.json")
    assert verify_ledger_bytes((tmp_path / "ledger.json").read_bytes()).verified
    observations = ledger["observations"]
    assert isinstance(observations, list) and len(observations) == 1
    first = observations[0]
    assert first["chargedUsd"] >= 1000, first
    assert first["computedCostUsd"] >= 1000
    assert first["status"] != "completed"
    budget = ledger["budget"]
    assert isinstance(budget, dict)
    assert budget["cumulativeCapExceeded"] is True and budget["spent"] >= 1000


def test_the_watcher_keeps_the_largest_running_cost() -> None:
    watch = UsageWatch("rehearsal-scripted", Decimal(10_000))
    assert watch((usage_line(5_000_000_000, 1_000_000_000) + "\n").encode()) is None
    assert watch((usage_line(10, 1) + "\n").encode()) is None
    assert watch.peak_usd == Decimal(1000)


def test_cached_above_input_is_a_usage_problem_never_a_negative_count(
        study: tuple[Path, list[str]], tmp_path: Path) -> None:
    # cached_input_tokens 1e9 above input_tokens 10: the runner wrote inputTokens -999999990, which
    # `agentstudy ledger` verified while `report` and `power` refused it.
    fake = fake_codex_stream(tmp_path, [usage_line(10, 1, cached=1_000_000_000)])
    output = tmp_path / "ledger.json"
    ledger = run_codex_study(study, fake, output)
    first = ledger["observations"][0]  # type: ignore[index]
    assert first["inputTokens"] is None and first["usageComplete"] is False
    assert "more cached and cache-write input tokens than input tokens" in first["setupProblem"]
    for command in (["ledger", str(output)], ["report", str(output)], ["power", str(output)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 0, (command, result.output)


def test_a_99_digit_token_count_is_a_usage_problem_and_nothing_raises(
        study: tuple[Path, list[str]], tmp_path: Path) -> None:
    huge = "9" * 99
    fake = fake_codex_stream(tmp_path, [usage_line(huge, 1)])
    output = tmp_path / "ledger.json"
    ledger = run_codex_study(study, fake, output)
    first = ledger["observations"][0]  # type: ignore[index]
    assert "input_tokens is not a token count in [0, 10**15]" in first["setupProblem"]
    result = CliRunner().invoke(main, ["ledger", str(output)])
    assert result.exit_code == 0 and result.exception is None, result.output
    assert display_usd(Decimal("4" * 99 + ".1234567")) == "4" * 99 + ".123457"  # raised InvalidOperation


@pytest.mark.parametrize("value", [-5, 10**30, 1e30, 5.0, True])
def test_every_reader_refuses_a_resealed_ledger_with_a_bad_token_count(
        healthy: dict[str, object], tmp_path: Path, value: object) -> None:
    document = json.loads(json.dumps(healthy))
    document["observations"][0]["inputTokens"] = value  # type: ignore[index]
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(seal_ledger(document)))
    for command in (["ledger", str(forged)], ["report", str(forged)], ["power", str(forged)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, (command, value, result.output)
        assert "inputTokens" in result.output, (command, result.output)


def test_a_stream_reader_refuses_counts_outside_the_bound() -> None:
    lines = [*HEAD, usage_line(-1, 1)]
    assert parse_codex_stream(lines).usage is None
    assert parse_codex_stream([*HEAD, usage_line(10**16, 1)]).usage is None
    backwards = parse_codex_stream([*HEAD, usage_line(100, 10), usage_line(10, 1)])
    assert any("went backwards" in p for p in backwards.grammar_problems)
    assert len(backwards.usages) == 2
