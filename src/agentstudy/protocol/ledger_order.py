"""The ledger invariant of the arms' order (issue 41 item 8): a randomised run's ``design`` block and every
attempt's ``position`` agree with the seeded draw of ``protocol.arm_order``. Pure; one of the invariants of
``protocol.ledger_invariants``.
"""

from __future__ import annotations

from collections.abc import Iterator

from agentstudy.protocol.arm_order import OrderRule, pair_position
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.study_arms import SCENARIOS


def order_problems(ledger: MinimalLedger) -> Iterator[str]:
    """One line per disagreement: a ``position`` in a ledger whose order is not randomised, a randomised
    ``design`` without ``orderSeed``, or an observation whose ``position`` is missing or is not the one the seed
    draws for its task, repetition and scenario."""
    design = ledger.design
    if design is None or design.order != "randomized":
        for index, observation in enumerate(ledger.observations):
            if observation.position is not None:
                yield (f"observations[{index}] records a position but the ledger's order is not randomised "
                       "(no design.order \"randomized\")")
        return
    if design.order_seed is None:
        yield "design.order is \"randomized\" but design.orderSeed is missing"
        return
    rule = OrderRule("randomized", design.order_seed)
    for index, observation in enumerate(ledger.observations):
        if observation.scenario not in SCENARIOS:
            continue  # the arm check names an unknown scenario
        expected = pair_position(rule, SCENARIOS, observation.task_id, observation.repetition, observation.scenario)
        if observation.position != expected:
            yield (f"observations[{index}] ({observation.task_id} {observation.scenario} repetition "
                   f"{observation.repetition}) has position {observation.position}, but orderSeed "
                   f"{design.order_seed} puts it at {expected}")


__all__ = ["order_problems"]
