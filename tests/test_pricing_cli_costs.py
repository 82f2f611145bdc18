"""Our list-price cost against Claude Code 2.1.296's own ``total_cost_usd`` (seed 000 "Cost").

Two sources: every real transcript in ``../shared/transcripts/claude-code-2.1.296/`` (none has
cache tokens or a model other than claude-haiku-4-5), and probes of the real CLI 2.1.296 run on
2026-11-30 against a local fake Messages API that reported the usages below (one API message
per entry). Where the seed's rules and the CLI differ, the tests pin the exact difference:

1. Writes without a TTL split: the CLI prices ``cacheCreation - 1h`` at the 5-minute rate
   (1.25 x input); the seed prices unattributed writes at the 1-hour rate (2 x).
2. Tier: the CLI tiers each API message on its own prompt; the seed puts every token of the
   attempt in tier 2 once any single prompt exceeds 100,000 tokens.
3. claude-sonnet-5-5 cache reads: the CLI charges 0.05 x input (0.10 USD per million); the
   seed's rule is 0.1 x input. (claude-haiku-4-5 and claude-haiku-5-5 reads are 0.1 x in both.)

Every difference makes our cost the larger, so a completed attempt is charged ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from agentstudy.pricing.cost import CacheWrites, ModelTokens, compute_cost, parse_model_usage
from agentstudy.pricing.table import CLI_PRICES
from agentstudy.stream.transcript import parse_transcript

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
TOLERANCE = Decimal("1e-9")


def _split(result: Mapping[str, Any]) -> CacheWrites:
    creation = result.get("usage", {}).get("cache_creation") or {}
    return CacheWrites(creation.get("ephemeral_5m_input_tokens", 0), creation.get("ephemeral_1h_input_tokens", 0))


def _priced_transcripts() -> list[tuple[str, Decimal, Decimal]]:
    if not TRANSCRIPTS.is_dir():
        pytest.fail(f"transcripts missing: {TRANSCRIPTS}")
    rows = []
    for path in sorted(TRANSCRIPTS.glob("*.stdout.jsonl")):
        transcript = parse_transcript(path.read_text(encoding="utf-8").splitlines())
        result = transcript.result
        if result is None or not isinstance(result.get("modelUsage"), dict):
            continue
        totals = parse_model_usage(result["modelUsage"])
        if not set(totals) <= set(CLI_PRICES):
            continue
        computed = compute_cost(totals, _split(result), list(transcript.message_prompts.values())).usd
        rows.append((path.name, Decimal(str(result["total_cost_usd"])), computed))
    return rows


def test_every_priceable_transcript_matches_the_cli_cost_to_a_nanodollar() -> None:
    rows = _priced_transcripts()
    # 23 transcripts have a result: 19 with claude-haiku-4-5 usage, 4 with an empty modelUsage.
    assert len(rows) >= 23
    assert sum(1 for _, reported, _ in rows if reported > 0) >= 19
    mismatches = [(name, cli, ours) for name, cli, ours in rows if abs(cli - ours) > TOLERANCE]
    assert mismatches == []


def test_the_budget_exceeded_transcript_prices_model_usage_not_the_zeroed_usage() -> None:
    lines = (TRANSCRIPTS / "10-budget-exceeded.stdout.jsonl").read_text(encoding="utf-8").splitlines()
    result = parse_transcript(lines).result
    assert result is not None and result["subtype"] == "error_max_budget_usd"
    assert result["usage"]["input_tokens"] == 0
    # 5,000,000 x 1 + 1,000,000 x 5 per million = 10 USD, the CLI's own figure.
    cost = compute_cost(parse_model_usage(result["modelUsage"]), _split(result), [])
    assert cost.usd == Decimal(10) == Decimal(str(result["total_cost_usd"]))


# --------------------------------------------------------------------------- probes of the real CLI

SMALL = {"input_tokens": 2000, "output_tokens": 100}
BIG = {"input_tokens": 150000, "output_tokens": 1000}
EDGE = {"input_tokens": 100000, "output_tokens": 1000}
EDGE1 = {"input_tokens": 100001, "output_tokens": 1000}
BIG_READ = {"input_tokens": 1000, "output_tokens": 1000, "cache_read_input_tokens": 150000}
READ = {"input_tokens": 1000, "output_tokens": 0, "cache_read_input_tokens": 10000}
CACHE = {
    "input_tokens": 1000,
    "output_tokens": 200,
    "cache_read_input_tokens": 3000,
    "cache_creation_input_tokens": 4000,
}
SPLIT = {**CACHE, "split": (1000, 2000)}
ALL_5M = {**CACHE, "split": (4000, 0)}
W5 = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 10000, "split": (10000, 0)}
W1 = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 10000, "split": (0, 10000)}

# (probe, model, API messages, the CLI's total_cost_usd, our cost minus the CLI's in USD)
PROBES: list[tuple[str, str, list[dict[str, Any]], float, str]] = [
    ("haiku45-cache-split", "claude-haiku-4-5", [SPLIT], 0.0088, "0.00075"),
    ("haiku45-cache-nosplit", "claude-haiku-4-5", [CACHE], 0.0073, "0.003"),
    ("haiku45-cache-5m-only", "claude-haiku-4-5", [ALL_5M], 0.0073, "0"),
    ("haiku45-read-only", "claude-haiku-4-5", [READ], 0.002, "0"),
    ("haiku45-big-150k", "claude-haiku-4-5", [BIG], 0.155, "0"),
    ("haiku45-two-messages-cache", "claude-haiku-4-5", [SPLIT, CACHE], 0.0161, "0.00375"),
    ("sonnet55-cache-split", "claude-sonnet-5-5", [SPLIT], 0.017300000000000003, "0.0018"),
    ("sonnet55-cache-nosplit", "claude-sonnet-5-5", [CACHE], 0.0143, "0.0063"),
    ("sonnet55-read-only", "claude-sonnet-5-5", [READ], 0.003, "0.001"),
    ("sonnet55-write5m-only", "claude-sonnet-5-5", [W5], 0.025, "0"),
    ("sonnet55-write1h-only", "claude-sonnet-5-5", [W1], 0.04, "0"),
    ("sonnet55-big-150k", "claude-sonnet-5-5", [BIG], 0.31, "0"),
    ("haiku55-small", "claude-haiku-5-5", [SMALL], 0.00025, "0"),
    ("haiku55-read-only", "claude-haiku-5-5", [READ], 0.0002, "0"),
    ("haiku55-cache-split", "claude-haiku-5-5", [SPLIT], 0.0008799999999999999, "0.000075"),
    ("haiku55-big-150k", "claude-haiku-5-5", [BIG], 0.0775, "0"),
    ("haiku55-edge-100000", "claude-haiku-5-5", [EDGE], 0.010500000000000002, "0"),
    ("haiku55-edge-100001", "claude-haiku-5-5", [EDGE1], 0.052500500000000005, "0"),
    ("haiku55-bigcache-read", "claude-haiku-5-5", [BIG_READ], 0.010499999999999999, "0"),
    ("haiku55-two-messages-big-then-small", "claude-haiku-5-5", [BIG, SMALL], 0.07775, "0.001"),
]


PROMPT_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _field(message: Mapping[str, Any], key: str) -> int:
    return int(message.get(key, 0))


def _cli_rule(model: str, messages: list[dict[str, Any]]) -> Fraction:
    """The CLI's observed pricing: per message, own tier, ``creation - 1h`` at 1.25 x, sonnet reads at 0.05 x."""
    price = CLI_PRICES[model]
    total = Fraction(0)
    for message in messages:
        prompt = sum(_field(message, k) for k in PROMPT_KEYS)
        tier = price.tiers[price.tier_index(prompt)]
        rate_in, rate_out = Fraction(tier.input), Fraction(tier.output)
        read_rate = rate_in / 20 if model == "claude-sonnet-5-5" else rate_in / 10
        one_hour = message.get("split", (0, 0))[1]
        total += (
            _field(message, "input_tokens") * rate_in
            + _field(message, "output_tokens") * rate_out
            + _field(message, "cache_read_input_tokens") * read_rate
            + (_field(message, "cache_creation_input_tokens") - one_hour) * rate_in * Fraction(5, 4)
            + one_hour * rate_in * 2
        ) / 1_000_000
    return total


@pytest.mark.parametrize(("probe", "model", "messages", "reported", "difference"), PROBES, ids=[p[0] for p in PROBES])
def test_cli_probe(probe: str, model: str, messages: list[dict[str, Any]], reported: float, difference: str) -> None:
    # What the runner reads: modelUsage totals, the result's summed TTL split, per-message prompts.
    keys = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    totals = ModelTokens(*(sum(_field(m, k) for m in messages) for k in keys))
    writes = CacheWrites(*(sum(m.get("split", (0, 0))[i] for m in messages) for i in (0, 1)))
    prompts = [sum(_field(m, k) for k in PROMPT_KEYS) for m in messages]
    ours = compute_cost({model: totals}, writes, prompts).usd
    cli = Decimal(str(reported))
    # Our reading of the CLI's rule reproduces every measured cost.
    assert abs(Fraction(cli) - _cli_rule(model, messages)) <= Fraction(1, 10**9)
    # Our cost is the CLI's, or larger by exactly the documented difference.
    assert abs(ours - cli - Decimal(difference)) <= TOLERANCE
    assert ours + TOLERANCE >= cli

