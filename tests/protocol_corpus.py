"""Every study definition the tests and the package carry, and what a ledger pins of each (issue 44 item 1).

:func:`corpus` gathers the seed's manifest, the bundled example manifest and study file, and the study files the
tests build (every optional section: agents, analysis, design, prepare, allowOpenWorld, sandboxBinds,
serverConfigCandidates); :func:`pinned` gives what a ledger pins of each: the protocol hash, the bytes' SHA-256,
the pilot, full and sequential schedules and the ledger's ``arms`` block. ``tests/data/protocol-golden.json``
holds those values as computed on main before per-arm servers existed; ``test_protocol_golden`` compares.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from agentstudy.protocol.manifest import parse_manifest
from agentstudy.protocol.schedule import PilotSize, block_schedule, build_schedule
from agentstudy.rehearsal.example_study import EXAMPLE_MANIFEST
from agentstudy.runners.ledger_steps import study_arms

from study_files import EXAMPLE_STUDY, study_document

GOLDEN = Path(__file__).parent / "data" / "protocol-golden.json"
SEED_MANIFEST = next((base / "shared" / "reference" / "original-artifacts" / "minimal-study-v1.json"
                      for base in Path(__file__).resolve().parents[1:4]
                      if (base / "shared" / "reference").is_dir()), Path("missing: the seed's manifest"))
"""The seed's manifest beside the checkout (a worktree's shared folder may sit one level further up)."""


def _variant(base: dict[str, Any], **treatment: Any) -> dict[str, Any]:
    document = copy.deepcopy(base)
    document["arms"]["treatment"].update(treatment)
    return document


def corpus() -> dict[str, str]:
    """Name → the study definition's exact text (the bytes a run hashes)."""
    texts = {
        "seed-manifest": SEED_MANIFEST.read_text(encoding="utf-8"),
        "example-manifest": EXAMPLE_MANIFEST.read_text(encoding="utf-8"),
        "example-study": EXAMPLE_STUDY.read_text(encoding="utf-8"),
    }
    small = study_document({"solo": 1}, 1)
    big = study_document({"a": 7, "b": 7, "c": 7}, 3)
    documents: dict[str, dict[str, Any]] = {
        "study-solo": small,
        "study-3x7": big,
        "study-big": study_document({"big": 10}, 5),
        "study-agents": {**big, "agents": ["claude-code", "codex"]},
        "study-analysis": {**big, "analysis": {"alpha": 0.01, "minimumTreatmentUse": 0.8}},
        "study-design": {**big, "design": {"sequential": {"maxTasks": 20, "alpha": 0.05, "futility": None,
                                                          "seed": 7}}},
        "study-faults": {**small, "rehearsalFaults": "1:429,seed=7"},
        "study-bundled-server": _variant(small, mcpConfig=None),
        "study-server-options": _variant(
            big, serverConfigCandidates=["kb.json", "package.json#kb"], sandboxBinds=["/usr/share"],
            allowOpenWorld=["kb.read"],
            prepare=[{"tool": "kb.search", "arguments": {"query": "{pin}"}, "scope": "server"}]),
    }
    del documents["study-bundled-server"]["arms"]["treatment"]["mcpConfig"]
    for name, document in documents.items():
        texts[name] = json.dumps(document, indent=2)
    return texts


def _entries(entries: Any) -> list[list[Any]]:
    return [[e.task_id, e.repository, e.repetition, e.scenario, e.agent] for e in entries]


def pinned(text: str) -> dict[str, Any]:
    """What a ledger pins of one study definition: hashes, the schedules and the ``arms`` block."""
    loaded = parse_manifest(text)
    manifest = loaded.manifest
    tasks = tuple(task.id for task in manifest.tasks)
    return {
        "protocolHash": loaded.protocol_hash,
        "manifestSha256": loaded.manifest_sha256,
        "fullAttempts": loaded.full_attempts,
        "full": _entries(build_schedule(manifest, "full")),
        "pilot": _entries(build_schedule(manifest, "pilot")),
        "pilot2x2": _entries(build_schedule(manifest, "pilot", PilotSize(min(2, len(tasks)),
                                                                        min(2, manifest.repetitions)))),
        "blocks": _entries(block_schedule(manifest, tuple(reversed(tasks)))),
        "arms": [arm.model_dump(by_alias=True, exclude_none=True) for arm in study_arms(loaded, "kb") or []]
        if loaded.arms is not None else None,
    }
