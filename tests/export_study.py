"""A small rehearsal study for the export and view tests (issue 43): the example study's pilot of ``tasks`` tasks
and ``repetitions`` repetitions, run through the real pinned agents named."""

from __future__ import annotations

import json
from pathlib import Path

from agentstudy.rehearsal.example_study import build_example_study

from study_files import EXAMPLE_STUDY


def small_study(base: Path, agents: list[str] | None) -> tuple[Path, list[str]]:
    """Write the example study file for ``agents`` (``None``: none listed, as the http transport needs) under
    ``base``; its path and the run's ``--root`` flags."""
    example = build_example_study(base / "study")
    document = json.loads(EXAMPLE_STUDY.read_text())
    if agents is not None:
        document["agents"] = agents
    study = base / "study.json"
    study.write_text(json.dumps(document))
    return study, [f"--root={name}={path}" for name, path in example.roots.items()]


def run_args(study: Path, roots: list[str], output: Path, tasks: int, repetitions: int, *extra: str) -> list[str]:
    """``agentstudy minimal`` arguments of a free rehearsal pilot of ``study`` into ``output``."""
    return ["minimal", "--manifest", str(study), "--transport", "cli", "--rehearsal", *roots, "--output",
            str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1", "--pilot", "--pilot-tasks", str(tasks),
            "--pilot-repetitions", str(repetitions), *extra]
