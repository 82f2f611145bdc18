"""OpenAI rates read from genai-prices' bundled data snapshot (issue 21 item 4).

genai-prices (pydantic's price library, pinned in pyproject.toml) ships its price data as a
Python module; this adapter reads provider ``openai`` from that *bundled* snapshot only — never
``update_prices`` or any network call — and converts one model's **standard-tier** prices
(``ModelInfo.get_prices`` without a price context: no batch / flex / priority / fast variant;
Codex's requests use the standard tier) into our :class:`~agentstudy.pricing.openai_price.OpenAiPrice`.
Importing the library costs about 2 s (its data module), so it is imported here, lazily, the
first time a Codex attempt's model is priced, and never at start-up.

Mapping (USD per million tokens): ``input_mtok`` -> input, ``cache_read_mtok`` -> cached input
(absent: the input rate), ``cache_write_mtok`` -> cache-write input (absent: the input rate,
OpenAI bills writes as input), ``output_mtok`` -> output, ``output_reasoning_mtok`` -> reasoning
output (absent, as for every OpenAI row today: the output rate, OpenAI bills reasoning as output).
A ``TieredPrices`` value ("every token at the tier's rate once the input count passes ``start``")
gives one of our tiers per distinct ``start`` across the rates.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from importlib.metadata import version
from typing import Any

from agentstudy.pricing.cost import CostProblem
from agentstudy.pricing.openai_price import OpenAiPrice, OpenAiRates

__all__ = ["LIBRARY", "PROVIDER", "library_price", "today"]

LIBRARY = "genai-prices"
PROVIDER = "openai"
_LABELS = {"openai": "OpenAI", "google": "Google"}


def _schedule(value: Any, fallback: tuple[Decimal, dict[int, Decimal]] | None,
              what: str) -> tuple[Decimal, dict[int, Decimal]]:
    """``(base rate, {start: rate})`` of one genai-prices price value (``Decimal`` or ``TieredPrices``)."""
    from genai_prices.types import TieredPrices

    if value is None:
        if fallback is None:
            raise CostProblem(f"the {LIBRARY} row has no {what} rate")
        return fallback
    if isinstance(value, TieredPrices):
        return value.base, {tier.start: tier.price for tier in value.tiers}
    if isinstance(value, Decimal):
        return value, {}
    raise CostProblem(f"the {LIBRARY} {what} rate is neither a Decimal nor tiered prices")


def _rate_at(schedule: tuple[Decimal, dict[int, Decimal]], start: int | None) -> Decimal:
    """The rate once the input count passes ``start`` (``None``: the base rate)."""
    base, tiers = schedule
    passed = [s for s in tiers if start is not None and s <= start]
    return tiers[max(passed)] if passed else base


def _source(model_id: str, comments: str | None, provider: str = PROVIDER) -> str:
    note = " ".join((comments or "").split()) or "no price comment in the row"
    return (f"{LIBRARY} {version(LIBRARY)} bundled snapshot, provider {provider}, model {model_id}, standard tier "
            f"(no batch/flex/priority variant): {note}")


@cache
def library_price(model: str, day: str, provider_id: str = PROVIDER) -> OpenAiPrice:
    """``model``'s standard-tier price from genai-prices' bundled snapshot, as of UTC date ``day``.

    ``provider_id``: the snapshot's provider (``openai`` for Codex, ``google`` for Gemini CLI, whose rows
    have no cache-write or reasoning rate: thoughts are billed as output, as the mapping above does).

    ``day`` (``YYYY-MM-DD``) selects among the row's dated prices (``ConditionalPrice``) the one in
    force; it is part of the cache key so a long run crossing midnight re-reads. Rates are USD per
    million tokens; ``source`` names the library, its version, the row and its ``price_comments``
    (where and when genai-prices verified OpenAI's page).

    Raises:
        CostProblem: the snapshot has no ``openai`` model matching ``model`` (never a guessed
            price), or the row lacks an input or output rate, or a higher tier is cheaper.
    """
    from genai_prices.data import providers  # the bundled snapshot itself, never an updated one

    provider = next((p for p in providers if p.id == provider_id), None)
    info = provider.find_model(model) if provider is not None else None
    if info is None:
        label = _LABELS.get(provider_id, provider_id)
        raise CostProblem(f"no {label} price for model {model!r} ({LIBRARY} {version(LIBRARY)} does not know it)")
    at = datetime.strptime(day, "%Y-%m-%d").replace(hour=12, tzinfo=UTC)
    prices = info.get_prices(at)
    given = prices.__dict__
    input_rate = _schedule(given.get("input_mtok"), None, "input")
    output_rate = _schedule(given.get("output_mtok"), None, "output")
    schedules = (input_rate, _schedule(given.get("cache_read_mtok"), input_rate, "cached input"),
                 _schedule(given.get("cache_write_mtok"), input_rate, "cache write"), output_rate,
                 _schedule(given.get("output_reasoning_mtok"), output_rate, "reasoning output"))
    starts = sorted({start for schedule in schedules for start in schedule[1]})
    tiers = tuple(OpenAiRates(*(_rate_at(s, start) for s in schedules)) for start in (None, *starts))
    try:
        return OpenAiPrice(tiers=tiers, thresholds=tuple(starts),
                           source=_source(info.id, info.price_comments, provider_id))
    except ValueError as error:
        raise CostProblem(f"the {LIBRARY} row for {model!r} cannot be used: {error}") from None


def today() -> str:
    """Today's UTC date as ``YYYY-MM-DD`` (the day whose prices apply)."""
    return datetime.now(UTC).strftime("%Y-%m-%d")
