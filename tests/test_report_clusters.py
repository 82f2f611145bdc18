"""Repositories as clusters (issue 41 item 1): constructed ledgers whose repository effects are known, the
scope of the answer in the verdict, per-repository estimates, heterogeneity and the repository-level test
checked against a brute-force sign flip over the repository means."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentstudy.report.build import build_report
from agentstudy.report.clusters import heterogeneity_p
from test_report_builders import cli_obs, ledger, write

BASE, TREAT = "repository-only", "doc-bridge-mcp"


def _ledger(tmp_path: Path, plan: dict[str, list[int]], *, record: bool = True, charged: float | None = None,
            **extra: Any) -> Path:
    """One sealed ledger: per repository, one task per listed difference (input tokens 1000 vs 1000 + d); each
    attempt charged its usage's list price, or ``charged`` USD when given."""
    observations = []
    for repository, differences in plan.items():
        for index, difference in enumerate(differences):
            task = f"{repository}-t{index}"
            where = {"repository": repository} if record else {}
            observations.append(cli_obs(task, BASE, 1, input_tokens=1000, charged=charged, **where))
            observations.append(cli_obs(task, TREAT, 1, input_tokens=1000 + difference, charged=charged, **where))
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, repositories={name: str(i) * 40 for i, name in enumerate(plan, 1)}, **extra))
    return path


def _report(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(build_report(path, output_format="json"))
    return document


def _input(document: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in document["metrics"] if m["metric"] == "inputTokens")


def test_three_repositories_with_opposite_effects_scope_the_answer_to_their_tasks(tmp_path: Path) -> None:
    plan = {"alpha-repo": [100, 100, 100], "beta-repo": [-100, -100, -100], "gamma-repo": [0, 0, 0]}
    document = _report(_ledger(tmp_path, plan, analysis={"primary": {"metric": "inputTokens", "betterWhen": "lower"}}))
    assert document["inference"] == {"scope": "tasks", "repositories": 3, "minRepositories": 6}
    entry = _input(document)
    assert entry["byRepository"] == {
        "alpha-repo": {"estimate": 100.0, "tasks": 3, "pValue": 0.25},
        "beta-repo": {"estimate": -100.0, "tasks": 3, "pValue": 0.25},
        "gamma-repo": {"estimate": 0.0, "tasks": 3, "pValue": 1.0}}
    assert entry["heterogeneity"]["pValue"] < 0.05 and "permutation" in entry["heterogeneity"]["method"]
    assert "repositoryLevel" not in entry
    assert "tasks of alpha-repo, beta-repo, gamma-repo only" in document["verdict"]


def test_identical_repositories_show_no_heterogeneity(tmp_path: Path) -> None:
    assert heterogeneity_p({"a": [5.0, -3.0, 2.0], "b": [2.0, 5.0, -3.0]}, seed=1) > 0.5


def _brute_p(values: list[float]) -> float:
    data = np.asarray(values)
    sums = np.array([np.dot(signs, data) for signs in itertools.product((1.0, -1.0), repeat=data.size)])
    observed = data.sum()
    return float(min(1.0, 2 * min(np.mean(sums >= observed - 1e-9), np.mean(sums <= observed + 1e-9))))


def test_eight_repositories_are_tested_at_the_repository_level(tmp_path: Path) -> None:
    generator = np.random.default_rng(41)
    plan = {f"repo{i}": [int(v) for v in generator.integers(-60, 140, size=2)] for i in range(8)}
    # every attempt charged the same USD: the charged spend, not what this test is about, does not vary, so the
    # report plans power (a 16-task simulation, most of this report's time) for input tokens alone
    document = _report(_ledger(tmp_path, plan, charged=0.01,
                               analysis={"primary": {"metric": "inputTokens", "betterWhen": "lower"}}))
    assert document["inference"] == {"scope": "repositories", "repositories": 8, "minRepositories": 6}
    level = _input(document)["repositoryLevel"]
    means = [sum(d) / 2 for d in plan.values()]
    assert level["repositories"] == 8
    assert level["estimate"] == pytest.approx(sum(means) / 8)
    assert level["pValue"] == pytest.approx(_brute_p(means), abs=1e-15)
    assert level["ciLow"] is not None and (level["ciLow"] > 0) == (level["pValue"] < 0.05)
    assert "tested across 8 repositories" in document["verdict"]
    assert f"p {level['pValue']:.3g}" in document["verdict"]


def test_min_repositories_is_the_study_files_choice(tmp_path: Path) -> None:
    plan = {"a": [10, 20], "b": [30, 40], "c": [-5, 15]}
    document = _report(_ledger(tmp_path, plan, analysis={"minRepositories": 3}))
    assert document["inference"] == {"scope": "repositories", "repositories": 3, "minRepositories": 3}
    assert document["analysis"]["minRepositories"] == 3


def test_a_ledger_that_does_not_record_repositories_says_so(tmp_path: Path) -> None:
    document = _report(_ledger(tmp_path, {"a": [10, 20], "b": [30, 40]}, record=False,
                               analysis={"primary": {"metric": "inputTokens", "betterWhen": "lower"}}))
    assert document["inference"] == {"scope": "tasks", "repositories": None, "minRepositories": 6}
    assert "byRepository" not in _input(document)
    assert "--manifest" in document["verdict"]


EXAMPLE = Path(__file__).resolve().parents[1] / "src" / "agentstudy" / "rehearsal" / "example-manifest.json"


def _older_ledger(tmp_path: Path, manifest_sha256: str) -> Path:
    """A ledger of the example manifest's six tasks, written before observations named their repository."""
    from agentstudy.protocol.manifest import load_manifest

    observations = []
    for index, task in enumerate(load_manifest(EXAMPLE).manifest.tasks):
        observations.append(cli_obs(task.id, BASE, 1, input_tokens=1000))
        observations.append(cli_obs(task.id, TREAT, 1, input_tokens=900 + 10 * index))
    path = tmp_path / "older.json"
    write(path, ledger(observations, manifestSha256=manifest_sha256,
                       repositories={"lantern-cache": "1" * 40, "quill-notes": "2" * 40, "harbor-playbook": "3" * 40}))
    return path


def test_an_older_ledger_reads_its_repositories_from_the_study_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agentstudy.cli import main
    from agentstudy.protocol.manifest import load_manifest

    path = _older_ledger(tmp_path, load_manifest(EXAMPLE).manifest_sha256)
    result = CliRunner().invoke(main, ["report", str(path), "--format", "json", "--manifest", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["inference"] == {"scope": "tasks", "repositories": 3, "minRepositories": 6}
    assert set(_input(document)["byRepository"]) == {"lantern-cache", "quill-notes", "harbor-playbook"}
    without = CliRunner().invoke(main, ["report", str(path), "--format", "json"])
    assert json.loads(without.stdout)["inference"]["repositories"] is None


def test_a_study_file_that_is_not_the_ledgers_is_refused_in_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agentstudy.cli import main

    path = _older_ledger(tmp_path, "b" * 64)
    result = CliRunner().invoke(main, ["report", str(path), "--manifest", str(EXAMPLE)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "is not the study file this ledger was run from" in result.stderr


def test_the_text_report_shows_each_repository_and_the_heterogeneity_test(tmp_path: Path) -> None:
    from test_report_builders import markdown_tables

    plan = {"alpha-repo": [100, 100, 100], "beta-repo": [-100, -100, -100], "gamma-repo": [0, 0, 0]}
    markdown = build_report(_ledger(tmp_path, plan), output_format="md")
    rows = [row for row in next(t for c, t in markdown_tables(markdown).items() if c.startswith("Per repository"))
            if row["metric"] == "input tokens"]
    assert [(r["repository"], r["mean task Δ"], r["tasks"]) for r in rows[:3]] == [
        ("alpha-repo", "+100.0", "3"), ("beta-repo", "-100.0", "3"), ("gamma-repo", "0.0", "3")]
    assert rows[3]["repository"] == "heterogeneity across repositories" and float(rows[3]["p"]) < 0.05
