"""Study-file builders shared by the issue-18 tests: the example study file, regression hashes, a valid document."""

from __future__ import annotations

from typing import Any

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
