"""The ``magnitudeBet`` construction (issue 41 item 7): one bet size per study, planned from its horizon, recorded
as ``betSize`` and read back (never recomputed) by replay, continuations and the confidence sequence; exactly a
test martingale under the sign-flip null (every sign vector enumerated) and valid by simulation under the runners'
whole rule."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pytest

from agentstudy.protocol.sequential import (
    CONSTRUCTION,
    DECISIONS,
    SequentialDesign,
    decisions,
    e_values,
    first_stop,
    new_design,
)
from agentstudy.protocol.sequential_bet import bet_e_process, mean_size_standardized, planned_bet_size
from agentstudy.protocol.sequential_plan import SequentialMonitor, SequentialPlan, plan_from_record, replay

R, D = "repository-only", "doc-bridge-mcp"


def _observation(task: str, scenario: str, tokens: float | None) -> dict[str, Any]:
    return {"taskId": task, "scenario": scenario, "status": "completed", "inputTokens": tokens}


@pytest.mark.parametrize("bet", [0.3, 0.648, 1.9])
@pytest.mark.parametrize("sizes", [(3.0, 1.0, 0.5, 8.0, 2.0, 2.0, 0.1, 5.0, 1.5, 0.7),
                                   (0.0, 2.0, 0.0, 7.0, 1.0, 1.0, 9.0, 0.2, 0.0, 3.0)])
def test_every_e_value_has_mean_one_over_all_sign_flips(sizes: tuple[float, ...], bet: float) -> None:
    """Under the sign-flip null the 2^n sign vectors are equally likely: the mean of E_t over them is exactly 1 at
    every t, and so is the mean of E at a stopping time (the first crossing of 3, else the last look)."""
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(sizes))))
    e = bet_e_process(signs * np.array(sizes), "higher", bet)
    assert np.allclose(e.mean(axis=0), 1.0, atol=1e-12)
    crossed = e >= 3.0
    stop = np.where(crossed.any(axis=1), crossed.argmax(axis=1), len(sizes) - 1)
    assert e[np.arange(len(signs)), stop].mean() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("sizes_seed", [1, 2, 3])
def test_the_whole_rule_rejects_at_most_alpha_over_every_sign_vector(sizes_seed: int) -> None:
    """Exact: under the sign-flip null every one of the 2^12 sign vectors of fixed sizes is equally likely, and the
    runners' whole rule with the planned bet (efficacy, futility, out of reach) declares efficacy in at most an alpha
    share of them, at whatever look it stops (alpha 0.2 so that 12 tasks can reach it; Ville's bound is the same)."""
    n, alpha = 12, 0.2
    design = new_design(n, alpha, 0.1)
    sizes = np.random.default_rng(sizes_seed).lognormal(0.0, 1.0, n)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
    e, _ = e_values(signs * sizes, "higher", design.construction, design.bet_size)
    assert np.allclose(e.mean(axis=0), 1.0)
    _, codes = first_stop(decisions(e, design))
    assert 0 < float((codes == DECISIONS.index("efficacy")).mean()) <= alpha


def test_the_whole_rule_keeps_its_type_one_error_under_sign_flip_nulls() -> None:
    """20,000 simulated null studies of 20 tasks a shape (seeded): the runners' rule with the planned bet declares
    efficacy in at most alpha + 3 Monte Carlo SE of them."""
    design = new_design(20, 0.05, 0.1)
    rng = np.random.default_rng(2041)
    studies = 20_000
    shapes = {"normal": rng.standard_normal((studies, 20)),
              "heavy": rng.standard_t(2, (studies, 20)),
              "skewed-symmetric": rng.exponential(1.0, (studies, 20)) ** 2 * rng.choice((-1.0, 1.0), (studies, 20))}
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / studies)
    for name, d in shapes.items():
        _, codes = first_stop(decisions(e_values(d, "higher", design.construction, design.bet_size)[0], design))
        rate = float((codes == DECISIONS.index("efficacy")).mean())
        assert 0 < rate <= bound, (name, rate)
    # ... and the rule has power where the fixed design does: a 0.8 SD effect is usually found.
    shifted = rng.standard_normal((4000, 20)) + 0.8
    _, codes = first_stop(decisions(e_values(shifted, "higher", design.construction, design.bet_size)[0], design))
    assert float((codes == DECISIONS.index("efficacy")).mean()) > 0.7


def test_the_planned_bet_shrinks_with_the_horizon_and_grows_with_the_evidence_asked() -> None:
    assert planned_bet_size(20, 0.05) == 0.648  # 0.9 sqrt(ln 20 / 20) + 2 ln 20 / 20, rounded to 3 decimals
    assert planned_bet_size(10, 0.05) == 1.092 and planned_bet_size(40, 0.05) == 0.396
    sizes = [planned_bet_size(n, 0.05) for n in (5, 7, 10, 20, 40, 100, 1000)]
    assert sizes == sorted(sizes, reverse=True)
    assert planned_bet_size(20, 0.01) > planned_bet_size(20, 0.05)
    for bad in ((0, 0.05), (20, 0.0), (20, 1.0)):
        with pytest.raises(ValueError, match="bet size"):
            planned_bet_size(*bad)
    assert new_design(20, 0.05, 0.1) == SequentialDesign(max_tasks=20, alpha=0.05, futility=0.1,
                                                         construction=CONSTRUCTION, bet_size=0.648)
    with pytest.raises(ValueError, match="needs at least 5 tasks"):
        new_design(4, 0.05, 0.1)


def test_the_bet_size_belongs_to_magnitude_bet_only() -> None:
    with pytest.raises(ValueError, match="betSize is required"):
        SequentialDesign(max_tasks=20, alpha=0.05, construction="magnitudeBet")
    with pytest.raises(ValueError, match="betSize is required"):
        SequentialDesign(max_tasks=20, alpha=0.05, construction="magnitudeMixture", bet_size=0.5)
    with pytest.raises(ValueError, match="betSize must be a positive number"):
        SequentialDesign(max_tasks=20, alpha=0.05, construction="magnitudeBet", bet_size=-1.0)
    with pytest.raises(ValueError, match="not reached"):  # a bet too small to ever reach 1/alpha
        SequentialDesign(max_tasks=20, alpha=0.05, construction="magnitudeBet", bet_size=1e-9)
    with pytest.raises(ValueError, match="needs its bet size"):
        e_values(np.ones(3), "higher", "magnitudeBet")


def test_scale_free_direction_aware_and_missing_tasks_bet_nothing() -> None:
    d = np.array([-120.0, -80.0, np.nan, -200.0, 0.0, -60.0])
    e = bet_e_process(d, "lower", 0.648)
    assert np.allclose(bet_e_process(d * 1000, "lower", 0.648), e)
    assert np.allclose(bet_e_process(-d, "higher", 0.648), e)
    assert e[2] == pytest.approx(e[1]) and e[4] == pytest.approx(e[3])  # a NaN or a tie leaves the wealth
    z = mean_size_standardized(np.array([0.0, 0.0, 3.0, -1.0, np.nan, 2.0]))
    assert z.tolist() == [0.0, 0.0, 3.0, pytest.approx(-1.0), 0.0, pytest.approx(2 / 1.2)]  # a tie counts, a NaN not
    big = mean_size_standardized(np.array([1e-9, 1e-9, 1e-9, 1e9]))
    assert np.all(np.abs(big) <= np.arange(1, 5) + 1e-12)  # |z_i| <= i: the mean size is at least |d_i| / i
    assert bet_e_process(np.array([1.0, 1.0, 1.0, 1.0, 6.0]), "higher", 0.648)[-1] > \
        bet_e_process(np.array([1.0, 1.0, 1.0, 1.0, 0.2]), "higher", 0.648)[-1]


def _monitor(design: SequentialDesign, differences: list[float]) -> tuple[SequentialMonitor, list[dict[str, Any]]]:
    ids = tuple(f"t{i}" for i in range(design.max_tasks))
    monitor = SequentialMonitor(SequentialPlan(design, "inputTokens", "higher", 1, ids, 1, ids))
    observed = [_observation(f"t{i}", s, v) for i, d in enumerate(differences) for s, v in ((R, 1000.0),
                                                                                            (D, 1000.0 + d))]
    for observation in observed:
        monitor.observe(observation)
    return monitor, observed


def test_the_recorded_bet_size_is_the_one_replay_uses() -> None:
    """A block records ``betSize``; replay reads it (a block with another bet replays to other e-values, one
    without refuses), and a plan read back from a block keeps it whatever its ``maxTasks`` would plan now."""
    differences = [30.0, -10.0, 25.0, 40.0, -5.0, 35.0, 20.0, 15.0]
    design = SequentialDesign(max_tasks=20, alpha=0.05, futility=None, construction="magnitudeBet", bet_size=0.9)
    monitor, observed = _monitor(design, differences)
    record = monitor.record()
    assert (record.construction, record.sidedness, record.bet_size) == ("magnitudeBet", "one-sided", 0.9)
    assert record.model_dump(by_alias=True)["betSize"] == 0.9
    assert plan_from_record(record, 1).design.bet_size == 0.9 != planned_bet_size(20, 0.05)
    assert replay(record, 1, observed).looks == monitor.looks
    changed = replay(record.model_copy(update={"bet_size": 0.648}), 1, observed).looks
    assert [look.e_value for look in changed] != [look.e_value for look in monitor.looks]
    with pytest.raises(ValueError, match="betSize is required"):
        replay(record.model_copy(update={"bet_size": None}), 1, observed)
    with pytest.raises(ValueError, match="betSize is required"):
        replay(record.model_copy(update={"construction": "magnitudeMixture"}), 1, observed)


def test_the_confidence_sequence_inverts_the_recorded_bet() -> None:
    from agentstudy.protocol.sequential_confidence import confidence_sequence

    differences: list[float | None] = [300.0 + 17 * (i % 5) for i in range(10)]
    small = confidence_sequence(differences, "higher", 0.05, "magnitudeBet", 0.4)
    planned = confidence_sequence(differences, "higher", 0.05, "magnitudeBet", 0.648)
    assert small.low is not None and planned.low is not None and small.high is None and planned.high is None
    assert 0 < planned.low < planned.estimate and small.low != planned.low  # type: ignore[operator]
    with pytest.raises(ValueError, match="bet size"):
        confidence_sequence(differences, "higher", 0.05, "magnitudeBet")


def test_a_continuation_keeps_the_chains_first_bet_size() -> None:
    """A run continuing a sequential chain that had not stopped goes on under the chain's block: its bet size is the
    recorded one, not what the study file's maxTasks would plan today, and its own block records it again."""
    from types import SimpleNamespace
    from typing import cast

    from tests.study_files import study_document

    from agentstudy.commands.minimal_outcome import continued_plan
    from agentstudy.protocol.manifest import parse_manifest

    document = study_document({"alpha": 20}, 1)
    document["design"] = {"sequential": {"maxTasks": 20, "alpha": 0.05, "futility": 0.1, "seed": 3}}
    loaded = parse_manifest(json.dumps(document))
    fresh = continued_plan(loaded, True, False, None)
    assert fresh is not None and fresh.design.bet_size == planned_bet_size(20, 0.05) == 0.648
    design = SequentialDesign(max_tasks=20, alpha=0.05, futility=0.1, construction="magnitudeBet", bet_size=0.9)
    chain, _ = _monitor(design, [30.0, -10.0, 25.0])
    predecessor = cast(Any, SimpleNamespace(ledger=SimpleNamespace(sequential=chain.record())))
    continued = continued_plan(loaded, True, False, predecessor)
    assert continued is not None and continued.design.bet_size == 0.9
    assert SequentialMonitor(continued).record().bet_size == 0.9


@pytest.mark.parametrize("name, stop", [("efficacy", 7), ("futility", 4)])
def test_a_grid_ledger_written_before_replays_unchanged_and_keeps_its_hash(name: str, stop: int) -> None:
    """Ledgers written by the code before ``magnitudeBet`` (the rehearsal study of tests/sequential_study.py, one
    stopping for efficacy, one for futility; kept byte for byte in tests/data) record ``magnitudeMixture`` and no
    ``betSize``: they verify, re-serialise to the same hash and replay to the same looks; the efficacy one's
    confidence sequence is the one that code computed."""
    from pathlib import Path

    from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger
    from agentstudy.protocol.records import MinimalLedger
    from agentstudy.protocol.sequential_confidence import confidence_sequence

    text = (Path(__file__).parent / "data" / f"sequential-mixture-{name}-ledger.json").read_text()
    document = json.loads(text)
    assert "betSize" not in document["sequential"] and document["sequential"]["construction"] == "magnitudeMixture"
    assert verify_ledger(document).problems == ()
    ledger = MinimalLedger.model_validate(document)
    assert seal_ledger(ledger.to_json())["ledgerHash"] == document["ledgerHash"]
    record = ledger.sequential
    assert record is not None and record.bet_size is None and record.tasks_completed == stop
    replayed = replay(record, 1, document["observations"])
    assert [(a.tasks, a.decision) for a in replayed.looks] == [(b.tasks, b.decision) for b in record.looks]
    assert all(a.e_value == pytest.approx(b.e_value, rel=1e-12) for a, b in zip(replayed.looks, record.looks,
                                                                                 strict=True))
    if name == "efficacy":
        sequence = confidence_sequence(replayed.differences, "higher", 0.05, "magnitudeMixture")
        assert sequence.low == pytest.approx(483.0187500000002, rel=1e-12) and sequence.high is None
