"""Planning a sequential design by simulation (issue 35): report.sequential_power."""

from __future__ import annotations

import math
from decimal import Decimal

from agentstudy.protocol.sequential import SequentialDesign
from agentstudy.report.power import simulate_power
from agentstudy.report.sequential_power import plan_from_ledger, simulate_sequential


def test_under_no_effect_the_power_is_at_most_alpha() -> None:
    design = SequentialDesign(max_tasks=30, alpha=0.05, futility=0.1)
    result = simulate_sequential(0.0, 1.0, design, 1, simulations=4000)
    assert result.power <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)
    assert result.stop_shares["futility"] + result.stop_shares["maxTasks"] + result.power == 1.0
    assert 7 <= result.expected_tasks <= 30


def test_a_clear_effect_stops_early_and_saves_money() -> None:
    design = SequentialDesign(max_tasks=40, alpha=0.05, futility=0.1)
    result = simulate_sequential(1.0, 1.0, design, 2, task_usd=Decimal("0.5"))
    assert result.power > 0.95 and result.expected_tasks < 20
    assert result.saved_share > 0.5
    assert result.full_usd == Decimal("20.0")
    assert result.expected_usd is not None and result.expected_usd < result.full_usd
    assert result.fixed_power == simulate_power(1.0, 1.0, 40, 2, 0.05).power
    # No noise at all: every study stops at the fewest tasks that can reach 20.
    exact = simulate_sequential(3.0, 0.0, design, 1)
    assert exact.power == 1.0 and exact.expected_tasks == 7


def test_the_plan_from_a_ledgers_values() -> None:
    values = {f"t{i}": ([1000.0 + 10 * i], [1300.0 + 37 * (i % 5)]) for i in range(8)}
    planned = plan_from_ledger(values, [Decimal("0.01")] * 16, SequentialDesign(max_tasks=20, alpha=0.05), 300.0,
                               None)
    assert planned.sd_source == "observed task differences" and planned.operating.repetitions == 1
    assert planned.operating.full_usd == Decimal("0.01") * 2 * 20
    try:
        plan_from_ledger(values, [], SequentialDesign(max_tasks=20, alpha=0.05), 300.0, 3)
    except ValueError as error:
        assert "own 1 repetition" in str(error)
    else:
        raise AssertionError("other repetitions than the ledger's were planned without components")
