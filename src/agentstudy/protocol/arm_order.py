"""Which arm runs first within each task and repetition (issue 41 item 8): the study file's ``design.order``. Pure.

``counterbalanced`` (the default, the seed's rule): forward order (control first) when ``t + r`` is even and reversed
when odd, ``t`` the task's (or block's) 0-based position and ``r`` the 0-based repetition. ``randomized``: for each
task id and 1-based repetition an independent fair draw from ``orderSeed`` — the first bit of
``SHA-256("agentstudy-arm-order-v1:<seed>:<taskId>:<repetition>")`` (1: reversed) — so the order of any attempt is
reproducible from the seed and the attempt's own cell alone, whatever the schedule's length or the pilot's size.
A randomised run records ``design`` = ``{"order": "randomized", "orderSeed"}`` in its ledger and each attempt's
``position`` (1 or 2: first or second of its arm pair); ``protocol.ledger_order`` verifies both.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Order = Literal["counterbalanced", "randomized"]
ORDERS: tuple[Order, ...] = ("counterbalanced", "randomized")


@dataclass(frozen=True)
class OrderRule:
    """How a schedule orders the two arms of a pair: ``order`` and, when ``randomized``, its ``seed`` (0..2^63-1)."""

    order: Order = "counterbalanced"
    seed: int | None = None


COUNTERBALANCED = OrderRule()


def randomized_reversed(seed: int, task_id: str, repetition: int) -> bool:
    """Whether the randomised rule reverses the arms (treatment first) of ``task_id`` at 1-based ``repetition``."""
    digest = hashlib.sha256(f"agentstudy-arm-order-v1:{seed}:{task_id}:{repetition}".encode()).digest()
    return bool(digest[0] & 1)


def reversed_pair(rule: OrderRule, position: int, task_id: str, repetition: int) -> bool:
    """Whether the pair of ``task_id`` at 1-based ``repetition`` runs treatment first; ``position`` is the task's
    (or block's) 0-based position in the schedule, used by the counterbalanced rule only."""
    if rule.order == "randomized":
        return randomized_reversed(rule.seed or 0, task_id, repetition)
    return (position + repetition - 1) % 2 == 1


def pair_position(rule: OrderRule, forward: tuple[str, ...], task_id: str, repetition: int,
                  scenario: str) -> int | None:
    """The 1-based place (1 or 2) of ``scenario`` in its randomised arm pair, ``forward`` being the scenarios in
    forward order (control first); ``None`` under the counterbalanced rule (no position is recorded).

    Raises:
        ValueError: ``scenario`` is not one of ``forward``.
    """
    if rule.order != "randomized":
        return None
    order = tuple(reversed(forward)) if randomized_reversed(rule.seed or 0, task_id, repetition) else forward
    return order.index(scenario) + 1


def order_rule(manifest: Any, protocol_hash: str) -> OrderRule:
    """The :class:`OrderRule` of a loaded study definition: its ``design.order`` (``counterbalanced`` when the
    study declares none, always for a seed manifest); a randomised study's seed is ``design.orderSeed``, else the
    protocol hash's first 15 hex digits as an integer."""
    design = getattr(manifest, "design", None)
    if design is None or design.order == "counterbalanced":
        return COUNTERBALANCED
    seed = design.order_seed if design.order_seed is not None else int(protocol_hash[:15], 16)
    return OrderRule("randomized", seed)


class DesignRecord(BaseModel):
    """The ledger's ``design`` block: ``order`` and ``orderSeed`` (randomised runs only write it; absent means the
    counterbalanced rule, so every ledger written before is unchanged)."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    order: Order
    order_seed: int | None = Field(default=None, alias="orderSeed", ge=0, le=2**63 - 1)


def design_record(rule: OrderRule) -> DesignRecord | None:
    """The ledger's ``design`` block for ``rule``; ``None`` for the counterbalanced rule (nothing written)."""
    if rule.order == "counterbalanced":
        return None
    return DesignRecord(order=rule.order, order_seed=rule.seed)


__all__ = ["COUNTERBALANCED", "ORDERS", "DesignRecord", "Order", "OrderRule", "design_record", "order_rule",
           "pair_position", "randomized_reversed", "reversed_pair"]
