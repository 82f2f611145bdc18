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

EXAMPLE_STUDY = EXAMPLE_MANIFEST.parent / "example-study.json"
SEED_PROTOCOL_HASH = "aaa4d1c474d9c847b9aedf85f21679864fd2bbab60fb5c72569e38cd367adb42"
"""``protocolHash`` of shared/reference/original-artifacts/minimal-study-v1.json, computed on main before issue 18."""
EXAMPLE_MANIFEST_PROTOCOL_HASH = "4f167da64a00d26e62cce2b884b50ba927316215eee4051ac6dbb49b64a4b5f0"
"""``protocolHash`` of the bundled example-manifest.json, computed on main before issue 18."""

R, D = "repository-only", "doc-bridge-mcp"
PIN = "0123456789abcdef0123456789abcdef01234567"


def study_document(tasks_per_repository: dict[str, int], repetitions: int) -> dict[str, Any]:
    """A valid study file with ``n`` tasks in each named repository."""
    tasks = [
        {"id": f"{name}-t{i}", "repository": name, "category": "discovery",
         "question": f"Question {i} about {name}?", "sources": ["README.md"], "expected": ["It answers."]}
        for name, count in tasks_per_repository.items() for i in range(count)
    ]
    return {
        "version": "agentstudy-study-v1",
        "repetitions": repetitions,
        "repositories": {name: PIN for name in tasks_per_repository},
        "arms": {
            "control": {"id": "plain", "label": "Repository tools only"},
            "treatment": {
                "id": "kb-server", "label": "Repository tools + kb",
                "mcpConfig": {"mcpServers": {"kb": {"command": "/usr/bin/kb", "args": ["--root", "{root}"]}}},
                "tools": ["kb.search", "kb.read"],
                "probe": {"tool": "kb.search", "arguments": {"query": "the"}},
            },
        },
        "tasks": tasks,
    }


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
