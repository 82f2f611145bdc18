"""The recorded reservation rule and largest overshoot of a minimal ledger (issue 19, item 1): the checks readers make.

Pure; part of ``protocol.ledger_integrity``'s invariants. A ledger without ``budget.reservationRule``
(written before it existed) has neither ``worstTurnUsd`` nor ``largestOvershootUsd``. With it:

- ``limit`` and ``limit-plus-worst-turn`` belong to cli ledgers: every reservation recorded (each
  observation's ``reservedUsd``, every open reservation's) is the per-attempt limit
  (``cli.attemptBudgetUsd``) floored to 6 decimals, plus ``worstTurnUsd`` (above zero) under the
  strict rule, which alone records it;
- ``per-call-ceiling`` belongs to http ledgers (no ``worstTurnUsd``);
- ``largestOvershootUsd`` is present and equals the largest amount an observation's measured cost
  went above its limit (cli: the larger valid one of ``cliReportedCostUsd`` and
  ``computedCostUsd`` above ``attemptBudgetUsd``; http: ``measuredUsd`` above ``reservedUsd``,
  which the loop's per-call ceilings never allow), or ``null`` when none did.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from agentstudy.protocol.records import CliObservation, MinimalLedger

_MICRO = Decimal("0.000001")


def _dec(value: float) -> Decimal:
    """The Decimal a writer's ``usd_number`` came from (its shortest repr; exact to 15 significant digits)."""
    return Decimal(repr(value))


def _number(value: Decimal) -> float:
    return float(value)


def largest_overshoot(ledger: MinimalLedger) -> Decimal | None:
    """The largest measured-minus-limit over the ledger's observations, USD, or ``None`` when none is above 0."""
    largest: Decimal | None = None
    for observation in ledger.observations:
        if isinstance(observation, CliObservation):
            costs = [_dec(c) for c in (observation.cli_reported_cost_usd, observation.computed_cost_usd)
                     if c is not None]
            if not costs:
                continue
            over = max(costs) - _dec(observation.attempt_budget_usd)
        else:
            over = _dec(observation.measured_usd) - _dec(observation.reserved_usd)
        if over > 0 and (largest is None or over > largest):
            largest = over
    return largest


def budget_rule_problems(ledger: MinimalLedger, document: Mapping[str, Any]) -> Iterator[str]:
    """Each inconsistency between the recorded rule, the reservations and the observations (see the module)."""
    budget, raw = ledger.budget, document["budget"]
    rule = budget.reservation_rule
    if rule is None:
        for key in ("worstTurnUsd", "largestOvershootUsd"):
            if key in raw:
                yield f"budget.{key} without budget.reservationRule"
        return
    if "largestOvershootUsd" not in raw:
        yield "budget.reservationRule without budget.largestOvershootUsd (null when nothing overshot)"
    yield from _rule_matches(ledger, rule)
    recorded = budget.largest_overshoot_usd
    found = largest_overshoot(ledger)
    if (found is None) != (recorded is None) or (found is not None and recorded != _number(found)):
        yield (f"budget.largestOvershootUsd {recorded!r} is not what the observations say "
               f"({None if found is None else _number(found)!r})")


def _rule_matches(ledger: MinimalLedger, rule: str) -> Iterator[str]:
    worst = ledger.budget.worst_turn_usd
    if (worst is not None) != (rule == "limit-plus-worst-turn"):
        yield f"budget.worstTurnUsd {worst!r} with reservationRule {rule} (only the strict rule records it)"
        return
    if rule == "per-call-ceiling":
        if ledger.transport != "http":
            yield "budget.reservationRule per-call-ceiling in a cli ledger (the http loop's rule)"
        return
    if ledger.transport != "cli" or ledger.cli is None:
        yield f"budget.reservationRule {rule} in an http ledger (a cli rule)"
        return
    if worst is not None and worst <= 0:
        yield f"budget.worstTurnUsd {worst!r} is not above zero"
        return
    limit = _dec(ledger.cli.attempt_budget_usd).quantize(_MICRO, rounding=ROUND_FLOOR)
    expected = _number(limit + (_dec(worst) if worst is not None else Decimal(0)))
    reservations = [(f"observations[{i}]", o.reserved_usd) for i, o in enumerate(ledger.observations)]
    opened = [ledger.open_reservation] if ledger.open_reservation is not None else []
    reservations += [("an open reservation", r.reserved_usd) for r in [*opened, *(ledger.open_reservations or [])]]
    for where, reserved in reservations:
        if reserved != expected:
            yield f"{where}: reservedUsd {reserved!r} is not the {rule} rule's reservation ({expected!r})"
            return


__all__ = ["budget_rule_problems", "largest_overshoot"]
