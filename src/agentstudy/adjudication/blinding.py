"""Blinding: completed observations become opaque items in a random order (seeded, the seed recorded).

``blind_items`` is pure given its seed: ``random.Random(seed)`` shuffles the completed
observations (ledger order in) and then draws each item's id, ``item-`` plus 16 hex digits.
The id and the order carry nothing of the scenario, task, repetition or position; the
companion keeps the join back to the ledger (``observationIndex``) for after adjudication.
``new_seed`` is the one source of fresh randomness, used when no seed is given.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from agentstudy.adjudication.ledger_view import LedgerObservation

COMPLETED = "completed"
SEED_BITS = 32
BLINDING_METHOD = (
    "completed observations shuffled with Python random.Random(seed).shuffle (ledger order in), then each "
    "item's id drawn from the same generator (item- + 16 hex digits)"
)


@dataclass(frozen=True)
class BlindItem:
    """An opaque item: its random ``item_id`` and the observation behind it (never shown to the adjudicator)."""

    item_id: str
    observation: LedgerObservation


def new_seed() -> int:
    """A fresh random seed in ``[0, 2**32)`` from the operating system's generator."""
    return secrets.randbits(SEED_BITS)


def blind_items(observations: Iterable[LedgerObservation], seed: int) -> list[BlindItem]:
    """The completed observations as opaque items, in the seeded random order.

    Args:
        observations: every ledger observation (those not ``completed`` are left out).
        seed: a non-negative integer; the same seed and ledger give the same items.

    Raises:
        ValueError: a negative seed.
    """
    if seed < 0:
        raise ValueError("the blinding seed must be a non-negative integer")
    rng = random.Random(seed)  # noqa: S311 - reproducible order from a recorded seed, not a secret
    completed = [o for o in observations if o.status == COMPLETED]
    rng.shuffle(completed)
    used: set[str] = set()
    items: list[BlindItem] = []
    for observation in completed:
        item_id = f"item-{rng.getrandbits(64):016x}"
        while item_id in used:
            item_id = f"item-{rng.getrandbits(64):016x}"
        used.add(item_id)
        items.append(BlindItem(item_id, observation))
    return items
