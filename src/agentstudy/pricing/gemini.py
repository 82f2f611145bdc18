"""Gemini model prices, and the cost of one Gemini CLI attempt priced per request (pure but for the lazy
price-library import).

Gemini CLI reports no USD anywhere; its session file records every model response's tokens
(``stream.gemini_records.RequestUsage``). Each request is priced on its own at its model's rates from
genai-prices' bundled snapshot (provider ``google``, standard tier; ``pricing.genai_rates``), so the
long-context tier (``gemini-2.5-pro``: prompts above 200,000 tokens) is chosen by *that request's* prompt,
as Google bills it (``tierSource: "request"``). Per request, USD per million tokens:
``(prompt - cached + tool) x input + cached x cached_input + (candidates + thoughts) x output`` (thoughts are
billed as output). ``OWN_GEMINI_PRICES`` holds the rehearsal's nominal ``rehearsal-scripted`` row. Exact
``Decimal`` arithmetic throughout; a model no table knows is a :class:`CostProblem`, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from agentstudy.pricing.cost import AttemptCost, CostProblem
from agentstudy.pricing.money import exact
from agentstudy.pricing.openai import OWN_OPENAI_PRICES
from agentstudy.pricing.openai_price import OpenAiPrice
from agentstudy.pricing.usd_json import usd_number

__all__ = ["GOOGLE", "OWN_GEMINI_PRICES", "TIER_RULE", "RequestUsage", "gemini_cost", "gemini_price",
           "gemini_price_entry"]

GOOGLE = "google"
"""genai-prices' provider id of Gemini models."""
TIER_RULE = "tier chosen per request by that request's prompt tokens (the session file records each request)"
OWN_GEMINI_PRICES: dict[str, OpenAiPrice] = {"rehearsal-scripted": replace(
    OWN_OPENAI_PRICES["rehearsal-scripted"],
    source="nominal rehearsal price (no money moves: the scripted Gemini API server on 127.0.0.1); the same "
           "nominal rates as the Codex rehearsal's, cached input at 0.1 x input")}
"""Our own rows, looked up before genai-prices: only the rehearsal's nominal model (the same nominal rates as
the Codex rehearsal's; no money moves)."""


@dataclass(frozen=True)
class RequestUsage:
    """One model response's tokens as Gemini CLI's session file records them (``tokens`` of a ``gemini``
    message): ``input`` (the prompt, cached included), ``output`` (candidates), ``cached``, ``thoughts``,
    ``tool`` (tool-use prompt), ``total``; ``model`` is the model that answered.

    Raises:
        CostProblem: a count is not an integer >= 0, or ``cached`` exceeds ``input``.
    """

    model: str
    input: int
    output: int
    cached: int = 0
    thoughts: int = 0
    tool: int = 0
    total: int = 0

    def __post_init__(self) -> None:
        counts = (self.input, self.output, self.cached, self.thoughts, self.tool, self.total)
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in counts):
            raise CostProblem("a Gemini usage count is not an integer >= 0")
        if self.cached > self.input:
            raise CostProblem("cached tokens exceed the prompt's tokens")


def gemini_price(model: str, own: Mapping[str, OpenAiPrice] = OWN_GEMINI_PRICES, day: str | None = None) -> OpenAiPrice:
    """``model``'s price (USD per million tokens): ``own``'s row, else genai-prices' ``google`` row as of UTC
    ``day`` (``None``: today).

    Raises:
        CostProblem: neither knows ``model``.
    """
    if model in own:
        return own[model]
    from agentstudy.pricing.genai_rates import library_price, today  # lazy: the library's data costs ~2 s

    return library_price(model, day or today(), GOOGLE)


def gemini_cost(requests: Sequence[RequestUsage], own: Mapping[str, OpenAiPrice] = OWN_GEMINI_PRICES,
                day: str | None = None) -> AttemptCost:
    """The exact cost (USD) of an attempt's ``requests``, each at its own model's rates and tier.

    ``costBasis``: ``pricing: "gemini"``, ``tierSource: "request"``, ``tierRule``, ``largestPromptTokens``,
    ``requests`` (how many), and under ``models`` per model the summed counts, its USD and the rates of
    the tiers it used.

    Raises:
        CostProblem: a request's model has no price.
    """
    total = Decimal(0)
    models: dict[str, dict[str, Any]] = {}
    with exact():
        for request in requests:
            price = gemini_price(request.model, own, day)
            index = price.tier_index(request.input)
            rates = price.tiers[index]
            uncached = request.input - request.cached + request.tool
            usd = (uncached * rates.input + request.cached * rates.cached_input
                   + (request.output + request.thoughts) * rates.output).scaleb(-6)
            total += usd
            entry = models.setdefault(request.model, {
                "requests": 0, "inputTokens": 0, "cachedInputTokens": 0, "toolTokens": 0, "outputTokens": 0,
                "thoughtsTokens": 0, "usd": Decimal(0), "tiers": {}, "priceSource": price.source})
            entry["requests"] += 1
            entry["inputTokens"] += request.input
            entry["cachedInputTokens"] += request.cached
            entry["toolTokens"] += request.tool
            entry["outputTokens"] += request.output
            entry["thoughtsTokens"] += request.thoughts
            entry["usd"] += usd
            entry["tiers"][str(index + 1)] = {"inputUsdPerMillion": usd_number(rates.input),
                                              "cachedInputUsdPerMillion": usd_number(rates.cached_input),
                                              "outputUsdPerMillion": usd_number(rates.output)}
    for entry in models.values():
        entry["usd"] = usd_number(entry["usd"])
    basis: dict[str, Any] = {
        "pricing": "gemini", "tierSource": "request", "tierRule": TIER_RULE, "requests": len(requests),
        "largestPromptTokens": max((r.input for r in requests), default=0), "models": models,
    }
    return AttemptCost(usd=total, basis=basis)


def gemini_price_entry(model: str, own: Mapping[str, OpenAiPrice] = OWN_GEMINI_PRICES,
                       day: str | None = None) -> dict[str, Any] | None:
    """The ledger's ``cli.prices`` entry for a Gemini ``model`` (USD per million), ``None`` if unpriced.

    Shape: ``{source, tierThresholds, tierRule, tiers: [{input, cachedInput, output}, ...]}``.
    """
    try:
        price = gemini_price(model, own, day)
    except CostProblem:
        return None
    return {"source": price.source, "tierThresholdTokens": price.thresholds[0] if price.thresholds else None,
            "tierThresholds": list(price.thresholds), "tierRule": TIER_RULE,
            "tiers": [{"input": usd_number(t.input), "cachedInput": usd_number(t.cached_input),
                       "output": usd_number(t.output)} for t in price.tiers]}
