"""Compatibility with the original's own files (../shared/reference/original-artifacts)."""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import TypeVar

import pytest

from agentstudy.protocol.controlled.contracts import LoadedContract, parse_contract
from agentstudy.protocol.controlled.formats import ContractModel
from agentstudy.protocol.controlled.hashing import content_hash_of, js_json, parse_json_text
from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1, ledger_file_text
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1, PairwiseSampling
from agentstudy.protocol.controlled.selection import select_for_plan, select_task_executions
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
from agentstudy.protocol.manifest import load_manifest

M = TypeVar("M", bound=ContractModel)

ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"
PLAN_HASH = "29e95cc2d8fa7f3e6a789884943f9d2cf20896ddb5405196b5ae869e87577d28"
SUITE_HASH = "d7810828bce3c6616f00897fd7c92dfa4ecdf12e549923795cd95cc81a2b0029"
PROTOCOL_HASH = "7a56ae4da91ae56fb8b4b7e506adce525ab6fcb637d635cafb7091c2bd437adf"
LEDGER_HASH = "cc3eb8a816f961b4a4d8fdefd96365e6b89f3fd7d5aad287c3c5cc79a80ed0f5"


def artifact(name: str) -> Path:
    path = ARTIFACTS / name
    if not path.is_file():
        pytest.fail(f"original artifact missing: {path}")
    return path


@cache
def text_of(name: str) -> str:
    return artifact(name).read_text(encoding="utf-8")


def load(model: type[M], name: str) -> LoadedContract[M]:
    return parse_contract(model, text_of(name))


def test_run_plan_parses_and_verifies() -> None:
    plan = load(ControlledStudyRunPlanV1, "run-plan-v1.json")
    assert plan.verified and plan.content_hash == PLAN_HASH
    model = plan.model
    assert [m.id for m in model.models] == ["low-cost-model", "reference-model"]
    assert [s.id for s in model.scenarios] == ["repository-only", "deterministic-doc-bridge", "registry-assisted"]
    assert len(model.task_ids) == 24 and model.sampling.sample_size == 24 and model.stratum_count == 6
    assert model.budget.max_tokens == 400_000 and model.budget.max_attempts == 1
    assert model.protocol_hash == PROTOCOL_HASH and model.task_suite_hash == SUITE_HASH


def test_task_suite_parses_and_verifies() -> None:
    suite = load(StudyTaskSuiteV1, "task-suite-v1.json")
    assert suite.verified and suite.content_hash == SUITE_HASH
    assert len(suite.model.tasks) == 24 and suite.model.planned_runs == 288 == suite.model.max_runs


def test_ledger_parses_its_own_hash_verifies_and_exactly_two_observations_do_not() -> None:
    ledger = load(ControlledStudyObservationLedgerV1, "observation-ledger-v1.json")
    assert ledger.content_hash == LEDGER_HASH
    assert len(ledger.model.observations) == 448
    assert [(m.path, m.position, m.observed_at) for m in ledger.mismatches] == [
        ("observations[236]", 237, "2026-08-31T17:44:06.352Z"),
        ("observations[282]", 283, "2026-08-31T18:26:31.828Z"),
    ]
    assert content_hash_of(ledger.document) == LEDGER_HASH  # the top-level hash itself verifies


def test_protocol_hash_verifies_and_is_the_plans_protocol_hash() -> None:
    document = parse_json_text(text_of("protocol-v1.json"))
    assert document["type"] == "study-protocol"
    assert content_hash_of(document) == document["contentHash"] == PROTOCOL_HASH


def test_minimal_manifest_parses() -> None:
    loaded = load_manifest(artifact("minimal-study-v1.json"))
    assert len(loaded.manifest.tasks) == 6


FILES = [(ControlledStudyRunPlanV1, "run-plan-v1.json"), (StudyTaskSuiteV1, "task-suite-v1.json"),
         (ControlledStudyObservationLedgerV1, "observation-ledger-v1.json")]


@pytest.mark.parametrize(("model", "name"), FILES)
def test_reserialising_the_model_reproduces_the_values_and_the_hash(model: type[ContractModel], name: str) -> None:
    loaded = load(model, name)
    dumped = loaded.model.to_document()
    assert dumped == loaded.document  # same keys and values; absent optionals stay absent, nulls stay null
    assert content_hash_of(dumped) == loaded.content_hash


@pytest.mark.parametrize(("model", "name"), FILES)
def test_the_kept_document_has_the_files_key_order(model: type[ContractModel], name: str) -> None:
    loaded = load(model, name)
    assert js_json(loaded.document, indent=2) == js_json(json.loads(text_of(name)), indent=2)


def test_declaration_order_is_the_original_writers_order() -> None:
    # The ledger was written by the original program; the plan and suite were edited by hand
    # (their contentHashAlgo precedes contentHash), which is why the document is kept.
    ledger = load(ControlledStudyObservationLedgerV1, "observation-ledger-v1.json")
    assert js_json(ledger.model.to_document(), indent=2) + "\n" == text_of("observation-ledger-v1.json")
    plan = load(ControlledStudyRunPlanV1, "run-plan-v1.json")
    assert list(plan.document)[-2:] == ["contentHashAlgo", "contentHash"]
    assert list(plan.model.to_document())[-2:] == ["contentHash", "contentHashAlgo"]


def test_reserialised_observations_keep_their_own_hashes() -> None:
    ledger = load(ControlledStudyObservationLedgerV1, "observation-ledger-v1.json")
    results = [content_hash_of(item.to_document()) == item.content_hash for item in ledger.model.observations]
    assert results.count(False) == 2 and not results[236] and not results[282]


def test_ledger_file_text_reproduces_the_original_bytes() -> None:
    ledger = load(ControlledStudyObservationLedgerV1, "observation-ledger-v1.json")
    assert ledger_file_text(ledger) == text_of("observation-ledger-v1.json")


def test_task_suite_pretty_form_is_not_the_hand_formatted_file_but_hashes_equal() -> None:
    suite = load(StudyTaskSuiteV1, "task-suite-v1.json")
    rewritten = parse_json_text(js_json(suite.document, indent=2))
    assert content_hash_of(rewritten) == SUITE_HASH


def _recorded_executions() -> dict[str, set[tuple[str, str, str, int, str]]]:
    ledger = load(ControlledStudyObservationLedgerV1, "observation-ledger-v1.json")
    runs: dict[str, set[tuple[str, str, str, int, str]]] = defaultdict(set)
    for observation in ledger.model.observations:
        task = observation.task
        runs[observation.run_id].add((task.task_id, task.scenario_id, task.model_id, task.replicate, task.variant_id))
    return runs


def test_balanced_selection_reproduces_the_executions_the_original_recorded() -> None:
    plan = load(ControlledStudyRunPlanV1, "run-plan-v1.json")
    suite = load(StudyTaskSuiteV1, "task-suite-v1.json")
    selected = {(e.task_id, e.scenario_id, e.model_id, e.replicate, e.variant_id)
                for e in select_for_plan(plan.model, suite.model, suite.content_hash)}
    recorded = _recorded_executions()
    assert selected == recorded["phase-7-canonical-metrics-01"]  # the run of this very plan
    for run_id in ("phase-2-reduced-sample-run-01", "phase-5-structured-provider-recovery-01",
                   "phase-6-structured-provider-normalized-01"):
        assert selected == recorded[run_id]


def test_pairwise_selection_reproduces_the_original_ab_runs() -> None:
    suite = load(StudyTaskSuiteV1, "task-suite-v1.json")
    sampling = PairwiseSampling.model_validate(
        {"strategy": "pairwise-task-strata", "sampleSize": 96,
         "scenarioIds": ["repository-only", "deterministic-doc-bridge"]})
    selected = {(e.task_id, e.scenario_id, e.model_id, e.replicate, e.variant_id)
                for e in select_task_executions(suite.model, 96, sampling)}
    recorded = _recorded_executions()
    for run_id in ("phase-8-ab-baseline-01", "phase-8-ab-baseline-recovery-01", "phase-9-ab-adjudicated-cost-03"):
        assert selected == recorded[run_id]
    assert recorded["phase-9-ab-adjudicated-cost-01"] < selected  # a partial run of the same sample
