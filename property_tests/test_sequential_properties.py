"""Property tests of the sequential e-process (issue 35): under the sign-flip null, by exact enumeration."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstudy.protocol.sequential import (
    BetterWhen,
    SequentialDesign,
    decisions,
    e_process,
    first_stop,
    one_side,
)

sizes = st.lists(st.one_of(st.just(0.0), st.floats(min_value=1e-3, max_value=1e6)), min_size=7, max_size=11)


@settings(max_examples=120, deadline=None)
@given(sizes=sizes, alpha=st.sampled_from([0.05, 0.1, 0.2]), lower=st.booleans(),
       futility=st.one_of(st.none(), st.sampled_from([0.05, 0.1, 0.3])))
def test_under_the_sign_flip_null_the_expected_e_value_is_at_most_one(
        sizes: list[float], alpha: float, lower: bool, futility: float | None) -> None:
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(sizes))))
    paths = signs * np.array(sizes)
    side: BetterWhen = "lower" if lower else "higher"
    e = e_process(paths, side)
    assert np.all(e > 0)
    assert np.all(e.mean(axis=0) <= 1.0 + 1e-9)  # exactly 1: a martingale
    design = SequentialDesign(max_tasks=len(sizes), alpha=alpha, futility=futility)
    tasks, codes = first_stop(decisions(e, design))
    assert np.all(tasks >= 1)  # every study stops by maxTasks
    stopped = e[np.arange(len(e)), tasks - 1]
    assert stopped.mean() <= 1.0 + 1e-9
    assert (codes == 1).mean() <= alpha  # Ville, counted exactly


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=30))
def test_the_e_value_is_positive_and_bounded_per_task(values: list[float]) -> None:
    e = one_side(np.array(values), "lower")
    ratio = e / np.concatenate(([1.0], e[:-1]))
    assert np.all(ratio >= 0.2 - 1e-12) and np.all(ratio <= 1.8 + 1e-12)
