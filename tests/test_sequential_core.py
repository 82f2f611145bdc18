"""The sequential test's core (protocol.sequential) against an independent loop and exact enumeration (issue 35)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from agentstudy.protocol.sequential import (
    LAMBDA_MAX,
    SequentialDesign,
    decisions,
    e_process,
    fewest_tasks,
    first_stop,
    looks,
)


def reference_e_values(differences: list[float | None], better_when: str) -> list[float]:
    """An independent, plain-Python e-process: each side's wealth in one pass, then their average."""
    other = "higher" if better_when == "lower" else "lower"
    return [(a + b) / 2 for a, b in zip(reference_side(differences, better_when), reference_side(differences, other),
                                        strict=True)]


def reference_side(differences: list[float | None], better_when: str) -> list[float]:
    """One side's wealth, kept as it goes."""
    wealth, total, total_square = 1.0, 0.0, 0.0
    sizes: list[float] = []
    path: list[float] = []
    for d in differences:
        turned = None if d is None else (-d if better_when == "lower" else d)
        bet = min(max((0.5 + total) / (1.0 + total_square), 0.0), LAMBDA_MAX)
        if turned is None or turned == 0:
            x = 0.0
        else:
            weight = 1.0 if not sizes else min(1.0, abs(turned) / (sum(sizes) / len(sizes)))
            x = math.copysign(weight, turned)
            sizes.append(abs(turned))
        wealth *= 1.0 + bet * x
        total, total_square = total + x, total_square + x * x
        path.append(wealth)
    return path


def test_matches_the_independent_loop_on_mixed_differences() -> None:
    differences: list[float | None] = [-120.0, 40.0, None, 0.0, -300.0, -5.0, 80.0, -90.0, -1000.0, 3.0]
    ours = e_process(np.array([math.nan if d is None else d for d in differences]), "lower")
    assert np.allclose(ours, reference_e_values(differences, "lower"), rtol=1e-12)
    higher = e_process(np.array([math.nan if d is None else d for d in differences]), "higher")
    assert np.allclose(higher, reference_e_values(differences, "higher"), rtol=1e-12)


def test_vectorised_rows_equal_one_at_a_time() -> None:
    rng = np.random.default_rng(7)
    rows = rng.normal(0.3, 1.0, size=(50, 12))
    together = e_process(rows, "higher")
    for row, path in zip(rows, together, strict=True):
        assert np.allclose(path, reference_e_values(list(row), "higher"), rtol=1e-12)


def all_sign_paths(sizes: list[float]) -> np.ndarray:
    """Every sign vector of ``sizes`` (2^n rows), the sign-flip null's equally likely outcomes."""
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(sizes))))
    paths: np.ndarray = signs * np.array(sizes)
    return paths


@pytest.mark.parametrize("sizes", [[1.0] * 10, [3.0, 0.5, 10.0, 1.0, 1.0, 7.0, 0.2, 2.0, 4.0, 1.0],
                                   [5.0, 0.0, 2.0, 9.0, 0.0, 1.0, 1.0, 3.0]])
def test_exact_enumeration_the_null_mean_is_one_and_ville_holds(sizes: list[float]) -> None:
    paths = all_sign_paths(sizes)
    e = e_process(paths, "lower")
    # A test martingale: the mean over all equally likely sign vectors is exactly 1 after every task.
    assert np.allclose(e.mean(axis=0), 1.0, rtol=1e-12)
    design = SequentialDesign(max_tasks=len(sizes), alpha=0.05 if len(sizes) >= 7 else 0.1, futility=0.1)
    tasks, codes = first_stop(decisions(e, design))
    # Stopped e-values (frozen at the stop) still average at most 1 (optional stopping) ...
    stopped = e[np.arange(len(e)), tasks - 1]
    assert stopped.mean() <= 1.0 + 1e-12
    # ... and the chance of ever declaring efficacy is at most alpha, by counting.
    assert (codes == 1).mean() <= design.alpha
    assert (e.max(axis=1) >= design.threshold).mean() <= design.alpha


def test_the_decisions_in_order() -> None:
    design = SequentialDesign(max_tasks=10, alpha=0.05, futility=0.1)
    # Every difference favours the treatment (lower input tokens): efficacy at the seventh look, nothing after.
    found = looks([-100.0] * 10, design, "lower")
    assert [look.decision for look in found] == ["continue"] * 6 + ["efficacy"]
    assert found[-1].e_value >= 20 > found[-2].e_value and found[-1].direction == "better"
    # Every difference against it: just as clear an answer, the other way.
    against = looks([100.0] * 10, design, "lower")
    assert against[-1].decision == "efficacy" and against[-1].direction == "worse" and len(against) == 7
    # No difference at all: E stays 1 and 20 goes out of reach (1.8^(10-5) < 20) at the fifth look.
    tied = looks([0.0] * 10, design, "lower")
    assert [look.decision for look in tied] == ["continue"] * 4 + ["futility"]
    # Alternating signs: the floor or out of reach stops it, never efficacy.
    mixed = looks([-1.0, 1.0] * 20, SequentialDesign(max_tasks=40, alpha=0.05, futility=0.5), "lower")
    assert mixed[-1].decision == "futility" and mixed[-1].e_value <= 0.5
    wide = looks([-1.0, 1.0] * 20, SequentialDesign(max_tasks=40, alpha=0.05, futility=None), "lower")
    assert wide[-1].decision in ("futility", "maxTasks") and all(look.e_value < 20 for look in wide)


def test_out_of_reach_never_cuts_a_path_that_could_still_win() -> None:
    design = SequentialDesign(max_tasks=9, alpha=0.05, futility=None)
    values = [1.0, 0.0] + [-1.0] * 7
    e = e_process(np.array(values), "lower")
    codes = decisions(e, design)
    reachable = [e[i] * (1 + LAMBDA_MAX) ** (9 - (i + 1)) >= 20 for i in range(9)]
    for code, ok, value in zip(codes, reachable, e, strict=True):
        if code == 2:
            assert not ok
        elif ok and value < 20:
            assert code in (0, 3)


def test_the_design_is_checked() -> None:
    assert fewest_tasks(0.05) == 7 and fewest_tasks(0.01) == 10
    with pytest.raises(ValueError, match="needs at least 7 tasks"):
        SequentialDesign(max_tasks=6, alpha=0.05)
    with pytest.raises(ValueError, match="alpha"):
        SequentialDesign(max_tasks=10, alpha=1.0)
    with pytest.raises(ValueError, match="futility"):
        SequentialDesign(max_tasks=10, alpha=0.05, futility=1.5)
    with pytest.raises(ValueError, match="looks"):
        looks([1.0] * 11, SequentialDesign(max_tasks=10, alpha=0.05), "lower")
