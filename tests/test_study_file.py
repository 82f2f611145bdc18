"""Issue 18 deliverable 1: the general study file ``agentstudy-study-v1``, its loader and its schedules.

The seed's manifest keeps the protocol hash it had before the study file existed (hard-coded
regression values computed on main before the change) and its 36/2 schedules; study files of
any size schedule tasks x repetitions x 2 attempts with the counterbalancing rule.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.manifest import ManifestError, StudyFile, load_manifest, parse_manifest
from agentstudy.protocol.schedule import build_schedule
from agentstudy.rehearsal.example_study import EXAMPLE_MANIFEST

from study_files import EXAMPLE_MANIFEST_PROTOCOL_HASH, EXAMPLE_STUDY, PIN, SEED_PROTOCOL_HASH, D, R, study_document


def _expected_order(task_index: int, repetition_index: int) -> list[str]:
    return [R, D] if (task_index + repetition_index) % 2 == 0 else [D, R]


def test_seed_manifest_keeps_its_protocol_hash_and_schedules(original_manifest: Path) -> None:
    loaded = load_manifest(original_manifest)
    assert loaded.protocol_hash == SEED_PROTOCOL_HASH
    assert loaded.arms is None
    assert len(build_schedule(loaded.manifest, "full")) == 36
    assert len(build_schedule(loaded.manifest, "pilot")) == 2
    assert load_manifest(EXAMPLE_MANIFEST).protocol_hash == EXAMPLE_MANIFEST_PROTOCOL_HASH


def test_example_study_is_the_bundled_manifest_as_a_study_file() -> None:
    study = load_manifest(EXAMPLE_STUDY)
    seed = load_manifest(EXAMPLE_MANIFEST)
    assert isinstance(study.manifest, StudyFile)
    assert study.manifest.tasks == seed.manifest.tasks
    assert study.manifest.repositories == seed.manifest.repositories
    assert build_schedule(study.manifest, "full") == build_schedule(seed.manifest, "full")
    assert len(build_schedule(study.manifest, "pilot")) == 2
    assert study.arms is not None and study.arms.treatment.mcp_config is None  # the bundled server


@pytest.mark.parametrize(
    ("repositories", "repetitions", "attempts"),
    [({"solo": 1}, 1, 2), ({"big": 10}, 5, 100), ({"a": 7, "b": 7, "c": 7}, 2, 84)],
    ids=["1x1", "10x5", "3repos-x7"],
)
def test_study_schedules_count_and_counterbalance(
    repositories: dict[str, int], repetitions: int, attempts: int
) -> None:
    loaded = parse_manifest(json.dumps(study_document(repositories, repetitions)))
    assert loaded.full_attempts == attempts
    full = build_schedule(loaded.manifest, "full")
    assert len(full) == attempts
    for t, task in enumerate(loaded.manifest.tasks):
        entries = [e for e in full if e.task_id == task.id]
        assert [e.repetition for e in entries] == [r + 1 for r in range(repetitions) for _ in (0, 1)]
        assert [e.scenario for e in entries] == [s for r in range(repetitions) for s in _expected_order(t, r)]
        assert {e.repository for e in entries} == {task.repository}
    pilot = build_schedule(loaded.manifest, "pilot")
    first = loaded.manifest.tasks[0].id
    assert [(e.task_id, e.scenario, e.repetition) for e in pilot] == [(first, R, 1), (first, D, 1)]


def test_study_protocol_hash_is_the_seed_function_of_the_document() -> None:
    document = study_document({"solo": 1}, 1)
    a = parse_manifest(json.dumps(document)).protocol_hash
    assert parse_manifest(json.dumps(document, indent=4)).protocol_hash == a  # whitespace does not count
    changed = copy.deepcopy(document)
    changed["arms"]["treatment"]["label"] = "Another label"
    assert parse_manifest(json.dumps(changed)).protocol_hash != a


def _set(path: str, value: Any) -> Any:
    def change(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = document
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value
    return change


_DELETE = object()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_set("repetitions", 0), "repetitions"),
        (_set("repetitions", "2"), "repetitions"),
        (_set("tasks", []), "tasks"),
        (_set("repositories", {}), "repositories"),
        (_set("repositories.extra", PIN), "'extra' has no task"),
        (_set("repositories.solo", "ABC"), "40 lowercase hex"),
        (_set("tasks.0.repository", "nowhere"), "undeclared repository"),
        (_set("tasks.0.sources", ["../x"]), "unsafe source"),
        (_set("surprise", 1), "surprise"),
        (_set("arms.control.colour", "red"), "colour"),
        (_set("arms.control.id", "Plain Arm"), "arms.control.id"),
        (_set("arms.treatment.id", "plain"), "ids must differ"),
        (_set("arms.control.label", "bad\u0007label"), "control character"),
        (_set("arms.control.label", "   "), "blank"),
        (_set("arms.treatment.tools", []), "tools"),
        (_set("arms.treatment.tools", ["a,b"]), "commas"),
        (_set("arms.treatment.probe.tool", "kb.write"), "arms.treatment.probe.tool kb.write is not one of"),
        (_set("arms.treatment.probe.arguments", {"q": "{roots}"}), "unknown placeholders"),
        (_set("arms.treatment.mcpConfig", {"mcpServers": {}}), "exactly one server"),
        (_set("arms.treatment.mcpConfig", {"mcpServers": {"kb": {"command": "kb {rot}"}}}),
         "unknown placeholders"),
        (_set("arms.treatment.sandboxBinds", ["relative/path"]), "absolute"),
        (_set("arms.treatment.sandboxBinds", ["/proc/self"]), "the host's /proc is never shown"),
        (_set("arms.treatment.probe", _DELETE), "probe"),
        (_set("version", "agentstudy-study-v2"), "invalid manifest"),
    ],
)
def test_bad_study_files_are_one_line_errors(change: Any, reason: str) -> None:
    document = study_document({"solo": 1}, 1)
    change(document)
    with pytest.raises(ManifestError) as caught:
        parse_manifest(json.dumps(document))
    message = str(caught.value)
    assert reason in message
    assert "\n" not in message


def test_schema_study_describes_the_example_and_refuses_unknown_keys() -> None:
    from click.testing import CliRunner
    from jsonschema import Draft202012Validator

    from agentstudy.cli import main

    result = CliRunner().invoke(main, ["schema", "study"])
    assert result.exit_code == 0
    validator = Draft202012Validator(json.loads(result.stdout))
    assert not list(validator.iter_errors(json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8"))))
    assert not list(validator.iter_errors(study_document({"a": 7, "b": 7, "c": 7}, 3)))
    document = study_document({"solo": 1}, 1)
    document["arms"]["treatment"]["colour"] = "red"
    document["arms"]["control"]["id"] = "Not Safe"
    assert len(list(validator.iter_errors(document))) == 2


def test_seed_runs_name_no_arms_and_a_study_extrapolates_by_its_own_factor(
    original_manifest: Path, tmp_path: Path
) -> None:
    from decimal import Decimal

    from agentstudy.pricing.budget import Budget
    from agentstudy.runners.ledger_steps import study_arms, summary_names
    from agentstudy.runners.summary import summarize

    seed = load_manifest(original_manifest)
    assert study_arms(seed, "doc-bridge") is None  # the seed's ledger gains no key
    assert summary_names(seed, "doc-bridge") == {"full_attempts": 36, "server_name": "doc-bridge"}
    study = parse_manifest(json.dumps(study_document({"big": 10}, 5)))
    names = summary_names(study, "kb")
    assert names == {"full_attempts": 100, "server_name": "kb",
                     "arm_labels": {R: "Repository tools only", D: "Repository tools + kb"}}
    arms = study_arms(study, "kb")
    # the comparison fields (toolDescriptionsSha256, ...) stay unset outside a comparison study
    assert arms is not None and [a.model_dump(by_alias=True, exclude_none=True) for a in arms] == [
        {"scenario": R, "id": "plain", "label": "Repository tools only"},
        {"scenario": D, "id": "kb-server", "label": "Repository tools + kb", "mcpServer": "kb"},
    ]
    budget = Budget(cap=Decimal("1"), spent=Decimal("0.01"))
    line = summarize("awaiting-adjudication", "pilot", 2, [], budget, tmp_path / "l.json", **names).line
    assert line["fullRunFactor"] == "50" and line["extrapolatedFullRunUsd"] == 0.5
    assert line["extrapolation"] == "100 attempts / 2 pilot attempts; not an upper bound"
    seed_line = summarize("awaiting-adjudication", "pilot", 2, [], budget, tmp_path / "l.json",
                          **summary_names(seed, "doc-bridge")).line
    assert seed_line["fullRunFactor"] == "18" and seed_line["extrapolatedFullRunUsd"] == 0.18
    assert "armLabels" not in seed_line and seed_line["mcpServer"] == "doc-bridge"  # the summary names the server


def test_a_misspelt_key_is_named_before_the_key_it_leaves_missing() -> None:
    document = study_document({"r": 1}, 1)
    document["repetiton"] = document.pop("repetitions")
    with pytest.raises(ManifestError) as refused:
        parse_manifest(json.dumps(document))
    assert "repetiton: Extra inputs are not permitted" in str(refused.value)


@pytest.mark.parametrize(
    ("analysis", "reason"),
    [
        ({"primary": {"metric": "happiness", "betterWhen": "higher"}}, "analysis.primary.metric"),
        ({"primary": {"metric": "correctness", "betterWhen": "sideways"}}, "analysis.primary.betterWhen"),
        ({"secondary": ["correctness"]}, "lists the primary metric"),
        ({"secondary": ["inputTokens", "inputTokens"]}, "lists a metric twice"),
        ({"alpha": 0}, "analysis.alpha"),
        ({"alpha": 0.6}, "analysis.alpha"),
        ({"minimumTreatmentUse": 1.5}, "analysis.minimumTreatmentUse"),
        ({"minimumTreatmentUse": -0.1}, "analysis.minimumTreatmentUse"),
        ({"power": 0.8}, "analysis.power"),
    ],
)
def test_a_bad_analysis_section_is_a_one_line_error(analysis: dict[str, Any], reason: str) -> None:
    document = study_document({"solo": 1}, 1)
    document["analysis"] = analysis
    with pytest.raises(ManifestError) as caught:
        parse_manifest(json.dumps(document))
    assert reason in str(caught.value) and "\n" not in str(caught.value)


def test_the_analysis_section_loads_with_defaults_and_is_in_the_schema() -> None:
    from click.testing import CliRunner
    from jsonschema import Draft202012Validator

    from agentstudy.cli import main
    from agentstudy.protocol.analysis import DEFAULT_ANALYSIS

    document = study_document({"solo": 1}, 1)
    assert parse_manifest(json.dumps(document)).analysis is None
    document["analysis"] = {"primary": {"metric": "inputTokens", "betterWhen": "lower"}, "minimumTreatmentUse": 1}
    plan = parse_manifest(json.dumps(document)).analysis
    assert plan is not None
    assert (plan.primary.metric, plan.alpha, plan.minimum_treatment_use) == ("inputTokens", 0.05, 1)
    assert plan.secondary_of(("inputTokens", "toolCalls", "correctness")) == ("toolCalls", "correctness")
    assert (DEFAULT_ANALYSIS.primary.metric, DEFAULT_ANALYSIS.primary.better_when, DEFAULT_ANALYSIS.alpha,
            DEFAULT_ANALYSIS.minimum_treatment_use) == ("correctness", "higher", 0.05, 0.5)
    result = CliRunner().invoke(main, ["schema", "study"])
    schema = json.loads(result.stdout)
    validator = Draft202012Validator(schema)
    assert not list(validator.iter_errors(document))
    document["analysis"]["minimumTreatmentUse"] = 2
    assert len(list(validator.iter_errors(document))) == 1
    assert "minimumTreatmentUse" in json.dumps(schema) and "betterWhen" in json.dumps(schema)
