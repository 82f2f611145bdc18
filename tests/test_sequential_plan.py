"""The sequential design in the study file, its block schedule and the running monitor (issue 35)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from tests.study_files import D, R, study_document

from agentstudy.protocol.manifest import ManifestError, parse_manifest
from agentstudy.protocol.schedule import block_schedule
from agentstudy.protocol.sequential import SequentialDesign
from agentstudy.protocol.sequential_plan import SequentialMonitor, SequentialPlan, plan_sequential, replay, task_order


def sequential_study(tasks: int, repetitions: int, **sequential: Any) -> dict[str, Any]:
    document = study_document({"alpha": tasks}, repetitions)
    document["design"] = {"sequential": {"maxTasks": tasks, "alpha": 0.05, "futility": 0.1, **sequential}}
    return document


def test_futility_defaults_to_the_designs_floor() -> None:
    """``design.sequential`` without ``futility`` is the default floor 0.1 (issue 42); ``null`` is none."""
    document = sequential_study(10, 1)
    del document["design"]["sequential"]["futility"]
    loaded = parse_manifest(json.dumps(document))
    assert plan_sequential(loaded.manifest, loaded.protocol_hash).design.futility == 0.1
    loaded = parse_manifest(json.dumps(sequential_study(10, 1, futility=None)))
    assert plan_sequential(loaded.manifest, loaded.protocol_hash).design.futility is None


def test_the_study_file_carries_the_design_and_refuses_bad_ones() -> None:
    loaded = parse_manifest(json.dumps(sequential_study(10, 2, seed=11)))
    plan = plan_sequential(loaded.manifest, loaded.protocol_hash)
    assert plan.design == SequentialDesign(max_tasks=10, alpha=0.05, futility=0.1, construction="magnitudeBet",
                                           bet_size=1.092)  # 0.9 sqrt(ln 20 / 10) + 2 ln 20 / 10, rounded
    assert plan.seed == 11 and plan.repetitions == 2 and plan.metric == "inputTokens"
    assert sorted(plan.task_order) == sorted(task.id for task in loaded.manifest.tasks)
    assert plan.task_order == task_order([t.id for t in loaded.manifest.tasks], 11, 10)
    assert plan.task_order != tuple(t.id for t in loaded.manifest.tasks)  # really shuffled
    bads: list[tuple[dict[str, Any], str]] = [({"maxTasks": 11}, "more than the study's 10 tasks"),
                         ({"maxTasks": 4}, "needs at least 5 tasks"),
                         ({"alpha": 0.0}, "alpha"), ({"futility": 2.0}, "futility"), ({"extra": 1}, "extra")]
    for bad, message in bads:
        with pytest.raises(ManifestError, match=message):
            parse_manifest(json.dumps(sequential_study(10, 1, **bad)))
    with pytest.raises(ManifestError, match="one agent"):
        document = sequential_study(10, 1)
        document["agents"] = ["claude-code", "codex"]
        parse_manifest(json.dumps(document))


def test_without_a_design_the_defaults_and_the_hash_seed() -> None:
    loaded = parse_manifest(json.dumps(study_document({"alpha": 8}, 1)))
    plan = plan_sequential(loaded.manifest, loaded.protocol_hash)
    assert plan.design.max_tasks == 8 and plan.design.alpha == 0.05
    assert plan.seed == int(loaded.protocol_hash[:15], 16)
    with pytest.raises(ValueError, match="decides on"):
        plan_sequential(loaded.manifest, loaded.protocol_hash, metric="correctness")


def test_the_block_schedule_is_complete_blocks_counterbalanced() -> None:
    loaded = parse_manifest(json.dumps(sequential_study(8, 3, maxTasks=7)))
    plan = plan_sequential(loaded.manifest, loaded.protocol_hash)
    schedule = block_schedule(loaded.manifest, plan.task_order)
    assert len(schedule) == 7 * 3 * 2
    blocks = [schedule[i:i + 6] for i in range(0, len(schedule), 6)]
    assert [block[0].task_id for block in blocks] == list(plan.task_order)
    for t, block in enumerate(blocks):
        assert {e.task_id for e in block} == {plan.task_order[t]}
        assert Counter((e.scenario, e.repetition) for e in block) == Counter(
            (s, r) for s in (R, D) for r in (1, 2, 3))
        firsts = [block[2 * r].scenario for r in range(3)]
        assert firsts == ([R, D, R] if t % 2 == 0 else [D, R, D])


def observation(task: str, scenario: str, tokens: int | None, status: str = "completed") -> dict[str, Any]:
    return {"taskId": task, "scenario": scenario, "status": status, "inputTokens": tokens, "usageComplete": True}


def test_the_monitor_looks_once_per_completed_task_and_stops() -> None:
    plan = SequentialPlan(SequentialDesign(max_tasks=10, alpha=0.05, futility=0.1), "inputTokens", "lower", 1,
                          tuple(f"t{i}" for i in range(10)), 2)
    monitor = SequentialMonitor(plan)
    seen = []
    for i in range(10):
        for rep in range(2):
            for scenario, tokens in ((R, 1000 + rep), (D, 800 - i)):
                look = monitor.observe(observation(f"t{i}", scenario, tokens), now=f"2026-12-03T00:00:{i:02d}.000Z")
                seen.append(look)
    looks = [look for look in seen if look is not None]
    assert [look.tasks for look in looks] == [1, 2, 3, 4, 5, 6, 7]
    assert looks[-1].decision == "efficacy" and monitor.stopped
    record = monitor.record()
    assert record.stopped_early and record.stop_reason == "efficacy"
    assert record.tasks_completed == 7 and record.direction == "better"
    assert record.stopped_at == "2026-12-03T00:00:06.000Z"
    # The same observations replayed (the verifier's way) give the same looks.
    replayed = replay(record, 2, [observation(f"t{i}", s, t) for i in range(10) for rep in range(2)
                                  for s, t in ((R, 1000 + rep), (D, 800 - i))])
    assert replayed.looks == monitor.looks


def test_a_missing_value_bets_nothing() -> None:
    plan = SequentialPlan(SequentialDesign(max_tasks=10, alpha=0.05, futility=None), "inputTokens", "lower", 1,
                          tuple(f"t{i}" for i in range(10)), 1)
    monitor = SequentialMonitor(plan)
    monitor.observe(observation("t0", R, 100))
    look = monitor.observe(observation("t0", D, None, status="failed"))
    assert look is not None and look.e_value == 1.0
    incomplete = {**observation("t1", D, 10), "usageComplete": False}
    monitor.observe(observation("t1", R, 100))
    second = monitor.observe(incomplete)
    assert second is not None and second.e_value == 1.0


def _run(design: SequentialDesign, better_when: str, tokens: list[tuple[int, int]]) -> SequentialMonitor:
    plan = SequentialPlan(design, "inputTokens", better_when,  # type: ignore[arg-type]
                          1, tuple(f"t{i}" for i in range(len(tokens))), 1)
    monitor = SequentialMonitor(plan)
    for i, (control, treatment) in enumerate(tokens):
        monitor.observe(observation(f"t{i}", R, control))
        monitor.observe(observation(f"t{i}", D, treatment))
    return monitor


def test_the_one_sided_test_never_declares_a_worse_treatment_efficacious() -> None:
    """Issue 41 item 7: the new construction tests the declared direction only; a treatment worse on every task
    stops for futility (the legacy two-sided one declares it "worse" with efficacy), and the block says so."""
    worse = [(1000, 1400 + 10 * i) for i in range(12)]  # lower is better: the treatment reads more on every task
    one_sided = _run(SequentialDesign(max_tasks=12, alpha=0.05, futility=0.1, construction="magnitudeMixture"),
                     "lower", worse)
    assert one_sided.looks[-1].decision == "futility" and len(one_sided.looks) < 12
    assert all(look.e_value < 1 for look in one_sided.looks)
    record = one_sided.record()
    assert (record.construction, record.sidedness, record.direction) == ("magnitudeMixture", "one-sided", None)
    from agentstudy.report.sequential import verdict

    assert verdict(record, "MCP").startswith("MCP not shown better on input tokens (e-value ")
    legacy = _run(SequentialDesign(max_tasks=12, alpha=0.05, futility=0.1), "lower", worse)
    assert legacy.looks[-1].decision == "efficacy" and legacy.looks[-1].direction == "worse"
    assert legacy.record().construction is None  # a legacy block keeps its older form (and its hash)
    # The same differences declared the other way round (higher is better) stop for efficacy, "better".
    better = _run(SequentialDesign(max_tasks=12, alpha=0.05, futility=0.1, construction="magnitudeMixture"),
                  "higher", worse)
    assert better.looks[-1].decision == "efficacy" and better.record().direction == "better"
    # Each replays with its own construction, and only with it.
    observed = [observation(f"t{i}", s, t) for i, (c, d) in enumerate(worse) for s, t in ((R, c), (D, d))]
    assert replay(record, 1, observed).looks == one_sided.looks
    assert replay(legacy.record(), 1, observed).looks == legacy.looks
    assert replay(record.model_copy(update={"construction": None}), 1, observed).looks != one_sided.looks


def test_the_one_sided_confidence_sequence_bounds_the_better_side_only() -> None:
    from agentstudy.protocol.sequential_confidence import confidence_sequence

    differences: list[float | None] = [300.0 + 17 * (i % 5) for i in range(10)]
    higher = confidence_sequence(differences, "higher", 0.05, "magnitudeMixture")
    assert higher.estimate is not None and higher.low is not None and 0 < higher.low < higher.estimate
    assert higher.high is None
    lower = confidence_sequence([-d for d in differences if d is not None], "lower", 0.05, "magnitudeMixture")
    assert lower.estimate is not None and lower.high is not None and lower.estimate < lower.high < 0
    assert lower.low is None
    legacy = confidence_sequence(differences, "higher", 0.05)
    assert legacy.low is not None and legacy.high is not None  # the two-sided one bounds both


@pytest.mark.parametrize("sizes_seed", [1, 2, 3])
def test_the_one_sided_rule_rejects_at_most_alpha_over_every_sign_vector(sizes_seed: int) -> None:
    """Exact (no simulation): under the sign-flip null every one of the 2^12 sign vectors of fixed sizes is equally
    likely, and the runners' whole one-sided rule (efficacy, futility, out of reach) declares efficacy in at most
    an alpha share of them, at whatever look it stops."""
    import itertools

    import numpy as np

    from agentstudy.protocol.sequential import DECISIONS, decisions, e_values, first_stop

    n, alpha = 12, 0.2  # alpha 0.2 so that 12 tasks can reach it; the bound is Ville's, the same at any alpha
    sizes = np.random.default_rng(sizes_seed).lognormal(0.0, 1.0, n)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
    design = SequentialDesign(max_tasks=n, alpha=alpha, futility=0.1, construction="magnitudeMixture")
    e, _ = e_values(signs * sizes, "higher", "magnitudeMixture")
    assert np.allclose(e.mean(axis=0), 1.0)  # a test martingale: mean 1 at every look
    _, codes = first_stop(decisions(e, design))
    rejected = float((codes == DECISIONS.index("efficacy")).mean())
    assert 0 < rejected <= alpha
