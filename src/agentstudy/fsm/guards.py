"""Guards shared by the machines: which final state a ``settle(status=...)`` event reaches."""

from __future__ import annotations

from collections.abc import Callable


def status_is(value: str) -> Callable[..., bool]:
    """A guard that holds when the event's ``status`` keyword equals ``value``.

    Its name (``is_timed_out`` for ``timed-out``) is what the state diagrams show.
    """

    def guard(status: str = "") -> bool:
        return status == value

    guard.__name__ = guard.__qualname__ = "is_" + value.replace("-", "_")
    return guard
