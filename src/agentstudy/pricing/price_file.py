"""Another model's prices for a report's "what would this study have cost on that model" (``--prices FILE``).

The file is JSON, read with decimal numbers (never binary floats)::

    {
      "priceAs": "claude-sonnet-5-5",
      "models": {
        "claude-sonnet-5-5": {
          "source": "list price, 2026-11-30",
          "tiers": [{"input": 2, "output": 10}],
          "tierThresholdTokens": 100000
        }
      }
    }

``models`` maps a model name to its prices in USD per million tokens, like
:class:`agentstudy.pricing.table.ModelPrice`: one or two ``tiers`` of ``{input, output}`` (finite
numbers >= 0, given as JSON numbers or decimal strings; a second tier never cheaper than the
first), an optional ``tierThresholdTokens`` (integer >= 1, default 100,000: the second tier
applies to every token of an attempt whose largest prompt is strictly above it) and a
non-empty ``source``. ``priceAs`` names the model every attempt is priced as. Cache rates
derive from the tier's input rate as in the project's table (reads 0.1 x, 5-minute writes
1.25 x, 1-hour and unattributed writes 2 x). Unknown keys are refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from agentstudy.pricing.cost import AttemptCost, CacheWrites, ModelTokens, compute_cost
from agentstudy.pricing.table import DEFAULT_TIER_THRESHOLD_TOKENS, ModelPrice, Tier
from agentstudy.protocol.json_input import JsonInputError, load_json


class PriceFileError(ValueError):
    """The price file is not valid: the message names the first problem found."""


@dataclass(frozen=True)
class PriceFile:
    """A validated price file: ``price_as`` (a key of ``models``) and every model's prices (USD per million)."""

    price_as: str
    models: Mapping[str, ModelPrice]

    @property
    def price(self) -> ModelPrice:
        """The prices of the model every attempt is priced as."""
        return self.models[self.price_as]


def _keys(value: Any, where: str, required: set[str], optional: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PriceFileError(f"{where} must be a JSON object")
    missing = sorted(required - value.keys())
    unknown = sorted(value.keys() - required - optional)
    if missing:
        raise PriceFileError(f"{where} lacks {', '.join(missing)}")
    if unknown:
        raise PriceFileError(f"{where} has unknown key(s) {', '.join(unknown)}")
    return value


def _rate(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise PriceFileError(f"{where} must be a number (USD per million tokens)")
    try:
        rate = Decimal(value)
    except InvalidOperation:
        raise PriceFileError(f"{where} is not a decimal number: {value!r}") from None
    if not rate.is_finite() or rate < 0:
        raise PriceFileError(f"{where} must be finite and >= 0")
    return rate


def _model(name: str, value: Any) -> ModelPrice:
    where = f"models.{name}"
    entry = _keys(value, where, {"source", "tiers"}, {"tierThresholdTokens"})
    source = entry["source"]
    if not isinstance(source, str) or not source.strip():
        raise PriceFileError(f"{where}.source must be a non-empty string")
    tiers = entry["tiers"]
    if not isinstance(tiers, list) or not 1 <= len(tiers) <= 2:
        raise PriceFileError(f"{where}.tiers must be a list of one or two tiers")
    parsed = []
    for index, tier in enumerate(tiers):
        fields = _keys(tier, f"{where}.tiers[{index}]", {"input", "output"}, set())
        parsed.append(Tier(_rate(fields["input"], f"{where}.tiers[{index}].input"),
                           _rate(fields["output"], f"{where}.tiers[{index}].output")))
    threshold = entry.get("tierThresholdTokens", DEFAULT_TIER_THRESHOLD_TOKENS)
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise PriceFileError(f"{where}.tierThresholdTokens must be an integer >= 1")
    try:
        return ModelPrice(tiers=tuple(parsed), source=source.strip(), tier_threshold_tokens=threshold)
    except ValueError as error:
        raise PriceFileError(f"{where}: {error}") from None


def parse_price_file(text: str) -> PriceFile:
    """Parse and validate a price file's text (format in the module docstring).

    Raises:
        PriceFileError: not JSON, a missing or unknown key, a rate that is not a finite number
            >= 0, a bad tier list or threshold, or a ``priceAs`` that names no listed model.
    """
    try:
        data = load_json(text, parse_float=Decimal, parse_constant=_refuse_constant)
    except (JsonInputError, PriceFileError) as error:
        raise PriceFileError(f"not valid JSON: {str(error).removeprefix('is not valid JSON ')}") from None
    root = _keys(data, "the price file", {"priceAs", "models"}, set())
    models = root["models"]
    if not isinstance(models, dict) or not models:
        raise PriceFileError("models must be a non-empty JSON object")
    table = {str(name): _model(str(name), value) for name, value in models.items()}
    price_as = root["priceAs"]
    if not isinstance(price_as, str) or price_as not in table:
        raise PriceFileError(f"priceAs must name one of the listed models ({', '.join(sorted(table))})")
    return PriceFile(price_as=price_as, models=table)


def _refuse_constant(name: str) -> Any:
    raise PriceFileError(f"{name} is not a price")


def merged_tokens(totals: Mapping[str, ModelTokens]) -> ModelTokens:
    """Every model's token totals added together (tokens): the usage priced as one model."""
    return ModelTokens(
        sum(t.input_tokens for t in totals.values()),
        sum(t.output_tokens for t in totals.values()),
        sum(t.cache_read_input_tokens for t in totals.values()),
        sum(t.cache_creation_input_tokens for t in totals.values()),
    )


def reprice_as(
    totals: Mapping[str, ModelTokens],
    cache_writes: CacheWrites,
    message_prompts: Sequence[int],
    prices: PriceFile,
) -> AttemptCost:
    """Price an attempt's stored usage as ``prices.price_as`` with :func:`pricing.cost.compute_cost`.

    All models' totals are merged into the one priced model; the 5-minute / 1-hour split of
    cache writes and the per-message prompt sizes (which only pick the tier; empty means the
    aggregate prompt decides) are applied as recorded.

    Raises:
        CostProblem: the TTL split exceeds the merged cache writes, or a count is malformed.
    """
    merged = {prices.price_as: merged_tokens(totals)}
    return compute_cost(merged, cache_writes, message_prompts, {prices.price_as: prices.price})
