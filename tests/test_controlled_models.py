"""Rules of the controlled-study models: formats, counts, uniqueness, roles, sampling, tokens, configs."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.controlled.config import StudyProviderCliConfigV1, StudyRepositoryConfigV1
from agentstudy.protocol.controlled.contracts import ContractError, create_contract, load_contract
from agentstudy.protocol.controlled.formats import ContractModel, is_safe_study_text, js_length
from agentstudy.protocol.controlled.hashing import content_hash_of, with_content_hash
from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1, create_observation
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1

ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"


@cache
def _original(name: str) -> str:
    path = ARTIFACTS / name
    if not path.is_file():
        pytest.fail(f"original artifact missing: {path}")
    return path.read_text(encoding="utf-8")


def original(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(_original(name))
    return document


def first_observation() -> dict[str, Any]:
    observation: dict[str, Any] = original("observation-ledger-v1.json")["observations"][0]
    return observation


def refused(model: type[ContractModel], document: dict[str, Any], mutate: Callable[[dict[str, Any]], object]) -> str:
    """Apply ``mutate``, re-hash (so only the rule under test can fail) and return the error."""
    changed = copy.deepcopy(document)
    mutate(changed)
    with pytest.raises(ContractError) as caught:
        load_contract(model, with_content_hash(changed))
    message = str(caught.value)
    assert "\n" not in message
    return message


# --- plan -------------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(document: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = document
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return apply


PLAN_CASES = [
    ("budget/maxTokenz", 1, "budget.maxTokenz: unknown key"),
    ("budget/max_tokens", 1, "budget.max_tokens: unknown key"),
    ("models/1/id", "low-cost-model", "models: duplicate model id 'low-cost-model'"),
    ("models/1/role", "low-cost", "models: one low-cost and one reference model are required"),
    ("models/1/role", "premium", "models[1].role: Input should be 'low-cost' or 'reference'"),
    ("scenarios/1/id", "repository-only", "scenarios: duplicate scenario id 'repository-only'"),
    ("taskIds/1", "consumer-01-discovery", "taskIds: duplicate task id 'consumer-01-discovery'"),
    ("scenarios/0/network", True, "scenarios[0].network: network must be false"),
    ("scenarios/0/network", 0, "scenarios[0].network: network must be false"),
    ("scenarios/0/agentId", "some-agent", "scenarios[0].agentId: only a registry-assisted scenario"),
    ("scenarios/2/agentVersion", None, "scenarios[2].agentVersion: null is not allowed (omit the key instead)"),
    ("budget/maxAttempts", 4, "budget.maxAttempts: Input should be less than or equal to 3"),
    ("budget/maxTokens", 0, "budget.maxTokens: Input should be greater than 0"),
    ("budget/maxTokens", "400000", "budget.maxTokens: Input should be a valid integer"),
    ("budget/maxTokens", 1.5, "budget.maxTokens: Input should be a valid integer"),
    ("schemaVersion", True, "schemaVersion: must be a number, not a boolean"),
    ("protocolHash", "7A56AE4D" + "0" * 56, "protocolHash: String should match pattern"),
    ("runId", "Phase-7", "runId: String should match pattern"),
    ("models/0/model", "gpt/5", None),  # modelReference allows '/': accepted
    ("sampling/sampleSize", 23, "sampling.sampleSize: 23 is not a multiple of the 6 model×scenario strata"),
    ("sampling/sampleSize", 48, "sampling.sampleSize: 48 exceeds 24, the most balanced-task-strata can select"),
    ("sampling/sampleSize", 288, "sampling.sampleSize: 288 exceeds 24"),
    ("sampling", {"strategy": "pairwise-task-strata", "sampleSize": 96,
                  "scenarioIds": ["repository-only", "repository-only"]},
     "sampling.scenarioIds: the two pairwise scenarios must differ"),
    ("sampling", {"strategy": "pairwise-task-strata", "sampleSize": 100,
                  "scenarioIds": ["repository-only", "registry-assisted"]},
     "sampling.sampleSize: 100 exceeds 96, the most pairwise-task-strata can select"),
    ("sampling", {"strategy": "pairwise-task-strata", "sampleSize": 6,
                  "scenarioIds": ["repository-only", "registry-assisted"]},
     "sampling.sampleSize: 6 is not a multiple of the 4 model×scenario strata"),
    ("sampling", {"strategy": "pairwise-task-strata", "sampleSize": 8, "scenarioIds": ["repository-only"]},
     "sampling.scenarioIds: List should have at least 2 items"),
    ("sampling", {"strategy": "random", "sampleSize": 6},
     "sampling: Input tag 'random' found using 'strategy' does not match any of the expected tags"),
]


@pytest.mark.parametrize(("path", "value", "expected"), PLAN_CASES)
def test_plan_rules(path: str, value: Any, expected: str | None) -> None:
    plan = original("run-plan-v1.json")
    if expected is None:
        changed = copy.deepcopy(plan)
        _set(path, value)(changed)
        assert load_contract(ControlledStudyRunPlanV1, with_content_hash(changed)).verified
        return
    message = refused(ControlledStudyRunPlanV1, plan, _set(path, value))
    assert message.startswith("invalid controlled-study-run-plan: ")
    assert expected in message


def test_plan_counts() -> None:
    plan = original("run-plan-v1.json")
    three = refused(ControlledStudyRunPlanV1, plan, lambda d: d["models"].append(d["models"][0]))
    assert "models: List should have at most 2 items" in three
    missing = refused(ControlledStudyRunPlanV1, plan, lambda d: d["scenarios"].pop())
    assert "scenarios: List should have at least 3 items" in missing
    odd = refused(ControlledStudyRunPlanV1, plan, lambda d: d["taskIds"].pop())
    assert "taskIds: 23 tasks is not four tasks per repository" in odd
    absent = refused(ControlledStudyRunPlanV1, plan, lambda d: d.pop("budget"))
    assert "budget: required key is missing" in absent


def test_a_smaller_population_plan_is_valid_decision_11() -> None:
    plan = original("run-plan-v1.json")
    plan["taskIds"] = plan["taskIds"][:8]
    plan["sampling"]["sampleSize"] = 6
    loaded = create_contract(ControlledStudyRunPlanV1, plan)
    assert loaded.verified and loaded.model.max_sample_size == 8


def test_pairwise_plan_rehashes_and_parses() -> None:
    plan = original("run-plan-v1.json")
    plan["sampling"] = {"strategy": "pairwise-task-strata", "sampleSize": 96,
                        "scenarioIds": ["repository-only", "deterministic-doc-bridge"]}
    loaded = create_contract(ControlledStudyRunPlanV1, plan)
    assert loaded.content_hash != original("run-plan-v1.json")["contentHash"]
    assert loaded.model.stratum_count == 4 and loaded.model.max_sample_size == 96


# --- suite ------------------------------------------------------------------------------------


def test_suite_rules() -> None:
    suite = original("task-suite-v1.json")
    cases: list[tuple[Callable[[dict[str, Any]], object], str]] = [
        (lambda d: d["tasks"].pop(), "tasks: 6 repositories need exactly 24 tasks (four each), got 23"),
        (lambda d: d["tasks"][1].update(id="consumer-01-discovery", variantGroup="consumer-01-discovery"),
         "tasks: duplicate id 'consumer-01-discovery'"),
        (lambda d: d["population"].__setitem__(1, "consumer-01"), "population: duplicate id 'consumer-01'"),
        (lambda d: d["tasks"][0].__setitem__("objective", "Read file:///private/tmp/notes first."),
         "tasks[0].objective: unsafe study text"),
        (lambda d: d["tasks"][0]["initialContext"].append("Use the api_key = abc"),
         "tasks[0].initialContext[1]: unsafe study text"),
        (lambda d: d["tasks"][0]["budget"].__setitem__("maxTokens", 400_001),
         "tasks[0].budget.maxTokens: 400001 exceeds maxTokensPerTask 400000"),
        (lambda d: d["tasks"][0].__setitem__("variantGroup", "other"),
         "tasks[0].variantGroup: must equal the task id"),
        (lambda d: d["tasks"][0]["variants"][1].__setitem__("label", d["tasks"][0]["variants"][0]["label"]),
         "tasks[0].variants: the two variant labels must differ"),
        (lambda d: d["tasks"][0]["surfaces"]["ui"].pop("reason"),
         "tasks[0].surfaces.ui.reason: a surface that is not required needs a reason"),
        (lambda d: d["tasks"][0]["surfaces"].pop("docs"), "tasks[0].surfaces.docs: required key is missing"),
        (lambda d: d["tasks"][0].__setitem__("category", "architecture"),
         "tasks: repository 'consumer-01' needs exactly one task in each of discovery"),
        (lambda d: d["tasks"][0].__setitem__("repositoryId", "consumer-09"),
         "tasks[0].repositoryId: 'consumer-09' is not in the population"),
        (lambda d: d.__setitem__("maxRuns", 287), "maxRuns: 288 planned runs exceed maxRuns 287"),
        (lambda d: d["tasks"][0]["rubric"]["success"].__setitem__(0, {"text": "ok", "check": "evidence-coverage"}),
         "tasks[0].rubric.success[0]: Input should be a valid string"),
        (lambda d: d["tasks"][0]["acceptanceChecks"].append(d["tasks"][0]["acceptanceChecks"][0]),
         "tasks[0].acceptanceChecks: duplicate id 'discovery-check'"),
    ]
    for mutate, expected in cases:
        message = refused(StudyTaskSuiteV1, suite, mutate)
        assert expected in message, (expected, message)


def test_a_suite_of_two_repositories_is_valid_decision_11() -> None:
    suite = original("task-suite-v1.json")
    suite["population"] = suite["population"][:2]
    suite["tasks"] = [task for task in suite["tasks"] if task["repositoryId"] in suite["population"]]
    loaded = create_contract(StudyTaskSuiteV1, suite)
    assert len(loaded.model.tasks) == 8 and loaded.model.planned_runs == 96


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("Start with the repository root and declared documentation.", True),
        ("The token budget: 400000", True),  # "token budget:" is not "token:"
        ("the home directory and tmp files", True),
        ("users/alice", False),  # at the start, case-insensitive
        ("/Users/alice/src", False),
        ("C:\\Users\\alice", False),
        ("home/alice/notes", False),
        ("see /TMP/x", False),
        ("file:///private/var/x", False),
        ("token: abc", False),
        ("API-KEY = x", False),
        ("apikey\t=x", False),
        ("secret\u00a0: x", False),  # JavaScript's \s includes no-break space
        ("-----BEGIN PRIVATE KEY-----", False),
        ("visit https://example.com", False),
        ("visit HTTP://example.com", False),
        ("\u017fecret: x", True),  # long s is not 's' under JavaScript's non-unicode /i
    ],
)
def test_safe_text_rule(text: str, safe: bool) -> None:
    assert is_safe_study_text(text) is safe


def test_lengths_count_utf16_units() -> None:
    assert js_length("a\U0001f600") == 3
    suite = original("task-suite-v1.json")
    message = refused(StudyTaskSuiteV1, suite, lambda d: d.__setitem__("title", "\U0001f600" * 1025))
    assert "title: must be 1–2048 characters long (UTF-16 units), got 2050" in message


# --- observation and ledger --------------------------------------------------------------------


def _ledger_with(observations: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "controlled-study-observation-ledger", "schemaVersion": 1, "ledgerVersion": "v1",
            "observations": [with_content_hash(item) for item in observations]}


def test_observation_rules() -> None:
    base = first_observation()
    cases: list[tuple[Callable[[dict[str, Any]], object], str]] = [
        (lambda d: d["execution"].pop("tokenMethod"),
         "observations[0].execution.tokenMethod: inputTokens/outputTokens require a tokenMethod"),
        (lambda d: d.update(contextTokens=10), "observations[0].contextTokenMethod: contextTokens require"),
        (lambda d: d["task"].__setitem__("modelId", "reference-model"),
         "observations[0].task.modelId: 'reference-model' does not match model.id 'low-cost-model'"),
        (lambda d: d["task"].__setitem__("scenarioId", "repository-only"),
         "observations[0].task.scenarioId: 'repository-only' does not match scenario.id"),
        (lambda d: d["adjudication"].__setitem__("status", "automated"),
         "observations[0].adjudication: actor, method, outcome: an automated adjudication names all three"),
        (lambda d: d["adjudication"].update(confidence=1.5),
         "observations[0].adjudication.confidence: Input should be less than or equal to 1"),
        (lambda d: d["execution"].pop("exitCode"), "observations[0].execution.exitCode: required key is missing"),
        (lambda d: d["execution"].__setitem__("stdoutHash", None),
         "observations[0].execution.stdoutHash: null is not allowed"),
        (lambda d: d.__setitem__("stdout", "raw output"), "observations[0].stdout: unknown key"),
        (lambda d: d.__setitem__("observedAt", "2026-02-30T10:00:00Z"),
         "observations[0].observedAt: is not a real date and time"),
        (lambda d: d.__setitem__("observedAt", "2026-08-31 13:44:22"),
         "observations[0].observedAt: must be an ISO-8601 UTC timestamp"),
        (lambda d: d["measurements"].__setitem__("errorRate", -1),
         "observations[0].measurements.errorRate: Input should be greater than or equal to 0"),
        (lambda d: d["measurements"].__setitem__("x" * 129, 1), "observations[0].measurements"),
        (lambda d: d["evidenceIds"].append("line\nbreak"),
         "observations[0].evidenceIds[0]: must not contain NUL, CR or LF"),
        (lambda d: d["adjudication"].update(reason="see https://x"),
         "observations[0].adjudication.reason: unsafe study text"),
        (lambda d: d["execution"].__setitem__("status", "invalid-setup"),
         "observations[0].execution.status: Input should be"),
    ]
    for mutate, expected in cases:
        changed = copy.deepcopy(base)
        mutate(changed)
        with pytest.raises(ContractError) as caught:
            load_contract(ControlledStudyObservationLedgerV1, with_content_hash(_ledger_with([changed])))
        assert expected in str(caught.value), (expected, str(caught.value))



def test_observation_roundtrip_keeps_required_nulls_and_omits_absent_fields() -> None:
    loaded = create_observation({key: value for key, value in first_observation().items()
                                 if key not in ("contentHash", "contentHashAlgo")})
    document = loaded.model.to_document()
    assert document["execution"]["signal"] is None and "signal" in document["execution"]
    assert "taskOutcome" not in document and "contextTokens" not in document
    assert content_hash_of(document) == loaded.content_hash == first_observation()["contentHash"]


def test_ledger_rejects_duplicate_observations() -> None:
    observation = first_observation()
    same = refused(ControlledStudyObservationLedgerV1, _ledger_with([observation]),
                   lambda d: d["observations"].append(d["observations"][0]))
    assert "observations[1].contentHash: duplicate observation hash" in same
    replay = copy.deepcopy(observation)
    replay["observedAt"] = "2026-09-01T00:00:00.000Z"
    message = refused(ControlledStudyObservationLedgerV1, _ledger_with([observation, replay]), lambda d: None)
    assert "observations[1].task: run 'phase-2-baseline-run-01' already has an observation of task" in message


# --- configs ----------------------------------------------------------------------------------


def _provider_config(**extra: Any) -> dict[str, Any]:
    provider = {"modelId": "low-cost-model", "scenarioIds": ["repository-only", "deterministic-doc-bridge"],
                "command": "study-provider", "providerNetwork": True, "maxInputBytes": 100_000,
                "maxOutputBytes": 64_000}
    return {"type": "study-provider-cli-config", "schemaVersion": 1, "configVersion": "v1",
            "providers": [provider], **extra}


def test_provider_config_defaults_are_hashed_as_the_original_hashes_them() -> None:
    created = create_contract(StudyProviderCliConfigV1, _provider_config())
    assert created.document["providers"][0]["args"] == [] and created.document["providers"][0]["envAllowlist"] == []
    # A file written without the defaults still verifies with the same hash.
    bare = {**_provider_config(), "contentHash": created.content_hash, "contentHashAlgo": "sha256-normalized-v1"}
    reloaded = load_contract(StudyProviderCliConfigV1, bare)
    assert reloaded.verified and reloaded.content_hash == created.content_hash


def test_provider_config_rules() -> None:
    config = _provider_config()
    duplicate = copy.deepcopy(config)
    duplicate["providers"].append({**config["providers"][0], "scenarioIds": ["deterministic-doc-bridge"]})
    with pytest.raises(ContractError, match=r"providers\[1\]\.scenarioIds: duplicate mapping for model "
                                            r"'low-cost-model' and scenario 'deterministic-doc-bridge'"):
        create_contract(StudyProviderCliConfigV1, duplicate)
    cases = [
        ("command", "run\nthis", "providers[0].command: must not contain NUL, CR or LF"),
        ("envAllowlist", ["path"], "providers[0].envAllowlist[0]: String should match pattern"),
        ("maxOutputBytes", 256_001, "providers[0].maxOutputBytes: Input should be less than or equal to 256000"),
        ("maxInputBytes", 0, "providers[0].maxInputBytes: Input should be greater than or equal to 1"),
        ("scenarioIds", ["doc-bridge-mcp"], "providers[0].scenarioIds[0]: Input should be"),
        ("pricing", {"currency": "EUR", "inputPerMillionUsd": 1, "cachedInputPerMillionUsd": 1,
                     "outputPerMillionUsd": 1}, "providers[0].pricing.currency: Input should be 'USD'"),
    ]
    for key, value, expected in cases:
        changed = copy.deepcopy(config)
        changed["providers"][0][key] = value
        with pytest.raises(ContractError) as caught:
            create_contract(StudyProviderCliConfigV1, changed)
        assert expected in str(caught.value), (expected, str(caught.value))


def test_repository_config_rules() -> None:
    config: dict[str, Any] = {"type": "controlled-study-repository-config", "schemaVersion": 1, "configVersion": "v1",
              "repositories": [{"id": "consumer-01", "root": "/src/one"}, {"id": "consumer-02", "root": "/src/two"}]}
    loaded = create_contract(StudyRepositoryConfigV1, config)
    assert loaded.model.root_for("consumer-02") == "/src/two"
    config["repositories"].append({"id": "consumer-01", "root": "/src/three"})
    with pytest.raises(ContractError, match="repositories: duplicate repository id 'consumer-01'"):
        create_contract(StudyRepositoryConfigV1, config)
    config["repositories"] = []
    with pytest.raises(ContractError, match="repositories: List should have at least 1 item"):
        create_contract(StudyRepositoryConfigV1, config)


def test_a_document_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ContractError, match="invalid controlled-study-run-plan: the document must be a JSON object"):
        load_contract(ControlledStudyRunPlanV1, [])


def test_observation_model_alone_validates_a_single_observation() -> None:
    loaded = load_contract(ControlledStudyObservationV1, first_observation())
    assert loaded.verified and loaded.model.task.identity == ("consumer-02-documentation", "deterministic-doc-bridge",
                                                              "low-cost-model", 1)
