"""Which reservation rule a run uses, and the worst-case turn of ``--strict-cap`` (issue 19, item 1). Pure, exact USD.

Claude Code checks ``--max-budget-usd`` only after a turn's spend, so one turn can overshoot the
per-attempt limit (measured: 0.0015186 charged against 0.0015); with N attempts in flight the
overshoots add up. Three rules:

- ``limit`` (the seed's, the default for cli): reserve the per-attempt limit (floored to 6
  decimals); admit when the full limit fits.
- ``limit-plus-worst-turn`` (``--strict-cap``, cli): reserve the limit plus one worst-case turn,
  so a charge (at most limit + one turn) never exceeds its reservation and spent <= cap holds at
  any concurrency. Claude Code is still given the limit as ``--max-budget-usd``.
- ``per-call-ceiling`` (http): the loop reserves every request's ceiling before sending it and
  refuses usage above the ceiling, so no call, hence no attempt, can be charged above what it
  reserved; ``--strict-cap`` changes nothing there and is recorded as this rule.

The worst-case turn: the model's whole context window billed the most expensive way a prompt
token can be billed (the highest tier's input rate or a cache write at 1.25 x / 2 x of it,
whichever is more: the 1-hour write, 2 x) plus its maximum output at the highest tier's output
rate, rounded up to whole micro-USD.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Literal

from agentstudy.pricing.budget import reservation_for
from agentstudy.pricing.money import MICRO, exact, usd
from agentstudy.pricing.table import CLI_PRICES, MODEL_LIMITS, ModelLimits, ModelPrice

RuleName = Literal["limit", "limit-plus-worst-turn", "per-call-ceiling"]
LIMIT: RuleName = "limit"
LIMIT_PLUS_WORST_TURN: RuleName = "limit-plus-worst-turn"
PER_CALL_CEILING: RuleName = "per-call-ceiling"
RULE_NAMES: tuple[RuleName, ...] = (LIMIT, LIMIT_PLUS_WORST_TURN, PER_CALL_CEILING)

_PER_MILLION = Decimal(1_000_000)


class NoWorstTurn(ValueError):
    """``--strict-cap`` cannot price a worst-case turn for the model: it lacks prices or limits."""


def worst_turn_usd(model: str, prices: Mapping[str, ModelPrice] = CLI_PRICES,
                   limits: Mapping[str, ModelLimits] = MODEL_LIMITS) -> Decimal:
    """The most one API turn of ``model`` can cost, USD, rounded up to whole micro-USD.

    ``context_window_tokens`` x the dearest prompt rate of the highest tier (``max(input,
    cache_write_5m, cache_write_1h)``) + ``max_output_tokens`` x that tier's output rate, per
    million tokens. Example: claude-haiku-5-5 (tier 2: 0.50 in, 2.50 out; 1,000,000 / 128,000
    tokens): 1,000,000 x 1.00 / 1e6 + 128,000 x 2.50 / 1e6 = 1.32.

    Raises:
        NoWorstTurn: the model is absent from ``prices`` or ``limits``.
    """
    price, limit = prices.get(model), limits.get(model)
    if price is None or limit is None:
        missing = "prices" if price is None else "a context window and maximum output"
        raise NoWorstTurn(f"--strict-cap needs {missing} for model {model!r} in the price table "
                          f"(known: {', '.join(sorted(set(prices) & set(limits)))})")
    top = price.tiers[-1]
    with exact():
        prompt_rate = max(top.input, top.cache_write_5m, top.cache_write_1h)
        total = (limit.context_window_tokens * prompt_rate + limit.max_output_tokens * top.output) / _PER_MILLION
    return usd(total).quantize(MICRO, rounding=ROUND_CEILING)


def overshoot_usd(measured_usd: Decimal, limit_usd: Decimal) -> Decimal:
    """How far a measured cost went above its per-attempt limit, USD (0 when it did not)."""
    with exact():
        return max(usd(measured_usd, what="a measured cost") - usd(limit_usd, what="the limit"), Decimal(0))


@dataclass(frozen=True)
class ReservationRule:
    """The rule a run reserves by (see the module docstring), with the per-attempt limit it applies to (USD).

    ``worst_turn_usd`` is set exactly for ``limit-plus-worst-turn``. ``limit_usd`` is the cli
    per-attempt limit (``None`` for ``per-call-ceiling``).

    Raises:
        ValueError: a worst turn given to another rule or missing from the strict one, or a cli
            rule without a limit.
    """

    name: RuleName
    limit_usd: Decimal | None = None
    worst_turn_usd: Decimal | None = None

    def __post_init__(self) -> None:
        if (self.worst_turn_usd is not None) != (self.name == LIMIT_PLUS_WORST_TURN):
            raise ValueError("exactly the limit-plus-worst-turn rule has a worst turn")
        if (self.limit_usd is None) != (self.name == PER_CALL_CEILING):
            raise ValueError("the cli rules apply to a per-attempt limit, per-call-ceiling to none")

    @classmethod
    def for_cli(cls, limit_usd: Decimal, model: str, *, strict: bool) -> ReservationRule:
        """``limit`` or (``strict``) ``limit-plus-worst-turn`` for ``model``.

        Raises:
            NoWorstTurn: ``strict`` and the model has no worst-case turn.
            ValueError: the limit floors to zero (``reservation_for``).
        """
        reservation_for(limit_usd)
        if not strict:
            return cls(LIMIT, limit_usd)
        return cls(LIMIT_PLUS_WORST_TURN, limit_usd, worst_turn_usd(model))

    @property
    def base_usd(self) -> Decimal:
        """The seed's reservation, ``reservation_for(limit)``: Claude Code's ``--max-budget-usd``, and the
        charge above which a completed attempt is ``budget-exceeded`` under either cli rule (USD)."""
        if self.limit_usd is None:
            raise ValueError("per-call-ceiling has no per-attempt reservation")
        return reservation_for(self.limit_usd)

    @property
    def reservation_usd(self) -> Decimal:
        """What each attempt reserves: the base, plus the worst turn under ``limit-plus-worst-turn`` (USD)."""
        with exact():
            return self.base_usd + (self.worst_turn_usd or Decimal(0))

    @property
    def admission_usd(self) -> Decimal:
        """What must fit under the cap to admit an attempt: the larger of the limit and the reservation (USD)."""
        reservation = self.reservation_usd  # raises ValueError for per-call-ceiling
        return max(reservation, self.limit_usd or Decimal(0))


HTTP_RULE = ReservationRule(PER_CALL_CEILING)
"""The http loop's rule, with or without ``--strict-cap`` (it cannot overshoot; the module docstring)."""


__all__ = [
    "HTTP_RULE",
    "LIMIT",
    "LIMIT_PLUS_WORST_TURN",
    "PER_CALL_CEILING",
    "RULE_NAMES",
    "NoWorstTurn",
    "ReservationRule",
    "RuleName",
    "overshoot_usd",
    "worst_turn_usd",
]
