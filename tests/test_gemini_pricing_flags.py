"""Gemini prices and flags: per-request tiers from genai-prices' ``google`` rows, the dry run's refusal of an
unpriced model, ``--strict-cap`` and the http transport refused in one line (exit 2, nothing written)."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.pricing.cost import CostProblem
from agentstudy.pricing.gemini import RequestUsage, gemini_cost, gemini_price, gemini_price_entry
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

DAY = "2026-12-01"


def test_each_request_takes_the_tier_of_its_own_prompt() -> None:
    price = gemini_price("gemini-2.5-pro", day=DAY)
    assert price.thresholds == (200_000,)
    short, long = price.tiers
    requests = [RequestUsage("gemini-2.5-pro", 150_000, 1_000, cached=50_000, thoughts=500),
                RequestUsage("gemini-2.5-pro", 250_000, 2_000, tool=10)]
    cost = gemini_cost(requests, day=DAY)
    expected = ((100_000 * short.input + 50_000 * short.cached_input + 1_500 * short.output)
                + (250_010 * long.input + 2_000 * long.output)) / Decimal(1_000_000)
    assert cost.usd == expected
    # priced as one aggregate prompt (400,000 tokens) every token would take the long tier: dearer
    assert cost.usd < (400_000 * long.input - 50_000 * (long.input - long.cached_input)
                       + 3_500 * long.output) / Decimal(1_000_000)
    basis = cost.basis
    assert basis["tierSource"] == "request" and basis["requests"] == 2 and basis["largestPromptTokens"] == 250_000
    assert set(basis["models"]["gemini-2.5-pro"]["tiers"]) == {"1", "2"}
    assert "provider google" in basis["models"]["gemini-2.5-pro"]["priceSource"]


def test_an_unknown_model_is_a_cost_problem_never_a_guess() -> None:
    with pytest.raises(CostProblem, match="no Google price for model 'gemini-99'"):
        gemini_cost([RequestUsage("gemini-99", 1, 1)], day=DAY)
    assert gemini_price_entry("gemini-99") is None
    with pytest.raises(CostProblem, match="cached tokens exceed"):
        RequestUsage("gemini-2.5-pro", 1, 1, cached=2)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("gemini-flags") / "study")


def _minimal(study: ExampleStudy, tmp_path: Path, *flags: str) -> tuple[int, str, Path]:
    roots = [arg for name, root in study.roots.items() for arg in ("--root", f"{name}={root}")]
    output = tmp_path / "ledger.json"
    args = ["minimal", "--manifest", str(study.manifest_path), "--agent", "gemini", "--output", str(output), *flags,
            *roots]
    env = {**os.environ, "AGENTSTUDY_CONTAINMENT": "restricted", "STUDY_BUDGET_USD": None, "STUDY_MODEL": None}
    result = CliRunner().invoke(main, args, env=env)
    return result.exit_code, result.output, output


@pytest.mark.parametrize(("flags", "message"), [
    (["--transport", "cli", "--dry-run", "--model", "gemini-2.5-pro", "--strict-cap"],
     "--strict-cap bounds an attempt by one worst-case turn after the agent's own limit check; Gemini CLI is "
     "stopped at the limit by its running usage (its session file, read while it runs) instead"),
    (["--transport", "http", "--dry-run", "--model", "gemini-2.5-pro"], "--agent gemini needs --transport cli"),
    (["--transport", "cli", "--dry-run", "--model", "gemini-99"], "gemini-99"),
])
def test_bad_flags_are_one_line_errors(study: ExampleStudy, tmp_path: Path, flags: list[str], message: str) -> None:
    code, output, ledger = _minimal(study, tmp_path, *flags)
    assert code == 2, output
    assert message in output and len(output.strip().splitlines()) == 1
    assert not ledger.exists()


def test_a_priced_gemini_model_passes_the_dry_run(study: ExampleStudy, tmp_path: Path) -> None:
    code, output, _ = _minimal(study, tmp_path, "--transport", "cli", "--dry-run", "--model", "gemini-2.5-pro")
    assert code == 0, output
    assert json.loads(output)["agent"] == "gemini"
