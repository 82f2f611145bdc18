"""Issue 18, item 6: a rehearsal is free and says so, on both transports, at comparable nominal prices.

The http rehearsal needs no prices: it runs at ``pricing.http.rehearsal_prices`` (the model's
first cli tier), recorded in the ledger as nominal; every rehearsal summary says "rehearsal:
no real money" and its JSON line ``"rehearsal": true``. A cli rehearsal (the real pinned Claude
Code binary) and an http rehearsal of the same pilot are charged at the same rates per token.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.pricing.http import REHEARSAL_PRICES, UpperPrices, rehearsal_prices
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.runners.demo import DEMO_PRICES

MODEL = "claude-haiku-5-5"
RATES = (Decimal("0.10"), Decimal("0.50"))
"""claude-haiku-5-5's first cli tier, USD per million input / output tokens."""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("free") / "study")


def _invoke(args: list[str], claude_bin: Path | None = None) -> Result:
    env = {"ANTHROPIC_API_KEY": None, "STUDY_INPUT_USD_PER_MILLION": None, "STUDY_OUTPUT_USD_PER_MILLION": None,
           "STUDY_BUDGET_USD": None, "STUDY_MODEL": None, "AGENTSTUDY_CONTAINMENT": None,
           "AGENTSTUDY_CLAUDE_BIN": str(claude_bin) if claude_bin else None}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _args(study: ExampleStudy, transport: str, *extra: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--rehearsal", "--transport", transport,
            *roots, "--model", MODEL, "--budget-usd", "1", *extra]


def _rehearse(study: ExampleStudy, transport: str, output: Path, claude_bin: Path | None = None) -> dict[str, Any]:
    result = _invoke(_args(study, transport, "--output", str(output)), claude_bin)
    assert result.exit_code == 0, result.output
    line: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["rehearsal"] is True and line["note"] == "rehearsal: no real money"
    assert line["status"] == "awaiting-adjudication" and line["byStatus"] == {"completed": 2}
    assert "run awaiting-adjudication (rehearsal: no real money)" in result.stderr
    ledger: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
    assert ledger["rehearsal"] is True
    return ledger


def _at_the_rates(observation: dict[str, Any]) -> Decimal:
    tokens_in, tokens_out = Decimal(observation["inputTokens"]), Decimal(observation["outputTokens"])
    return (tokens_in * RATES[0] + tokens_out * RATES[1]) / Decimal(1_000_000)


def test_nominal_prices_are_the_models_first_cli_tier() -> None:
    assert rehearsal_prices(MODEL) == UpperPrices(*RATES) == DEMO_PRICES
    assert rehearsal_prices("some-model-without-a-row") == REHEARSAL_PRICES == UpperPrices(Decimal("0.50"),
                                                                                            Decimal("2.50"))


def test_the_http_rehearsal_needs_no_prices_and_records_them_as_nominal(study: ExampleStudy, tmp_path: Path) -> None:
    ledger = _rehearse(study, "http", tmp_path / "ledger.json")
    assert ledger["prices"] == {"input": 0.1, "output": 0.5, "nominal": True}
    for observation in ledger["observations"]:
        assert Decimal(str(observation["chargedUsd"])) == _at_the_rates(observation)


def test_a_dry_run_of_an_http_rehearsal_checks_the_cap_at_the_nominal_prices(study: ExampleStudy) -> None:
    result = _invoke([arg if arg != "1" else "0.000001" for arg in _args(study, "http", "--dry-run")])
    assert result.exit_code == 2, result.output
    assert "cap" in result.stderr and result.stdout == ""
    assert _invoke(_args(study, "http", "--dry-run")).exit_code == 0


def test_cli_and_http_rehearsals_are_charged_at_the_same_rates(
    study: ExampleStudy, tmp_path: Path, claude_bin: Path
) -> None:
    cli = _rehearse(study, "cli", tmp_path / "cli.json", claude_bin)
    http = _rehearse(study, "http", tmp_path / "http.json")
    for ledger in (cli, http):
        for observation in ledger["observations"]:
            assert observation["inputTokens"] > 0
            assert Decimal(str(observation["chargedUsd"])) == _at_the_rates(observation), ledger["transport"]
    assert cli["cli"]["prices"]["tiers"][0] == {"input": 0.1, "output": 0.5}
