"""--prices: the strict price file, re-pricing stored usage through ``pricing``, and the report's USD helpers."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.pricing.cost import CacheWrites, ModelTokens, compute_cost
from agentstudy.pricing.price_file import PriceFileError, parse_price_file, reprice_as
from agentstudy.pricing.sums import (
    difference_usd,
    display_usd,
    mean_usd,
    median_usd,
    percent_of,
    sum_usd,
    times,
    usd_from_json,
)
from agentstudy.pricing.table import CLI_PRICES
from agentstudy.report.build import build_report
from test_report_builders import TASKS, cli_obs, http_obs, ledger, markdown_tables, write

ATTEMPTS = "Every attempt in execution order (— : not recorded)"


def _prices(**model: Any) -> str:
    entry = {"source": "hand-made test prices", "tiers": [{"input": 3, "output": 15}]} | model
    return json.dumps({"priceAs": "other-model", "models": {"other-model": entry}})


def test_a_valid_file_reads_decimals_exactly() -> None:
    prices = parse_price_file(_prices(tiers=[{"input": 0.1, "output": "0.5"}, {"input": 0.3, "output": 1.5}],
                                      tierThresholdTokens=200000))
    assert prices.price_as == "other-model"
    assert prices.price.tiers[0].input == Decimal("0.1") and prices.price.tiers[0].output == Decimal("0.5")
    assert prices.price.tier_threshold_tokens == 200000


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "not valid JSON"),
    (json.dumps({"models": {}}), "lacks priceAs"),
    (json.dumps({"priceAs": "x", "models": {}, "extra": 1}), "unknown key"),
    (json.dumps({"priceAs": "x", "models": {}}), "non-empty"),
    (_prices().replace('"other-model", "models"', '"absent", "models"'), "priceAs must name"),
    (_prices(tiers=[{"input": -1, "output": 1}]), "finite and >= 0"),
    (_prices(tiers=[{"input": "NaN", "output": 1}]), "finite and >= 0"),
    (_prices(tiers=[{"input": True, "output": 1}]), "must be a number"),
    (_prices(tiers=[{"input": 1}]), "lacks output"),
    (_prices(tiers=[{"input": 1, "output": 1, "cache": 1}]), "unknown key"),
    (_prices(tiers=[]), "one or two tiers"),
    (_prices(tiers=[{"input": 2, "output": 10}, {"input": 1, "output": 10}]), "cheaper"),
    (_prices(tierThresholdTokens=0), "tierThresholdTokens"),
    (_prices(source=" "), "source"),
    (_prices(currency="EUR"), "unknown key"),
    ('{"priceAs": "x", "models": {"x": {"source": "s", "tiers": [{"input": Infinity, "output": 1}]}}}',
     "not valid JSON"),
])
def test_invalid_files_are_refused(text: str, message: str) -> None:
    with pytest.raises(PriceFileError, match=message):
        parse_price_file(text)


def test_repricing_equals_the_cost_module_on_the_same_usage() -> None:
    prices = parse_price_file(_prices())
    totals = {"claude-haiku-5-5": ModelTokens(1000, 100, 500, 200), "claude-haiku-4-5": ModelTokens(10, 1, 0, 0)}
    cost = reprice_as(totals, CacheWrites(), [1700], prices)
    # merged: 1010 in, 101 out, 500 cache read, 200 unattributed writes (1-hour rate 2 x 3)
    assert cost.usd == (Decimal(1010) * 3 + Decimal(101) * 15 + Decimal(500) * Decimal("0.3") + 200 * 6) / 10**6
    same = compute_cost({"m": ModelTokens(1010, 101, 500, 200)}, CacheWrites(), [1700], {"m": prices.price})
    assert cost.usd == same.usd


def test_repricing_under_the_table_of_the_run_gives_back_the_computed_cost(tmp_path: Path) -> None:
    """Priced as the model the run used, every CLI attempt's re-priced cost equals its recorded computed cost."""
    entry = CLI_PRICES["claude-haiku-5-5"]
    text = json.dumps({"priceAs": "claude-haiku-5-5", "models": {"claude-haiku-5-5": {
        "source": entry.source, "tierThresholdTokens": entry.tier_threshold_tokens,
        "tiers": [{"input": str(t.input), "output": str(t.output)} for t in entry.tiers]}}})
    (tmp_path / "prices.json").write_text(text)
    observations = [cli_obs(TASKS[0], "repository-only", 1, input_tokens=150_000, output_tokens=900),
                    cli_obs(TASKS[0], "doc-bridge-mcp", 1, input_tokens=20_000, output_tokens=300)]
    write(tmp_path / "l.json", ledger(observations))
    rows = markdown_tables(build_report(tmp_path / "l.json", prices=tmp_path / "prices.json", output_format="md"))
    assert [r["re-priced USD"] for r in rows[ATTEMPTS]] == [r["charged USD"] for r in rows[ATTEMPTS]]
    assert rows[ATTEMPTS][0]["re-priced USD"] == "0.077250"  # tier 2: 150000 x 0.5 + 900 x 2.5, per million


def test_the_report_shows_repriced_beside_charged(tmp_path: Path) -> None:
    (tmp_path / "prices.json").write_text(_prices(tiers=[{"input": 3, "output": 15}, {"input": 6, "output": 22.5}],
                                                  tierThresholdTokens=1500))
    observations = [cli_obs(TASKS[0], "repository-only", 1, input_tokens=1000, output_tokens=100),
                    http_obs(TASKS[0], "doc-bridge-mcp", 1, input_tokens=2000, output_tokens=200),
                    http_obs(TASKS[1], "doc-bridge-mcp", 1, input_tokens=700, output_tokens=50, status="incomplete",
                             usage_complete=False)]
    write(tmp_path / "l.json", ledger(observations, mode="full"))
    markdown = build_report(tmp_path / "l.json", prices=tmp_path / "prices.json", output_format="md",
                            allow_unverified=True)
    rows = markdown_tables(markdown)
    # 1000 x 3 + 100 x 15 = 4500 -> 0.0045; HTTP 2000 > 1500 -> tier 2: 2000 x 6 + 200 x 22.5 = 16500
    assert [r["re-priced USD"] for r in rows[ATTEMPTS]] == ["0.004500", "0.016500", "0.002850 (lower bound)"]
    summary = {r["metric"]: r for r in rows["Task-level paired differences per metric"]}
    assert (summary["re-priced USD"]["design"], summary["re-priced USD"]["mean task Δ"]) == \
        ("1 task × 1 repetition", "+0.012000")
    usage = {r["arm"]: r for r in rows[
        "Priced usage and spend, all attempts (tokens as recorded, incomplete usage included)"]}
    assert usage["all"]["re-priced USD"] == "0.023850 (includes 1 lower bound(s))"
    table = {r["field"]: r["value"] for r in rows["The --prices table"]}
    assert table["price as"] == "other-model" and table["source"] == "hand-made test prices"


def test_usd_helpers_are_exact() -> None:
    assert usd_from_json(0.0014036) == Decimal("0.0014036")
    assert usd_from_json(1) == Decimal(1)
    for bad in (True, "1", -0.1, float("inf")):
        with pytest.raises(ValueError):
            usd_from_json(bad)
    assert sum_usd([Decimal("0.1"), Decimal("0.2")]) == Decimal("0.3")
    assert difference_usd(Decimal("0.0015189"), Decimal("0.0014036")) == Decimal("0.0001153")
    assert difference_usd(Decimal("0.1"), Decimal("0.3")) == Decimal("-0.2")
    assert times(Decimal("0.0029225"), 18) == Decimal("0.052605")
    assert mean_usd([Decimal("0.1"), Decimal("0.2")]) == Decimal("0.15") and mean_usd([]) is None
    assert median_usd([Decimal(3), Decimal(1), Decimal(2), Decimal(10)]) == Decimal("2.5")
    assert percent_of(Decimal("0.0029225"), Decimal(1)) == Decimal("0.29")
    assert percent_of(Decimal(1), Decimal(0)) is None
    assert display_usd(Decimal("0.0029225")) == "0.002923"
    assert display_usd(Decimal("-0.0000001"), signed=True) == "0.000000"
    assert display_usd(Decimal("-0.0001153"), signed=True) == "-0.000115"
