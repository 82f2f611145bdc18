"""The minimal-study manifest and its pilot and full schedules (seed 000; digest 1.1, 1.4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.manifest import ManifestError, load_manifest, parse_manifest, protocol_hash
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.schedule import build_schedule


def _document(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_original_manifest_loads_unchanged(original_manifest: Path) -> None:
    loaded = load_manifest(original_manifest)
    assert [t.id for t in loaded.manifest.tasks][:2] == ["bridge-discovery", "bridge-architecture"]
    assert loaded.protocol_hash == protocol_hash(_document(original_manifest))
    assert len(loaded.protocol_hash) == 64


def test_full_schedule_counterbalances(original_manifest: Path) -> None:
    manifest = load_manifest(original_manifest).manifest
    full = build_schedule(manifest, "full")
    assert len(full) == 36
    assert sum(e.scenario == "repository-only" for e in full) == 18
    r, d = "repository-only", "doc-bridge-mcp"
    first_task = [(e.repetition, e.scenario) for e in full if e.task_id == "bridge-discovery"]
    assert first_task == [(1, r), (1, d), (2, d), (2, r), (3, r), (3, d)]
    second_task = [(e.repetition, e.scenario) for e in full if e.task_id == "bridge-architecture"]
    assert second_task == [(1, d), (1, r), (2, r), (2, d), (3, d), (3, r)]
    pairs = {(e.task_id, e.repetition) for e in full}
    assert len(pairs) == 18


def test_pilot_schedule_is_first_task_both_scenarios(original_manifest: Path) -> None:
    pilot = build_schedule(load_manifest(original_manifest).manifest, "pilot")
    assert [(e.task_id, e.scenario, e.repetition) for e in pilot] == [
        ("bridge-discovery", "repository-only", 1),
        ("bridge-discovery", "doc-bridge-mcp", 1),
    ]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d.update(repetitions=2), "repetitions"),
        (lambda d: d.update(tasks=d["tasks"][:5]), "tasks"),
        (lambda d: d["repositories"].update({"doc-bridge": "abc123"}), "40 lowercase hex"),
        (lambda d: d["repositories"].update({"doc-bridge": "A" * 40}), "40 lowercase hex"),
        (lambda d: d.update(scenarios=["doc-bridge-mcp", "repository-only"]), "scenarios"),
        (lambda d: d.update(extra=1), "extra"),
        (lambda d: d["tasks"][0].update(sources=["../secret.md"]), "unsafe source"),
        (lambda d: d["tasks"][0].update(sources=[".env"]), "unsafe source"),
        (lambda d: d["tasks"][0].update(expected=[]), "expected"),
        (lambda d: d["tasks"][1].update(id="bridge-discovery"), "distinct"),
        (lambda d: d["tasks"][0].update(repository="nowhere"), "undeclared"),
        (lambda d: d.update(version="minimal-study-v2"), "version"),
    ],
)
def test_invalid_manifests_are_refused(original_manifest: Path, change: Any, reason: str) -> None:
    document = _document(original_manifest)
    change(document)
    with pytest.raises(ManifestError, match=reason):
        parse_manifest(json.dumps(document))


def test_malformed_and_missing_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ManifestError, match="not valid JSON"):
        load_manifest(bad)
    with pytest.raises(ManifestError, match="not found"):
        load_manifest(tmp_path / "missing.json")
    with pytest.raises(ManifestError, match="JSON object"):
        parse_manifest("[]")


def test_prompt_carries_the_question_but_never_the_rubric(original_manifest: Path) -> None:
    task = load_manifest(original_manifest).manifest.tasks[0]
    prompt = study_prompt(task.question)
    assert prompt.startswith(task.question + "\n")
    assert "path:line" in prompt
    for proposition in task.expected:
        assert proposition not in prompt
    for source in task.sources:
        assert source not in prompt
    with pytest.raises(ValueError, match="8192"):
        study_prompt("x" * 9000)
