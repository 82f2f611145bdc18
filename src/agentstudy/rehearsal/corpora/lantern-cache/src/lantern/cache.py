"""The `Lantern` cache: least recently used eviction with monotonic expiry."""

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any

from lantern.stats import LanternStats

MISSING: Any = object()


@dataclass
class _Entry:
    value: Any
    expires_at: float


class Lantern:
    """A bounded cache; see docs/design.md for the data structures."""

    def __init__(
        self,
        capacity: int = 256,
        ttl_seconds: float | None = 300.0,
        sweep_every: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if ttl_seconds is not None and ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive or None")
        if sweep_every < 1:
            raise ValueError("sweep_every must be at least 1")
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._capacity = capacity
        self._ttl = ttl_seconds
        self._sweep_every = sweep_every
        self._clock = clock
        self._writes = 0
        self._stats = LanternStats()

    def get(self, key: Hashable) -> Any:
        """Return the live value for `key`, or `MISSING`."""
        entry = self._entries.get(key)
        if entry is not None and entry.expires_at <= self._clock():
            del self._entries[key]
            self._stats = replace(self._stats, expirations=self._stats.expirations + 1)
            entry = None
        if entry is None:
            self._stats = replace(self._stats, misses=self._stats.misses + 1)
            return MISSING
        self._entries.move_to_end(key)
        self._stats = replace(self._stats, hits=self._stats.hits + 1)
        return entry.value

    def put(self, key: Hashable, value: Any) -> None:
        """Store `value`; sweeps every `sweep_every` writes, then evicts if full."""
        self._writes += 1
        if self._writes % self._sweep_every == 0:
            self._sweep()
        deadline = math.inf if self._ttl is None else self._clock() + self._ttl
        self._entries[key] = _Entry(value, deadline)
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
            self._stats = replace(self._stats, evictions=self._stats.evictions + 1)

    def _sweep(self) -> None:
        now = self._clock()
        dead = [key for key, entry in self._entries.items() if entry.expires_at <= now]
        for key in dead:
            del self._entries[key]
        self._stats = replace(self._stats, expirations=self._stats.expirations + len(dead))

    def stats(self) -> LanternStats:
        """Return the current counters."""
        return self._stats
