"""Properties of content addressing and execution selection (hypothesis)."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstudy.protocol.controlled.contracts import create_contract
from agentstudy.protocol.controlled.hashing import canonical_json, js_json, js_number, sha256_normalized_v1
from agentstudy.protocol.controlled.plan import PairwiseSampling
from agentstudy.protocol.controlled.selection import count_by_stratum, select_task_executions
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1

ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"
SCENARIOS = ("repository-only", "deterministic-doc-bridge", "registry-assisted")

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=25,
)
documents = st.dictionaries(st.text(max_size=6), json_values, min_size=1, max_size=6)


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


@given(documents, st.randoms(use_true_random=False))
def test_hash_is_invariant_under_key_order(document: dict[str, Any], rng: random.Random) -> None:
    assert sha256_normalized_v1(_shuffled(document, rng)) == sha256_normalized_v1(document)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict) and value:
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]
    if isinstance(value, list) and value:
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, (*path, index))]
    return [path]


def _changed(value: Any) -> Any:
    if value is None:
        return 0
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.0 if abs(value) < 1e15 else value / 2
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [None]
    return {"k": None}


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], tuple(rest), new)}
    return [(_replace(item, tuple(rest), new) if index == head else item) for index, item in enumerate(value)]


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


@given(documents, st.data())
def test_hash_changes_with_any_value_change(document: dict[str, Any], data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_leaves(document)))
    mutated = _replace(document, path, _changed(_get(document, path)))
    assert sha256_normalized_v1(mutated) != sha256_normalized_v1(document)


@given(documents)
def test_canonical_text_parses_back_to_the_same_hash(document: dict[str, Any]) -> None:
    text = canonical_json(document)
    assert sha256_normalized_v1(json.loads(text)) == sha256_normalized_v1(document)
    assert json.loads(js_json(document, indent=2)) == json.loads(text)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_numbers_round_trip_and_integral_values_have_no_fraction(value: float) -> None:
    text = js_number(value)
    assert float(text) == value
    if value.is_integer() and abs(value) < 1e21:
        assert "." not in text and "e" not in text
    assert "e-0" not in text and "e+0" not in text


# --- selection --------------------------------------------------------------------------------


@cache
def _suite_document() -> str:
    path = ARTIFACTS / "task-suite-v1.json"
    if not path.is_file():
        pytest.fail(f"original artifact missing: {path}")
    return path.read_text(encoding="utf-8")


@cache
def suite_for(population: int, replicates: int, seed: str) -> StudyTaskSuiteV1:
    document = json.loads(_suite_document())
    document["population"] = document["population"][:population]
    document["tasks"] = [task for task in document["tasks"] if task["repositoryId"] in document["population"]]
    document["replicatesPerTask"] = replicates
    document["maxRuns"] = len(document["tasks"]) * 6 * replicates
    document["ordering"]["seed"] = seed
    return create_contract(StudyTaskSuiteV1, document).model


seeds = st.from_regex(r"[a-z0-9][a-z0-9._:-]{0,12}", fullmatch=True)
arms = st.permutations(SCENARIOS).map(lambda order: (order[0], order[1]))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), seeds)
def test_selection_is_deterministic(population: int, replicates: int, seed: str) -> None:
    suite = suite_for(population, replicates, seed)
    first = select_task_executions(suite)
    assert first == select_task_executions(suite)
    assert first == select_task_executions(StudyTaskSuiteV1.model_validate(suite.to_document()))
    assert len(first) == population * 4 * 6 * replicates == len(set(first))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), seeds, arms, st.data())
def test_pairwise_arms_share_task_model_repository_and_replicate(
    population: int, replicates: int, seed: str, pair: tuple[str, str], data: st.DataObject,
) -> None:
    suite = suite_for(population, replicates, seed)
    task_count = data.draw(st.integers(1, population * 4))
    size = task_count * 4
    sampling = PairwiseSampling.model_validate({"strategy": "pairwise-task-strata", "sampleSize": size,
                                               "scenarioIds": list(pair)})
    executions = select_task_executions(suite, size, sampling)
    assert executions == select_task_executions(suite, size, sampling)
    assert len(executions) == size
    cells: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for item in executions:
        cells[(item.task_id, item.model_id)].append(item)
    assert len(cells) == task_count * 2
    for (_task, _model), pair_items in cells.items():
        assert sorted(item.scenario_id for item in pair_items) == sorted(pair)
        assert len({(item.task_id, item.model_id, item.repository_id, item.replicate) for item in pair_items}) == 1
        assert pair_items[0].replicate == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(1, 3), seeds, st.data())
def test_balanced_fills_every_stratum_equally(population: int, replicates: int, seed: str,
                                              data: st.DataObject) -> None:
    suite = suite_for(population, replicates, seed)
    per_stratum = data.draw(st.integers(1, population * 4 // 6))
    executions = select_task_executions(suite, per_stratum * 6)
    strata = count_by_stratum(executions)
    assert len(strata) == 6 and set(strata.values()) == {per_stratum}
    assert len({item.task_id for item in executions}) == len(executions)
    assert Counter(item.replicate for item in executions) == Counter({0: len(executions)})
