"""Execution selection on the original suite: the canonical 288, balanced 24, pairwise 96 (digest 5.4, 6.3)."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.controlled.contracts import LoadedContract, create_contract, parse_contract
from agentstudy.protocol.controlled.plan import BalancedSampling, ControlledStudyRunPlanV1, PairwiseSampling
from agentstudy.protocol.controlled.selection import (
    SelectionError,
    check_plan_matches_suite,
    count_by_stratum,
    select_for_plan,
    select_task_executions,
)
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1

ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"


@cache
def _text(name: str) -> str:
    path = ARTIFACTS / name
    if not path.is_file():
        pytest.fail(f"original artifact missing: {path}")
    return path.read_text(encoding="utf-8")


def suite() -> LoadedContract[StudyTaskSuiteV1]:
    return parse_contract(StudyTaskSuiteV1, _text("task-suite-v1.json"))


def pairwise(size: int, arms: tuple[str, str] = ("repository-only", "deterministic-doc-bridge")) -> PairwiseSampling:
    return PairwiseSampling.model_validate({"strategy": "pairwise-task-strata", "sampleSize": size,
                                           "scenarioIds": list(arms)})


def test_canonical_matrix_is_288_with_six_of_each_variant_per_task() -> None:
    executions = select_task_executions(suite().model)
    assert len(executions) == 288 == len(set(executions))
    per_task = Counter((item.task_id, item.variant_id) for item in executions)
    assert set(per_task.values()) == {6} and len(per_task) == 48
    assert select_task_executions(suite().model, 288) == executions


def test_canonical_order_is_by_seeded_hash() -> None:
    loaded = suite()
    executions = select_task_executions(loaded.model)
    document = json.loads(_text("task-suite-v1.json"))
    document["ordering"]["seed"] = "another-seed"
    reseeded = select_task_executions(create_contract(StudyTaskSuiteV1, document).model)
    assert reseeded != executions and len(reseeded) == 288
    assert Counter(item.stratum for item in reseeded) == Counter(item.stratum for item in executions)


def test_balanced_24_takes_every_task_once_and_fills_each_stratum_with_four() -> None:
    sampling = BalancedSampling.model_validate({"strategy": "balanced-task-strata", "sampleSize": 24})
    executions = select_task_executions(suite().model, 24, sampling)
    assert len({item.task_id for item in executions}) == 24
    assert set(count_by_stratum(executions).values()) == {4} and len(count_by_stratum(executions)) == 6
    assert {item.replicate for item in executions} == {0}
    assert [item.task_id for item in executions] == [task.id for task in suite().model.tasks]


@pytest.mark.parametrize(("size", "reason"), [(23, "divisible by the 6"), (30, "between 1 and 24"),
                                              (0, "between 1 and 24")])
def test_balanced_sizes_that_cannot_be_selected(size: int, reason: str) -> None:
    with pytest.raises(SelectionError, match=reason):
        select_task_executions(suite().model, size)


def test_pairwise_96_runs_every_task_model_and_arm_once() -> None:
    executions = select_task_executions(suite().model, 96, pairwise(96))
    assert len(executions) == 96
    assert set(Counter(item.task_id for item in executions).values()) == {4}
    cells = Counter((item.task_id, item.model_id, item.scenario_id) for item in executions)
    assert set(cells.values()) == {1} and len(cells) == 96
    assert {item.scenario_id for item in executions} == {"repository-only", "deterministic-doc-bridge"}
    assert {item.replicate for item in executions} == {0}


def test_pairwise_smaller_sample_keeps_both_arms_of_each_chosen_task() -> None:
    executions = select_task_executions(suite().model, 12, pairwise(12, ("repository-only", "registry-assisted")))
    assert len({item.task_id for item in executions}) == 3
    arms: dict[tuple[str, str], set[str]] = {}
    for item in executions:
        arms.setdefault((item.task_id, item.model_id), set()).add(item.scenario_id)
    assert all(value == {"repository-only", "registry-assisted"} for value in arms.values()) and len(arms) == 6


@pytest.mark.parametrize(("size", "arms", "reason"), [
    (10, ("repository-only", "registry-assisted"), "divisible by the 4"),
    (100, ("repository-only", "registry-assisted"), "between 1 and 96"),
])
def test_pairwise_sizes_that_cannot_be_selected(size: int, arms: tuple[str, str], reason: str) -> None:
    with pytest.raises(SelectionError, match=reason):
        select_task_executions(suite().model, size, pairwise(8, arms).model_copy(update={"sample_size": size}))


def test_pairwise_scenarios_must_be_suite_scenarios() -> None:
    document: dict[str, Any] = json.loads(_text("task-suite-v1.json"))
    document["scenarioIds"][2] = "web-assisted"
    other = create_contract(StudyTaskSuiteV1, document).model
    with pytest.raises(SelectionError, match="pairwise sampling needs two distinct suite scenarios"):
        select_task_executions(other, 8, pairwise(8, ("repository-only", "registry-assisted")))


def test_plan_and_suite_must_match() -> None:
    plan = parse_contract(ControlledStudyRunPlanV1, _text("run-plan-v1.json"))
    loaded = suite()
    assert len(select_for_plan(plan.model, loaded.model, loaded.content_hash)) == 24
    with pytest.raises(SelectionError, match="taskSuiteHash: the plan names suite d7810828"):
        check_plan_matches_suite(plan.model, loaded.model, "0" * 64)
    document = json.loads(_text("run-plan-v1.json"))
    document["taskIds"][0] = "consumer-99-discovery"
    other = create_contract(ControlledStudyRunPlanV1, document)
    with pytest.raises(SelectionError, match="taskIds: the plan's ids"):
        check_plan_matches_suite(other.model, loaded.model, loaded.content_hash)


def test_selection_of_a_two_repository_suite() -> None:
    document: dict[str, Any] = json.loads(_text("task-suite-v1.json"))
    document["population"] = document["population"][:2]
    document["tasks"] = [task for task in document["tasks"] if task["repositoryId"] in document["population"]]
    small = create_contract(StudyTaskSuiteV1, document).model
    assert len(select_task_executions(small)) == 96
    balanced = select_task_executions(small, 6)
    assert set(count_by_stratum(balanced).values()) == {1} and len(balanced) == 6
    with pytest.raises(SelectionError, match="between 1 and 8"):
        select_task_executions(small, 12)
