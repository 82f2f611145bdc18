"""Power plans simulated once per distinct question within a test module (issue 42 item 7, the suite's CPU).

The minimum detectable difference, the needed designs and the ranged plan are seeded simulations, deterministic in
their arguments; files whose commands plan the same metric of the same ledger again and again (``power --json``
and its text, the report's formats) reuse each answer where the commands look it up. A plan with other arguments
(another alpha, effect or ledger) gets its own simulation, and what a plan claims is still checked by the tests'
own simulations, which are never cached.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest


def memo(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` computed once per distinct argument list, told apart by their reprs (task values are dicts of
    lists, so the arguments need not be hashable); the answer is returned as first computed."""
    answers: dict[str, Any] = {}

    @functools.wraps(function)
    def once(*args: Any, **kwargs: Any) -> Any:
        key = repr((args, sorted(kwargs.items())))
        if key not in answers:
            answers[key] = function(*args, **kwargs)
        return answers[key]

    return once


@contextmanager
def plans_simulated_once() -> Iterator[None]:
    """Within the block, ``report.power_section``'s ``minimum_detectable`` and ``needed_designs`` and
    ``report.power_primary``'s ``tasks_needed`` (the names the report and ``agentstudy power`` call) are
    :func:`memo`'d; on exit they are the real functions again."""
    from agentstudy.report import power_primary, power_section

    with pytest.MonkeyPatch.context() as patch:
        for module, name in ((power_section, "minimum_detectable"), (power_section, "needed_designs"),
                             (power_primary, "tasks_needed")):
            patch.setattr(module, name, memo(getattr(module, name)))
        yield
