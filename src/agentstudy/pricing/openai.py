"""OpenAI model prices as data, and the cost of one Codex attempt's usage (issue 21 item 4).

Rates are USD per million tokens, each row with its source and date; a model absent from the
table is a cost problem for the caller, never a guessed price. Codex's ``turn.completed`` usage
follows the Responses API: ``input_tokens`` includes ``cached_input_tokens``, and
``output_tokens`` includes ``reasoning_output_tokens``. Each part is priced at its own rate:
uncached input, cached input, cache-write input (billed as input: OpenAI states no write rate),
non-reasoning output and reasoning output (billed as output by OpenAI; its own column, so a
provider that prices it apart is one row away). Codex reports no cost: a ``completed`` attempt
is charged this computed cost, any other outcome ``max(reservation, computed)``
(``pricing.budget.settle_attempt``). Exact ``Decimal`` arithmetic throughout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentstudy.pricing.cost import AttemptCost, CostProblem
from agentstudy.pricing.money import exact
from agentstudy.pricing.usd_json import usd_number

__all__ = ["OPENAI_PRICES", "REHEARSAL_ROW_SOURCE", "OpenAiPrice", "OpenAiUsage", "openai_cost", "openai_price_entry"]


@dataclass(frozen=True)
class OpenAiPrice:
    """One OpenAI model's rates, USD per million tokens: ``input`` (uncached), ``cached_input``,
    ``output`` (non-reasoning) and ``reasoning_output``; ``source`` names where and when they were read.

    Raises:
        ValueError: a rate that is not a finite ``Decimal`` >= 0, or an empty source.
    """

    input: Decimal
    cached_input: Decimal
    output: Decimal
    reasoning_output: Decimal
    source: str

    def __post_init__(self) -> None:
        for rate in (self.input, self.cached_input, self.output, self.reasoning_output):
            if not isinstance(rate, Decimal) or not rate.is_finite() or rate < 0:
                raise ValueError("an OpenAI rate must be a finite Decimal >= 0 (USD per million tokens)")
        if not self.source.strip():
            raise ValueError("an OpenAI price row needs a source")


_LIST = ("OpenAI API pricing page, standard tier, as published 2025-08-07 (GPT-5 launch); reasoning "
         "tokens are billed as output tokens there; not re-read since")
REHEARSAL_ROW_SOURCE = ("nominal rehearsal price (no money moves: the scripted Responses server on 127.0.0.1); "
                        "the first tier of the Claude rehearsal model, cached input at 0.1 x input")


def _row(input_rate: str, cached: str, output: str, source: str = _LIST) -> OpenAiPrice:
    return OpenAiPrice(Decimal(input_rate), Decimal(cached), Decimal(output), Decimal(output), source)


OPENAI_PRICES: dict[str, OpenAiPrice] = {
    "gpt-5": _row("1.25", "0.125", "10"),
    "gpt-5-codex": _row("1.25", "0.125", "10"),
    "gpt-5-mini": _row("0.25", "0.025", "2"),
    "gpt-5-nano": _row("0.05", "0.005", "0.40"),
    "gpt-4.1": _row("2", "0.50", "8"),
    "gpt-4.1-mini": _row("0.40", "0.10", "1.60"),
    "o4-mini": _row("1.10", "0.275", "4.40"),
    "rehearsal-scripted": _row("0.10", "0.01", "0.50", REHEARSAL_ROW_SOURCE),
}
"""Rates of the models a Codex study may name (``rehearsal-scripted`` is the rehearsal's)."""


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


def openai_cost(model: str, usage: OpenAiUsage, table: Mapping[str, OpenAiPrice] = OPENAI_PRICES) -> AttemptCost:
    """The exact cost (USD) of ``usage`` at ``model``'s rates, with its ``costBasis`` (camelCase JSON).

    ``(input - cached - cache write) x input + cached x cached_input + cache write x input +
    (output - reasoning) x output + reasoning x reasoning_output``, divided by 1e6.

    Raises:
        CostProblem: ``model`` has no row in ``table``.
    """
    price = table.get(model)
    if price is None:
        raise CostProblem(f"no OpenAI price for model {model!r}")
    uncached = usage.input_tokens - usage.cached_input_tokens - usage.cache_write_input_tokens
    plain_output = usage.output_tokens - usage.reasoning_output_tokens
    with exact():
        total = (uncached * price.input + usage.cached_input_tokens * price.cached_input
                 + usage.cache_write_input_tokens * price.input + plain_output * price.output
                 + usage.reasoning_output_tokens * price.reasoning_output).scaleb(-6)
    basis: dict[str, Any] = {
        "pricing": "openai",
        "models": {model: {
            "inputUsdPerMillion": usd_number(price.input),
            "cachedInputUsdPerMillion": usd_number(price.cached_input),
            "outputUsdPerMillion": usd_number(price.output),
            "reasoningOutputUsdPerMillion": usd_number(price.reasoning_output),
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


def openai_price_entry(model: str, table: Mapping[str, OpenAiPrice] = OPENAI_PRICES) -> dict[str, Any] | None:
    """The ledger's ``prices`` entry for an OpenAI ``model`` (USD per million), or ``None`` if absent."""
    price = table.get(model)
    if price is None:
        return None
    return {"source": price.source, "input": usd_number(price.input), "cachedInput": usd_number(price.cached_input),
            "output": usd_number(price.output), "reasoningOutput": usd_number(price.reasoning_output)}
