"""The ``--concurrency N`` option of the controlled runner and both adjudications (issue 19, item 1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

MAX_CONCURRENCY = 32
"""The most items in flight at once (the same bound as ``agentstudy minimal --concurrency``)."""

F = TypeVar("F", bound=Callable[..., Any])


def concurrency_option(what: str, admission: str) -> Callable[[F], F]:
    """A click option ``--concurrency`` (1 to ``MAX_CONCURRENCY``, default 1) for ``what`` run at once.

    ``admission`` ends the help text: when an item is admitted (e.g. the cap rule).
    """
    return click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=1, show_default=True,
                        help=f"{what} run at once (issue 19); 1 runs them one after another. Admitted in order and "
                             f"recorded in that order; {admission}")


__all__ = ["MAX_CONCURRENCY", "concurrency_option"]
