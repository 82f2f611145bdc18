"""The ``--concurrency N`` option of the controlled runner and both adjudications (issue 19, item 1), and their
``--executor local|ray`` / ``--ray-address`` (issue 20)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import click

from agentstudy.commands.common import fail

MAX_CONCURRENCY = 32
"""The most items in flight at once (the same bound as ``agentstudy minimal --concurrency``)."""

F = TypeVar("F", bound=Callable[..., Any])


def concurrency_option(what: str, admission: str) -> Callable[[F], F]:
    """A click option ``--concurrency`` (1 to ``MAX_CONCURRENCY``, default 1) for ``what`` run at once.

    ``admission`` ends the help text: when an item is admitted (e.g. the cap rule).
    """
    return click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=1, show_default=True,
                        help=f"{what} run at once; 1 runs them one after another. Admitted in order and "
                             f"recorded in that order; {admission}")




def executor_options(function: F) -> F:
    """The ``--executor local|ray`` and ``--ray-address ADDR`` options (issue 20) of a runner with ``--concurrency``.

    Check them with ``executor_choice`` before anything starts.
    """
    function = click.option("--ray-address", metavar="ADDR",
                            help="With --executor ray: the running cluster's head (host:port).")(function)
    return click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                        help="Where the attempts of --concurrency N run: threads here, or never-retried "
                             "tasks on the Ray cluster at --ray-address (pip install 'agentstudy[ray]'; "
                             "docs/ray.md).")(function)


def executor_choice(executor: str, ray_address: str | None, concurrency: int) -> Literal["local", "ray"]:
    """The checked executor flags (issue 20): ``"local"`` or ``"ray"``.

    Exits 2 with one error line (``commands.common.fail``): ``ray`` without ``--concurrency`` above 1
    or without ``--ray-address``, or ``--ray-address`` without ``ray``.
    """
    if executor == "ray" and (concurrency < 2 or ray_address is None):
        fail("--executor ray needs --concurrency above 1 and --ray-address ADDR (docs/ray.md)")
    if ray_address is not None and executor != "ray":
        fail("--ray-address goes with --executor ray")
    return "ray" if executor == "ray" else "local"


__all__ = ["MAX_CONCURRENCY", "concurrency_option", "executor_choice", "executor_options"]
