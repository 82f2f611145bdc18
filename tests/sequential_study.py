"""A sequential rehearsal study for the issue-35 tests: the example's repositories, 20 one-repetition tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study


def sequential_rehearsal(dest: Path, tasks: int = 20, better_when: str = "higher",
                         **sequential: Any) -> tuple[ExampleStudy, Path]:
    """The example study built under ``dest`` and a study file beside it: its six tasks cycled to ``tasks``
    (ids ``…-2``, ``…-3`` for the copies), one repetition, ``design.sequential`` with ``maxTasks`` = ``tasks``,
    alpha 0.05, futility 0.1, seed 7 unless given, and the declared primary input tokens with ``better_when``.

    The rehearsal's MCP arm reads more input tokens on every task, so with ``higher`` (the default) the one-sided
    sequential test finds the treatment better and stops for efficacy; with ``lower`` it stops for futility."""
    study = build_example_study(dest)
    document = json.loads((Path(__file__).resolve().parents[1] / "src/agentstudy/rehearsal/example-study.json")
                          .read_text())
    base = document["tasks"]
    document["tasks"] = [{**base[i % len(base)], "id": base[i % len(base)]["id"] + (
        f"-{i // len(base) + 1}" if i >= len(base) else "")} for i in range(tasks)]
    document["repetitions"] = 1
    document["analysis"] = {"primary": {"metric": "inputTokens", "betterWhen": better_when}}
    document["design"] = {"sequential": {"maxTasks": tasks, "alpha": 0.05, "futility": 0.1, "seed": 7,
                                         **sequential}}
    path = dest / "sequential-study.json"
    path.write_text(json.dumps(document, indent=2))
    return study, path


MODEL = "claude-haiku-5-5"


def study_command(study: ExampleStudy, manifest: Path, output: Path, *extra: str) -> list[str]:
    """``agentstudy study --run --rehearsal`` of ``study`` (http, one attempt at a time, budget 1 USD) to
    ``output``, then ``extra``: the command the sequential tests run and continue."""
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["study", "--manifest", str(manifest), "--run", "--rehearsal", *roots, "--output", str(output),
            "--model", MODEL, "--budget-usd", "1", *extra]


def run_stopped(dest: Path) -> tuple[ExampleStudy, Path, Path]:
    """The 20-task rehearsal of :func:`sequential_rehearsal` built under ``dest`` and run to its efficacy stop
    in-process; (the study, its study file, the ledger). Raises AssertionError if the run does not exit 0."""
    from click.testing import CliRunner

    from agentstudy.cli import main

    study, manifest = sequential_rehearsal(dest / "study")
    output = dest / "ledger.json"
    result = CliRunner().invoke(main, study_command(study, manifest, output), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return study, manifest, output
