"""Counters reported by :meth:`lantern.cache.Lantern.stats`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LanternStats:
    """A snapshot of the cache counters; every field only grows."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0
    expirations: int = 0

    @property
    def requests(self) -> int:
        """Number of `get` calls that were counted."""
        return self.hits + self.misses

    def hit_ratio(self) -> float:
        """Share of counted `get` calls that hit, 0.0 when there were none."""
        total = self.requests
        return self.hits / total if total else 0.0
