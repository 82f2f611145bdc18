"""OpenAI model prices, and the cost of one Codex attempt's usage (issue 21 item 4).

Rates are USD per million tokens. They come from genai-prices' bundled snapshot
(``pricing.genai_rates``: standard tier, imported lazily when a Codex attempt's model is first
priced, never updated over the network); ``OWN_OPENAI_PRICES`` holds the one row that is ours,
the rehearsal's nominal ``rehearsal-scripted``. A model neither knows is a cost problem for the
caller, never a guessed price. Codex's ``turn.completed`` usage follows the Responses API:
``input_tokens`` includes ``cached_input_tokens``, and ``output_tokens`` includes
``reasoning_output_tokens``. Each part is priced at its own rate: uncached input, cached input,
cache-write input, non-reasoning output and reasoning output (OpenAI bills it as output, so its
rate is the output rate unless the row says otherwise).

**Tiers.** A long-context tier applies to every token of a request whose prompt passes the
threshold (``gpt-5.5``: 272,000 input tokens). Codex reports only the thread's total usage, never
each request's prompt, so the tier cannot be chosen by the largest prompt as Claude's is
(``pricing.cost``): it is chosen by the *total* input (``tierSource: "aggregate"``, Claude's word for
the same fallback), which is at least every single prompt — the computed cost is never below the
bill, and may be above it when many short requests add up past the threshold (``TIER_RULE``,
recorded in ``costBasis`` and the ledger's price entry). Codex reports no cost: a ``completed``
attempt is charged this computed cost, any other outcome ``max(reservation, computed)``
(``pricing.budget.settle_attempt``). Exact ``Decimal`` arithmetic throughout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentstudy.pricing.cost import AttemptCost, CostProblem
from agentstudy.pricing.money import exact
from agentstudy.pricing.openai_price import OpenAiPrice, OpenAiRates
from agentstudy.pricing.usd_json import usd_number

__all__ = ["OWN_OPENAI_PRICES", "REHEARSAL_ROW_SOURCE", "TIER_RULE", "OpenAiPrice", "OpenAiRates", "OpenAiUsage",
           "openai_cost", "openai_price", "openai_price_entry"]

TIER_RULE = ("tier chosen by the thread's total input tokens (Codex reports no per-request prompt): "
             "strictly above a threshold prices every token at that tier, never below the bill")


REHEARSAL_ROW_SOURCE = ("nominal rehearsal price (no money moves: the scripted Responses server on 127.0.0.1); "
                        "the first tier of the Claude rehearsal model, cached input at 0.1 x input")

OWN_OPENAI_PRICES: dict[str, OpenAiPrice] = {
    "rehearsal-scripted": OpenAiPrice(
        tiers=(OpenAiRates(Decimal("0.10"), Decimal("0.01"), Decimal("0.10"), Decimal("0.50"), Decimal("0.50")),),
        thresholds=(), source=REHEARSAL_ROW_SOURCE),
}
"""Our own rows, looked up before genai-prices: only the rehearsal's nominal model."""


def openai_price(model: str, own: Mapping[str, OpenAiPrice] = OWN_OPENAI_PRICES, day: str | None = None) -> OpenAiPrice:
    """``model``'s price: its row in ``own``, else genai-prices' bundled snapshot (standard tier) as of
    UTC date ``day`` (``YYYY-MM-DD``; ``None``: today). USD per million tokens.

    Raises:
        CostProblem: neither knows ``model`` (never a guessed price).
    """
    row = own.get(model)
    if row is not None:
        return row
    from agentstudy.pricing.genai_rates import library_price, today  # lazy: the library's data costs ~2 s

    return library_price(model, day or today())


@dataclass(frozen=True)
class OpenAiUsage:
    """Token counts of one attempt as Codex reports them (``turn.completed.usage``, the thread's total).

    ``input_tokens`` includes ``cached_input_tokens``; ``output_tokens`` includes
    ``reasoning_output_tokens``; ``cache_write_input_tokens`` are part of the input too.

    Raises:
        CostProblem: a count that is negative, or a part larger than the total it belongs to.
    """

    input_tokens: int
    cached_input_tokens: int
    cache_write_input_tokens: int
    output_tokens: int
    reasoning_output_tokens: int

    def __post_init__(self) -> None:
        counts = (self.input_tokens, self.cached_input_tokens, self.cache_write_input_tokens, self.output_tokens,
                  self.reasoning_output_tokens)
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in counts):
            raise CostProblem("a Codex usage count is not an integer >= 0")
        if self.cached_input_tokens + self.cache_write_input_tokens > self.input_tokens:
            raise CostProblem("cached and cache-write input tokens exceed input_tokens")
        if self.reasoning_output_tokens > self.output_tokens:
            raise CostProblem("reasoning_output_tokens exceed output_tokens")


def _threshold(price: OpenAiPrice) -> int | None:
    return price.thresholds[0] if price.thresholds else None


def openai_cost(model: str, usage: OpenAiUsage, own: Mapping[str, OpenAiPrice] = OWN_OPENAI_PRICES,
                day: str | None = None) -> AttemptCost:
    """The exact cost (USD) of ``usage`` at ``model``'s rates, with its ``costBasis`` (camelCase JSON).

    ``(input - cached - cache write) x input + cached x cached_input + cache write x
    cache_write_input + (output - reasoning) x output + reasoning x reasoning_output``, divided by
    1e6, at the tier of the total input (``TIER_RULE``). ``costBasis`` records ``tier``,
    ``tierSource`` (``"aggregate"``), ``tierThresholdTokens``, ``largestPromptTokens`` (the total
    input that chose the tier), ``tierRule`` and, under ``models``, the rates, counts and source.

    Raises:
        CostProblem: ``model`` has no price (``openai_price``).
    """
    price = openai_price(model, own, day)
    index = price.tier_index(usage.input_tokens)
    rates = price.tiers[index]
    uncached = usage.input_tokens - usage.cached_input_tokens - usage.cache_write_input_tokens
    plain_output = usage.output_tokens - usage.reasoning_output_tokens
    with exact():
        total = (uncached * rates.input + usage.cached_input_tokens * rates.cached_input
                 + usage.cache_write_input_tokens * rates.cache_write_input + plain_output * rates.output
                 + usage.reasoning_output_tokens * rates.reasoning_output).scaleb(-6)
    basis: dict[str, Any] = {
        "pricing": "openai",
        "tier": index + 1,
        "tierSource": "aggregate",
        "tierThresholdTokens": _threshold(price),
        "largestPromptTokens": usage.input_tokens,
        "tierRule": TIER_RULE,
        "models": {model: {
            "tier": index + 1,
            "inputUsdPerMillion": usd_number(rates.input),
            "cachedInputUsdPerMillion": usd_number(rates.cached_input),
            "cacheWriteInputUsdPerMillion": usd_number(rates.cache_write_input),
            "outputUsdPerMillion": usd_number(rates.output),
            "reasoningOutputUsdPerMillion": usd_number(rates.reasoning_output),
            "inputTokens": usage.input_tokens,
            "cachedInputTokens": usage.cached_input_tokens,
            "cacheWriteInputTokens": usage.cache_write_input_tokens,
            "outputTokens": usage.output_tokens,
            "reasoningOutputTokens": usage.reasoning_output_tokens,
            "priceSource": price.source,
            "usd": usd_number(total),
        }},
    }
    return AttemptCost(usd=total, basis=basis)


def openai_price_entry(model: str, own: Mapping[str, OpenAiPrice] = OWN_OPENAI_PRICES,
                       day: str | None = None) -> dict[str, Any] | None:
    """The ledger's ``cli.prices`` entry for an OpenAI ``model`` (USD per million), ``None`` if unpriced.

    Shape: ``{source, tierThresholdTokens, tierThresholds, tierRule, tiers: [{input, cachedInput,
    cacheWriteInput, output, reasoningOutput}, ...]}``; ``source`` is the provenance (genai-prices
    version, row and its verification comment, or ours for the rehearsal row).
    """
    try:
        price = openai_price(model, own, day)
    except CostProblem:
        return None
    return {
        "source": price.source,
        "tierThresholdTokens": _threshold(price),
        "tierThresholds": list(price.thresholds),
        "tierRule": TIER_RULE,
        "tiers": [{"input": usd_number(t.input), "cachedInput": usd_number(t.cached_input),
                   "cacheWriteInput": usd_number(t.cache_write_input), "output": usd_number(t.output),
                   "reasoningOutput": usd_number(t.reasoning_output)} for t in price.tiers],
    }
