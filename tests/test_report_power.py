"""report/power.py and report/power_section.py: the simulated sign-flip power, MDE, needed designs (issue 17)."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from agentstudy.report.analysis import WALL
from agentstudy.report.inference import sign_flip_p
from agentstudy.report.power import (
    Components,
    PilotTooSmall,
    estimate_components,
    minimum_detectable,
    needed_tasks,
    sign_flip_rejects,
    simulate_power,
    smallest_tasks,
)
from agentstudy.report.power_section import plan_json, plan_metric

COMPONENTS = Components(tasks=8, repetitions=3, task_variance=4.0, baseline_variance=3.0, treatment_variance=6.0,
                        observed_variance=7.0)


def test_the_smallest_number_of_tasks_is_where_two_over_two_to_the_k_reaches_alpha() -> None:
    assert smallest_tasks(0.05) == 6 and smallest_tasks(0.0625) == 5 and smallest_tasks(0.01) == 8
    with pytest.raises(ValueError):
        smallest_tasks(1.0)


@pytest.mark.parametrize(("k", "rows"), [(6, 40), (7, 40), (11, 12), (16, 3)])
def test_the_vectorised_test_is_the_reports_sign_flip_test(k: int, rows: int) -> None:
    rng = np.random.default_rng(k)
    data = rng.normal(0.6, 1.0, size=(rows, k))
    data[0] = 1.0  # all one sign: p = 2/2^k exactly
    data[1, : k // 2] = -2.0
    data[1, k // 2:] = 2.0  # ties of the statistic
    p_values = [sign_flip_p(row.tolist(), seed=1)[0] for row in data]
    for alpha in (0.05, 2 / 2**k, 0.2):
        assert sign_flip_rejects(data, alpha).tolist() == [p <= alpha * (1 + 1e-9) for p in p_values]
    assert sign_flip_rejects(data[:1], 2 / 2**k)[0] and not sign_flip_rejects(data[:1], 1.9 / 2**k)[0]


def test_without_a_difference_the_test_rejects_at_most_alpha() -> None:
    null = simulate_power(0.0, 2.0, 10, 3, 0.05, seed=7)
    assert null.power <= 0.05 + 3 * 0.0063
    assert simulate_power(3.0, 2.0, 10, 3, 0.05).power > simulate_power(1.0, 2.0, 10, 3, 0.05).power


def test_the_minimum_detectable_difference_has_the_target_power_under_another_seed() -> None:
    detectable = minimum_detectable(COMPONENTS, 0.05, 0.8)
    assert detectable.difference is not None and detectable.estimate is not None and detectable.note is None
    assert (detectable.tasks, detectable.repetitions) == (8, 3)
    again = simulate_power(detectable.difference, COMPONENTS.difference_sd(3), 8, 3, 0.05, seed=12345)
    assert abs(again.power - 0.8) <= 0.05 and again.mc_se <= 0.015
    assert minimum_detectable(COMPONENTS, 0.05, 0.9).difference > detectable.difference  # type: ignore[operator]


def test_fewer_than_six_tasks_say_no_difference_is_detectable_instead_of_searching() -> None:
    detectable = minimum_detectable(COMPONENTS, 0.05, 0.8, tasks=5)
    assert detectable.difference is None and detectable.note is not None
    assert "2/2^5 = 0.0625" in detectable.note and "at least 6 tasks" in detectable.note


def test_the_needed_number_of_tasks_is_the_smallest_that_reaches_the_power() -> None:
    design = needed_tasks(COMPONENTS, 1.5, 2, 0.05, 0.8)
    assert design.tasks is not None and design.estimate is not None and design.tasks > 6
    sd = COMPONENTS.difference_sd(2)
    assert simulate_power(1.5, sd, design.tasks, 2, 0.05).power >= 0.8
    assert simulate_power(1.5, sd, design.tasks - 1, 2, 0.05).power < 0.8
    more_repetitions = needed_tasks(COMPONENTS, 1.5, 5, 0.05, 0.8)
    assert more_repetitions.tasks is not None and more_repetitions.tasks <= design.tasks
    assert needed_tasks(COMPONENTS, 1e-6, 1, 0.05, 0.8).note == "more than 400 tasks"


def _values(k: int, r: int, seed: int) -> dict[str, tuple[list[float], list[float]]]:
    rng = np.random.default_rng(seed)
    level, effect = rng.normal(100, 30, k), rng.normal(5, 2, k)
    return {f"t{i}": ((level[i] + rng.normal(0, 3, r)).tolist(), (level[i] + effect[i] + rng.normal(0, 1, r)).tolist())
            for i in range(k)}


def test_components_recover_the_simulated_variances() -> None:
    components = estimate_components(_values(400, 4, 3))
    assert (components.tasks, components.repetitions) == (400, 4)
    assert components.baseline_variance == pytest.approx(9, rel=0.1)
    assert components.treatment_variance == pytest.approx(1, rel=0.1)
    assert components.task_variance == pytest.approx(4, rel=0.3)


@pytest.mark.parametrize(("k", "r"), [(1, 1), (1, 3)])
def test_a_pilot_too_small_says_what_the_next_one_must_hold(k: int, r: int) -> None:
    with pytest.raises(PilotTooSmall) as raised:
        estimate_components(_values(k, r, 1))
    assert "1 task with values in both arms" in str(raised.value) and "at least 2 tasks" in str(raised.value)
    plan = plan_metric(WALL, _values(k, r, 1))
    assert plan.components is None and plan.too_small == str(raised.value)
    entry = plan_json(plan)
    assert entry["components"] is None and entry["reason"] == str(raised.value)
    assert entry["minimumDetectableDifference"] is None and entry["needed"] == []


def test_a_one_repetition_pilot_plans_at_one_repetition_from_its_task_differences() -> None:
    values = _values(6, 1, 1)
    components = estimate_components(values)
    differences = [statistics.fmean(t) - statistics.fmean(b) for b, t in values.values()]
    assert (components.tasks, components.repetitions) == (6, 1)
    assert components.task_variance == pytest.approx(statistics.variance(differences))
    assert components.baseline_variance == components.treatment_variance == 0
    assert components.difference_sd(1) == pytest.approx(statistics.stdev(differences))


def test_a_plan_gives_the_needed_designs_for_the_effect() -> None:
    plan = plan_metric(WALL, _values(6, 3, 2), effect=-4.0)
    assert plan.effect == 4.0 and [d.repetitions for d in plan.needed] == [1, 2, 3, 5]
    entry = plan_json(plan)
    assert entry["tasks"] == 6 and entry["repetitions"] == 3 and entry["effectSource"] == "--effect"
    assert all(n["tasks"] is None or n["tasks"] >= 6 for n in entry["needed"])


def test_a_larger_pilot_scales_spend_exactly() -> None:
    from decimal import Decimal

    from agentstudy.pricing.sums import scaled, times

    assert scaled(Decimal("0.0485985"), 36, 8) == Decimal("0.218693250")
    assert scaled(Decimal("0.0014036"), 36, 2) == times(Decimal("0.0014036"), 18)
    with pytest.raises(ValueError, match="not exact"):
        scaled(Decimal("0.01"), 1, 3)
    with pytest.raises(ValueError):
        scaled(Decimal("0.01"), 36, 0)
