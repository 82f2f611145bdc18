"""OpenAI rates from genai-prices' bundled snapshot (issue 21 item 4): the standard tier, tiers chosen by the
thread's total input, reasoning at the output rate, cached input at its own rate, our rehearsal row, and an
unpriced Codex ``--model`` refused before anything starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from genai_prices import Usage, calc_price

from agentstudy.cli import main
from agentstudy.pricing.cost import CostProblem
from agentstudy.pricing.openai import (
    OWN_OPENAI_PRICES,
    REHEARSAL_ROW_SOURCE,
    TIER_RULE,
    OpenAiPrice,
    OpenAiRates,
    OpenAiUsage,
    openai_cost,
    openai_price,
    openai_price_entry,
)
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

MTOK = 1_000_000


def _usage(input_tokens: int, cached: int = 0, output: int = 0, reasoning: int = 0, writes: int = 0) -> OpenAiUsage:
    return OpenAiUsage(input_tokens, cached, writes, output, reasoning)


def test_gpt_5_5_is_priced_from_the_snapshot_standard_tier() -> None:
    price = openai_price("gpt-5.5")
    assert price.thresholds == (272_000,)
    [base, long_context] = price.tiers
    assert base == OpenAiRates(Decimal(5), Decimal("0.5"), Decimal(5), Decimal(30), Decimal(30))
    assert long_context == OpenAiRates(Decimal(10), Decimal(1), Decimal(10), Decimal(45), Decimal(45))
    assert price.source.startswith("genai-prices 0.2.3 bundled snapshot, provider openai, model gpt-5.5, standard")
    assert "verified on 2026-10-12" in price.source  # the row's price_comments: where and when OpenAI's page was read
    # Codex's ids of the same model (the catalog's gpt-5.5, -codex, dated) share the row; batch/flex/priority do not
    # enter: flex would be 2.5 input, priority 12.5.
    assert openai_price("gpt-5.5-codex") == price and openai_price("gpt-5.5-2026-04-23") == price
    cost = openai_cost("gpt-5.5", _usage(100_000, output=10_000))
    assert cost.usd == Decimal("0.5") + Decimal("0.3")
    assert cost.basis["models"]["gpt-5.5"]["priceSource"] == price.source


def test_the_tier_is_chosen_by_the_total_input_strictly_above_the_threshold() -> None:
    at = openai_cost("gpt-5.5", _usage(272_000, output=1_000))
    above = openai_cost("gpt-5.5", _usage(272_001, output=1_000))
    assert at.usd == Decimal("1.36") + Decimal("0.03")  # 272k x 5 + 1k x 30
    assert above.usd == Decimal("2.72001") + Decimal("0.045")  # every token at 10 / 45
    assert (at.basis["tier"], above.basis["tier"]) == (1, 2)
    assert above.basis["tierSource"] == "aggregate" and above.basis["largestPromptTokens"] == 272_001
    assert above.basis["tierThresholdTokens"] == 272_000 and above.basis["tierRule"] == TIER_RULE
    assert above.basis["models"]["gpt-5.5"]["inputUsdPerMillion"] == 10


def test_reasoning_is_priced_at_the_output_rate_and_cached_input_at_its_own() -> None:
    plain = openai_cost("gpt-5.5", _usage(0, output=200_000))
    reasoning = openai_cost("gpt-5.5", _usage(0, output=200_000, reasoning=150_000))
    assert plain.usd == reasoning.usd == Decimal(6)
    assert reasoning.basis["models"]["gpt-5.5"]["reasoningOutputUsdPerMillion"] == 30
    cached = openai_cost("gpt-5.5", _usage(200_000, cached=150_000))
    assert cached.usd == Decimal("0.25") + Decimal("0.075")  # 50k uncached x 5 + 150k cached x 0.5
    writes = openai_cost("gpt-5.5", _usage(200_000, writes=50_000))
    assert writes.usd == Decimal(1)  # no write rate in the row: writes billed as input


@pytest.mark.parametrize(("model", "usage"), [
    ("gpt-5.5", _usage(100_000, cached=30_000, output=5_000, reasoning=2_000)),
    ("gpt-5.5", _usage(400_000, cached=300_000, output=20_000, reasoning=9_000)),
    ("gpt-5", _usage(1_000_000, cached=400_000, output=200_000, reasoning=50_000)),
    ("gpt-5-mini", _usage(12_345, cached=2_345, output=678)),
])
def test_our_arithmetic_agrees_with_the_library_at_the_standard_tier(model: str, usage: OpenAiUsage) -> None:
    ours = openai_cost(model, usage).usd
    theirs = calc_price(Usage(input_tokens=usage.input_tokens, cache_read_tokens=usage.cached_input_tokens,
                              output_tokens=usage.output_tokens), model, provider_id="openai").total_price
    assert ours == theirs


def test_an_unknown_model_is_a_cost_problem_never_a_guess() -> None:
    with pytest.raises(CostProblem, match=r"no OpenAI price for model 'gpt-99' \(genai-prices 0.2.3 does not know"):
        openai_cost("gpt-99", _usage(10, output=1))
    assert openai_price_entry("gpt-99") is None
    assert openai_price_entry("claude-haiku-5-5") is None  # another provider's model is not OpenAI's price


def test_the_rehearsal_row_is_ours_and_unchanged() -> None:
    row = OWN_OPENAI_PRICES["rehearsal-scripted"]
    assert row == OpenAiPrice(
        tiers=(OpenAiRates(Decimal("0.10"), Decimal("0.01"), Decimal("0.10"), Decimal("0.50"), Decimal("0.50")),),
        thresholds=(), source=REHEARSAL_ROW_SOURCE)
    assert openai_price("rehearsal-scripted") is row
    entry = openai_price_entry("rehearsal-scripted")
    assert entry is not None and entry["source"].startswith("nominal rehearsal price")
    assert entry["tiers"] == [{"input": 0.1, "cachedInput": 0.01, "cacheWriteInput": 0.1, "output": 0.5,
                               "reasoningOutput": 0.5}] and entry["tierThresholdTokens"] is None
    assert openai_cost("rehearsal-scripted", _usage(1_000_000, output=1_000_000)).usd == Decimal("0.6")


def test_a_price_row_whose_higher_tier_is_cheaper_is_refused() -> None:
    cheap, dear = (OpenAiRates(*(Decimal(n),) * 5) for n in (1, 2))
    with pytest.raises(ValueError, match="a higher tier must not be cheaper"):
        OpenAiPrice(tiers=(dear, cheap), thresholds=(10,), source="test")
    with pytest.raises(ValueError, match="one tier more than thresholds"):
        OpenAiPrice(tiers=(cheap,), thresholds=(10,), source="test")


def test_the_library_is_imported_only_when_a_library_row_is_priced() -> None:
    script = ("import sys\n"
              "import agentstudy.cli, agentstudy.agents.codex, agentstudy.transports.codex\n"
              "from agentstudy.pricing.openai import openai_cost, OpenAiUsage\n"
              "openai_cost('rehearsal-scripted', OpenAiUsage(1, 0, 0, 1, 0))\n"
              "print('genai_prices' in sys.modules)\n"
              "openai_cost('gpt-5.5', OpenAiUsage(1, 0, 0, 1, 0))\n"
              "print('genai_prices' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("openai-prices") / "study")


def _minimal(study: ExampleStudy, *flags: str) -> tuple[int, str]:
    roots = [arg for name, root in study.roots.items() for arg in ("--root", f"{name}={root}")]
    args = ["minimal", "--manifest", str(study.manifest_path), "--transport", "cli", "--agent", "codex", *flags, *roots]
    env = {**os.environ, "AGENTSTUDY_CONTAINMENT": "restricted", "STUDY_BUDGET_USD": None, "STUDY_MODEL": None}
    result = CliRunner().invoke(main, args, env=env)
    return result.exit_code, result.output


@pytest.mark.parametrize("run", [("--dry-run",), ("--rehearsal", "--pilot", "--budget-usd", "1")])
def test_an_unpriced_codex_model_is_refused_before_anything_starts(study: ExampleStudy, tmp_path: Path,
                                                                   run: tuple[str, ...]) -> None:
    ledger = tmp_path / "ledger.json"
    code, output = _minimal(study, *run, "--model", "gpt-99", "--output", str(ledger))
    assert code == 2, output
    assert output.strip().splitlines() == [
        "agentstudy: error: --model gpt-99 has no price for codex, and Codex CLI reports no cost of its own: the "
        "per-attempt limit could not be metered (prices: docs/codex.md, Money)"]
    assert not ledger.exists()


def test_a_priced_codex_model_passes_the_dry_run(study: ExampleStudy) -> None:
    code, output = _minimal(study, "--dry-run", "--model", "gpt-5.5")
    assert code == 0, output
    assert json.loads(output)["agent"] == "codex"


def test_strict_cap_is_refused_for_an_agent_a_worst_case_turn_cannot_bound(study: ExampleStudy) -> None:
    code, output = _minimal(study, "--dry-run", "--model", "gpt-5.5", "--strict-cap")
    assert code == 2, output
    assert output.strip().splitlines() == [
        "agentstudy: error: --strict-cap bounds an attempt by one worst-case turn after the agent's own limit "
        "check; Codex CLI is stopped at the limit by its running usage instead"]
