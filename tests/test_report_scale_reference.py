"""The report's and power's faster paths (issue 29, scale) give exactly what the straightforward computations
they replaced give: each reference below is the former code, kept here as the definition.

No timing: speed is measured in bench/bench_report_scale.py.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentstudy.protocol.arm_differences import SHOWN_TASKS
from agentstudy.protocol.treatment import used_server
from agentstudy.report import power as power_module
from agentstudy.report.analysis import analyse
from agentstudy.report.inversion import (
    _BATCH,
    PACKED_MIN_TASKS,
    SignFlipNull,
    inverted_interval,
    p_at,
    sign_flip_null,
)
from agentstudy.report.load import load_study
from agentstudy.report.model import BASELINE, TREATMENT, Attempt, Study
from agentstudy.report.power import Components, minimum_detectable, point_stream, simulate_power
from agentstudy.report.treatment import summarize_treatment
from test_report_builders import TASKS, cli_obs, ledger, treatment, write

# --- the former code, verbatim but for names -------------------------------------------------------------


def _reference_null(differences: list[float], *, seed: int, max_exact: int = 16,
                    draws: int = 100_000) -> SignFlipNull:
    """The former Monte Carlo null: a float copy of every batch, its float row sums, the non-empty rows copied."""
    data = np.asarray(differences, dtype=float)
    k = int(data.size)
    assert not (k <= max_exact or 2**k <= draws), "the reference covers the Monte Carlo paths only"
    tolerance = 1e-12 * max(1.0, float(np.max(np.abs(data)))) * k
    rng = np.random.default_rng(seed)
    subsets: Callable[[int], np.ndarray]
    if k >= PACKED_MIN_TASKS:
        batch = max(64, 4_000_000 // k)

        def subsets(size: int) -> np.ndarray:
            packed = rng.integers(0, 256, size=(size, (k + 7) // 8), dtype=np.uint8)
            return np.unpackbits(packed, axis=1, count=k)
    else:
        batch = _BATCH

        def subsets(size: int) -> np.ndarray:
            return rng.random((size, k)) < 0.5
    chunks: list[np.ndarray] = []
    empty = 0
    remaining = draws
    while remaining > 0:
        size = min(batch, remaining)
        bits = subsets(size).astype(float)
        counts = bits.sum(axis=1)
        empty += int(np.sum(counts == 0))
        keep = counts > 0
        chunks.append((bits[keep] @ data) / counts[keep])
        remaining -= size
    return SignFlipNull(np.sort(np.concatenate(chunks)), 1 + empty, draws + 1, False, draws, tolerance)


def _reference_fallback_calls(attempt: Attempt) -> int:
    return sum(n for name, n in attempt.tool_calls_by_name.items() if name.startswith("mcp__"))


def _reference_used(attempt: Attempt) -> bool:
    return _reference_fallback_calls(attempt) > 0 if attempt.treatment is None else used_server(attempt.treatment)


def _reference_treatment(study: Study) -> dict[str, Any]:
    """The former per-task scans over every attempt (quadratic in attempts)."""
    treated = [a for a in study.attempts if a.scenario == TREATMENT]
    control = [a for a in study.attempts if a.scenario == BASELINE]
    tasks = dict.fromkeys(a.task_id for a in treated)

    def first(attempts: list[Attempt], task: str) -> list[int]:
        return [a.treatment.first_request_input_tokens for a in attempts if a.task_id == task and a.treatment
                and a.treatment.first_request_input_tokens is not None]

    def hashes(task: str) -> set[str]:
        return {a.treatment.prompt_sha256 for a in study.attempts
                if a.task_id == task and a.treatment and a.treatment.prompt_sha256}

    differences = []
    for task in tasks:
        with_server, without = first(treated, task), first(control, task)
        if with_server and without:
            differences.append(statistics.fmean(with_server) - statistics.fmean(without))
    return {
        "per_protocol_tasks": tuple(t for t in tasks if all(_reference_used(a) for a in treated if a.task_id == t)),
        "prompt_mismatch_tasks": tuple(t for t in dict.fromkeys(a.task_id for a in study.attempts)
                                       if len(hashes(t)) > 1),
        "tool_definition_tokens": statistics.fmean(differences) if differences else None,
    }


def _reference_pair_order(study: Study) -> list[tuple[str, str, int]]:
    order: list[tuple[str, str, int]] = []
    for attempt in study.attempts:
        key = (attempt.agent, attempt.task_id, attempt.repetition)
        if key not in order and attempt.scenario in (BASELINE, TREATMENT):
            order.append(key)
    return order


# --- the comparisons --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tasks", "draws", "seed"), [(PACKED_MIN_TASKS + 43, 100_000, 20261203),
                                                      (40, 100_000, 7), (10, 1000, 3)])
def test_the_sign_flip_null_is_the_former_one_bit_for_bit(tasks: int, draws: int, seed: int) -> None:
    rng = np.random.default_rng(tasks)
    differences = list(rng.normal(-120.0, 900.0, tasks))
    differences[1] = 0.0  # a zero difference flips to itself
    new = sign_flip_null(differences, seed=seed, max_exact=4, draws=draws)
    old = _reference_null(differences, seed=seed, max_exact=4, draws=draws)
    assert np.array_equal(new.means, old.means)
    assert (new.base, new.denominator, new.draws, new.tolerance) == (old.base, old.denominator, old.draws,
                                                                      old.tolerance)
    assert inverted_interval(new, 0.05) == inverted_interval(old, 0.05)
    assert p_at(new, 0.0) == p_at(old, 0.0)
    if tasks == 10:
        assert new.base > 1  # this seed draws empty subsets: they are counted apart, as before


def _fidelity_ledger(tmp_path: Path) -> Path:
    """Tasks interleaved and shuffled, prompt hashes that differ in two tasks, first requests missing in some
    attempts, treatment records missing in others, a task the server was not used in, a pair missing an arm."""
    shuffle = random.Random(29)
    observations: list[dict[str, Any]] = []
    for i, task in enumerate(TASKS[:6]):
        for rep in (1, 2, 3):
            control = cli_obs(task, "repository-only", rep, input_tokens=900 + 10 * i + rep)
            control["treatment"] = {**treatment(0, first_request=None if (i, rep) == (1, 2) else 3000 + 7 * rep),
                                    "server": None, "serverOffered": False, "offeredServerTools": [],
                                    "promptSha256": f"{i:064x}"}
            calls = 0 if (i == 2 and rep == 1) else rep + i % 2
            treated = cli_obs(task, "doc-bridge-mcp", rep, tool_calls=max(calls, 1), input_tokens=800 + 13 * i)
            treated["treatment"] = {**treatment(calls, first_request=3400 + 11 * i + rep),
                                    "promptSha256": f"{i + (rep if i in (3, 4) else 0):064x}"}
            if i == 5 and rep == 3:
                treated.pop("treatment")
            observations.extend([control, treated] if i == 0 else [treated, control])
    observations.pop()  # task 6, repetition 3 keeps only its treatment attempt
    shuffle.shuffle(observations)
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, mode="full", planned=len(observations)))
    return path


def test_treatment_fidelity_and_pairing_are_the_former_scans(tmp_path: Path) -> None:
    study = load_study(_fidelity_ledger(tmp_path))
    summary = summarize_treatment(study)
    expected = _reference_treatment(study)
    assert expected["prompt_mismatch_tasks"] and expected["tool_definition_tokens"] is not None  # not vacuous
    assert len(expected["per_protocol_tasks"]) < len({a.task_id for a in study.attempts})
    mismatched = expected.pop("prompt_mismatch_tasks")
    assert {key: getattr(summary, key) for key in expected} == expected
    [prompts] = [d for d in summary.differences if d.startswith("The arms were given different prompts")]
    assert prompts.startswith(f"The arms were given different prompts in {len(mismatched)} tasks "
                              f"({', '.join(mismatched[:SHOWN_TASKS])})")
    pairs = analyse(study).pairs
    assert [(p.agent, p.task_id, p.repetition) for p in pairs] == _reference_pair_order(study)
    assert len(pairs) == 18


def test_a_power_search_gives_what_fresh_draws_give(monkeypatch: pytest.MonkeyPatch) -> None:
    components = Components(tasks=300, repetitions=2, task_variance=9.0, baseline_variance=4.0, treatment_variance=5.0,
                            observed_variance=12.0)
    cached = minimum_detectable(components, 0.05, 0.8)
    k, r = 300, 2
    draws = power_module._draws(k, r, power_module.SEED, power_module.SIMULATIONS)
    assert not draws.flags.writeable
    fresh = point_stream(power_module.SEED, k, r).standard_normal((power_module.SIMULATIONS, k))
    assert np.array_equal(draws, fresh)

    def uncached(k: int, r: int, seed: int, simulations: int) -> np.ndarray:
        return point_stream(seed, k, r).standard_normal((simulations, k))

    monkeypatch.setattr(power_module, "_draws", uncached)
    assert minimum_detectable(components, 0.05, 0.8) == cached
    assert simulate_power(1.5, 3.0, k, r, 0.05) == simulate_power(1.5, 3.0, k, r, 0.05)


def test_the_pooled_variance_is_statistics_variance_exactly() -> None:
    rng = random.Random(29)
    samples: list[list[float]] = [[1.0 / 3.0] * 4, [0.1, 0.2, 0.30000000000000004], [5e-324, 1e-300, -2.5],
                                  [0.0, 0.0]]
    for n in range(2, 12):
        samples.append([float(rng.randint(0, 10**6)) for _ in range(n)])
        samples.append([rng.uniform(-1e3, 1e3) for _ in range(n)])
        samples.append([rng.uniform(0, 1) * 10.0 ** rng.randint(-150, 150) for _ in range(n)])
    for values in samples:
        assert power_module.exact_variance(values) == statistics.variance(values), values
    with pytest.raises(OverflowError):  # as statistics.variance: the exact variance is beyond a float
        power_module.exact_variance([1e300, -1e300, 0.0])
    with pytest.raises(OverflowError):
        statistics.variance([1e300, -1e300, 0.0])
