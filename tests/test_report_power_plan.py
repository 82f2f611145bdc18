"""One power plan (issue 41 item 6): the report's power is the ranged planner's at analysis.minimumEffect, equal
to `agentstudy power --metric M --effect E --json`; no number without a declared effect; a rehearsal or a pilot
without variance is refused in words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.report.build import build_report
from test_report_builders import cli_obs, ledger, write

BASE, TREAT = "repository-only", "doc-bridge-mcp"
PRIMARY = {"metric": "inputTokens", "betterWhen": "lower"}


def _ledger(tmp_path: Path, *, spread: bool = True, **extra: Any) -> Path:
    observations = []
    for task in range(5):
        for rep in (1, 2):
            noise = (37 * task + 11 * rep) % 23 if spread else 0
            observations.append(cli_obs(f"t{task}", BASE, rep, input_tokens=1000 + noise))
            observations.append(cli_obs(f"t{task}", TREAT, rep,
                                        input_tokens=960 + (3 * noise) % 29 - (4 * task if spread else 0)))
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, **extra))
    return path


def _report(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(build_report(path, output_format="json"))
    return document


def test_the_reports_power_is_the_power_commands(tmp_path: Path) -> None:
    path = _ledger(tmp_path, analysis={"primary": PRIMARY, "minimumEffect": {"inputTokens": 30}})
    report = _report(path)
    result = CliRunner().invoke(main, ["power", str(path), "--metric", "inputTokens", "--effect", "30", "--json"])
    assert result.exit_code == 0, result.stderr
    command = json.loads(result.stdout)
    assert report["power"]["metric"] == "inputTokens" and report["power"]["effect"] == 30
    assert report["power"]["tasksNeeded"] == {k: command["tasksNeeded"][k] for k in ("estimate", "low", "high")}
    assert report["power"]["tasksNeeded"]["estimate"] is not None
    text = build_report(path, output_format="text")
    assert f"{report['power']['tasksNeeded']['estimate']} tasks from the point estimates" in text


def test_without_a_minimum_effect_the_report_asks_for_one_and_shows_no_number(tmp_path: Path) -> None:
    report = _report(_ledger(tmp_path, analysis={"primary": PRIMARY}))
    assert report["power"] is None and "analysis.minimumEffect" in report["powerNote"]
    assert all(plan["needed"] == [] for plan in report["powerPlans"])  # nothing planned at the observed effect


def test_a_rehearsal_is_no_basis_for_planning(tmp_path: Path) -> None:
    path = _ledger(tmp_path, rehearsal=True, analysis={"primary": PRIMARY, "minimumEffect": {"inputTokens": 30}})
    report = json.loads(build_report(path, output_format="json", allow_unverified=True))
    assert report["power"] is None and "rehearsal" in report["powerNote"]


def test_a_pilot_without_variance_is_no_basis_for_planning(tmp_path: Path) -> None:
    report = _report(_ledger(tmp_path, spread=False,
                             analysis={"primary": PRIMARY, "minimumEffect": {"inputTokens": 30}}))
    assert report["power"] is None and "do not vary at all" in report["powerNote"]


def test_a_skewed_ten_task_pilot_plans_for_the_reports_test_of_the_mean(tmp_path: Path, monkeypatch: Any) -> None:
    # 10 tasks whose differences are skewed (exponential): the plan simulates the test the report runs (the
    # sign-flip test and, from 10 tasks, the bootstrap-t), which rejects less often than the sign-flip test
    # alone, so it plans at least as many tasks, and more at some end of the range
    import numpy as np

    import agentstudy.report.power as power
    from agentstudy.report.mean_test import mean_test

    generator = np.random.default_rng(5)
    observations = []
    for task in range(10):
        shift = 300 * (generator.exponential(1.0) - 1.0) + 200
        for rep in (1, 2, 3):
            observations.append(cli_obs(f"t{task}", BASE, rep, input_tokens=int(5000 + generator.normal(0, 150))))
            observations.append(cli_obs(f"t{task}", TREAT, rep,
                                        input_tokens=int(5000 + shift + generator.normal(0, 150))))
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, analysis={"primary": PRIMARY, "minimumEffect": {"inputTokens": 100}}))
    arguments = ["power", str(path), "--metric", "inputTokens", "--effect", "100", "--json"]
    studies = []
    real = power.study_rejects

    def watched(differences: Any, alpha: float, *, seed: int = power.SEED) -> Any:
        studies.append(differences[:2].copy())
        return real(differences, alpha, seed=seed)

    # the command's own plan, watched as it is made (the watch only records: it returns the real decisions)
    monkeypatch.setattr(power, "study_rejects", watched)
    planned = json.loads(CliRunner().invoke(main, arguments).stdout)["tasksNeeded"]
    assert studies and _report(path)["power"]["tasksNeeded"] == {k: planned[k] for k in ("estimate", "low", "high")}
    # each simulated study's decision is mean_test's own (10 or more tasks: with the bootstrap part)
    row = next(d[0] for d in studies if d.shape[1] >= 10)
    from agentstudy.report.mean_test import PLANNER_FLIPS, PLANNER_RESAMPLES
    decision = mean_test(row.tolist(), seed=power.SEED, alpha=0.05, resamples=PLANNER_RESAMPLES,
                         flips=PLANNER_FLIPS).p_value < 0.05
    assert bool(real(row[None, :], 0.05)[0]) == decision
    monkeypatch.setattr(power, "study_rejects", lambda d, alpha, *, seed=power.SEED: power.sign_flip_rejects(
        d, alpha, seed=seed))
    sign_flip_alone = json.loads(CliRunner().invoke(main, arguments).stdout)["tasksNeeded"]
    ends = ("estimate", "low", "high")
    assert all(planned[end] >= sign_flip_alone[end] for end in ends)
    assert any(planned[end] > sign_flip_alone[end] for end in ends), (planned, sign_flip_alone)
