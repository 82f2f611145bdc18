"""The magnitude-aware e-process (issue 41 item 7): exactly a test martingale under the sign-flip null (checked
by enumerating every sign vector), scale-free, magnitude-aware, and more powerful than the sign bets on a
seeded small simulation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agentstudy.protocol.sequential import e_process
from agentstudy.protocol.sequential_magnitude import magnitude_e_process, standardized


@pytest.mark.parametrize("two_sided", [True, False])
@pytest.mark.parametrize("sizes", [(3.0, 1.0, 0.5, 8.0, 2.0, 2.0, 0.1, 5.0), (1.0,) * 8, (0.0, 2.0, 0.0, 7.0, 1.0, 1.0,
                                                                                      9.0, 0.2)])
def test_every_e_value_has_mean_one_over_all_sign_flips(sizes: tuple[float, ...], two_sided: bool) -> None:
    """Under the sign-flip null the 2^n sign vectors are equally likely: the mean of E_t over them is exactly 1
    at every t, and so is the mean of E at a stopping time (the first crossing of 3, else the last look)."""
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(sizes))))
    e = magnitude_e_process(signs * np.array(sizes), "higher", two_sided=two_sided)
    assert np.allclose(e.mean(axis=0), 1.0, atol=1e-12)
    crossed = e >= 3.0
    stop = np.where(crossed.any(axis=1), crossed.argmax(axis=1), len(sizes) - 1)
    assert e[np.arange(len(signs)), stop].mean() == pytest.approx(1.0, abs=1e-12)
    assert (e.max(axis=1) >= 20).mean() <= 0.05  # Ville's bound at alpha 0.05


def test_scale_free_direction_aware_and_missing_tasks_bet_nothing() -> None:
    d = np.array([-120.0, -80.0, np.nan, -200.0, 0.0, -60.0])
    e = magnitude_e_process(d, "lower")
    assert np.allclose(magnitude_e_process(d * 1000, "lower"), e)
    assert np.allclose(magnitude_e_process(-d, "higher"), e)
    assert e[2] == pytest.approx(e[1]) and e[4] == pytest.approx(e[3])  # a NaN or a tie leaves the wealth
    assert standardized(np.array([0.0, 0.0]))[1] == 0.0
    with pytest.raises(ValueError, match="bet grid"):
        magnitude_e_process(d, "lower", grid=())


def test_larger_differences_carry_more_evidence_and_beat_the_sign_bets_on_a_seeded_simulation() -> None:
    one_big = magnitude_e_process(np.array([1.0, 1.0, 1.0, 1.0, 6.0]), "higher")[-1]
    one_small = magnitude_e_process(np.array([1.0, 1.0, 1.0, 1.0, 0.2]), "higher")[-1]
    assert one_big > one_small
    rng = np.random.default_rng(41)
    d = rng.standard_normal((4000, 20)) + 0.8
    magnitude = (magnitude_e_process(d, "higher") >= 20).any(axis=1).mean()
    signs = (e_process(d, "higher") >= 20).any(axis=1).mean()
    assert magnitude > signs
