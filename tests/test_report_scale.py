"""Reports and power plans on a large generated ledger (2,000 observations, 100 tasks): they run, agree
with each other and with the ledger, and their HTML stays bounded (no timing: speed is in bench/)."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.report import power as power_module
from agentstudy.report.power import simulate_power

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.large_ledger import write_large_ledger

from plans_once import plans_simulated_once

OBSERVATIONS = 2_000


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The generated ledger. Its reports and power plans plan the same metrics again and again, and the minimum
    detectable difference and the needed designs are seeded simulations, deterministic in their arguments: within
    this module each distinct call is simulated once and reused (where the plans look them up), so the commands'
    agreement is still checked (a plan with other arguments, e.g. another alpha, gets its own simulation).
    Likewise every command here loads the same unchanged ledger and analyses it without a price file: the loaded
    study (a frozen value) and its analysis (a seeded, deterministic function of it) are made once and every
    command and format renders from them; the first command still loads and analyses the whole ledger."""
    from agentstudy.report import analysis, build, chain

    path = tmp_path_factory.mktemp("scale") / "ledger.json"
    write_large_ledger(path, OBSERVATIONS)
    load_chain, analyse = chain.load_chain, analysis.analyse
    studies: dict[tuple[Any, ...], Any] = {}
    analyses: dict[int, tuple[Any, Any]] = {}

    def loaded_once(ledgers: Any, **options: Any) -> Any:
        key = (tuple(ledgers), tuple(sorted((k, repr(v)) for k, v in options.items())))
        if key not in studies:
            studies[key] = load_chain(ledgers, **options)
        return studies[key]

    def analysed_once(study: Any, prices: Any = None, **options: Any) -> Any:
        if prices is not None or options:
            return analyse(study, prices, **options)
        if id(study) not in analyses:
            analyses[id(study)] = (study, analyse(study))  # the study is held, so its id stays its own
        return analyses[id(study)][1]

    with plans_simulated_once(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(chain, "load_chain", loaded_once)
        patch.setattr(analysis, "analyse", analysed_once)
        patch.setattr(build, "analyse", analysed_once)
        yield path
    assert len(studies) == len(analyses) == 1  # every command read the one loaded and analysed study


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_generated_ledger_verifies(large: Path) -> None:
    out = _run("ledger", str(large))
    assert "verified" in out and f"{OBSERVATIONS} of {OBSERVATIONS} planned" in out


def test_report_json_agrees_with_the_ledger_and_with_power(large: Path) -> None:
    report = json.loads(_run("report", str(large), "--format", "json"))
    observations: list[dict[str, Any]] = json.loads(large.read_bytes())["observations"]
    arms: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for obs in observations:
        arms[obs["taskId"]][obs["scenario"]].append(obs["inputTokens"])
    expected = statistics.fmean(statistics.fmean(a["doc-bridge-mcp"]) - statistics.fmean(a["repository-only"])
                                for a in arms.values())
    [tokens] = [m for m in report["metrics"] if m["metric"] == "inputTokens"]
    assert tokens["tasks"] == len(arms) == OBSERVATIONS // 20 and tokens["repetitions"] == 10
    assert tokens["estimate"] == pytest.approx(expected)
    assert tokens["ciLow"] < tokens["estimate"] < tokens["ciHigh"] < 0  # the treatment uses ~10 % fewer tokens
    # without --alpha both plan the metric at its own level (a secondary one at Holm's strictest)
    planned = json.loads(_run("power", str(large), "--metric", "inputTokens", "--json"))
    [plan] = planned["power"]
    [in_report] = [p for p in report["powerPlans"] if p["metric"] == "inputTokens"]
    assert plan["tasks"] == in_report["tasks"] == len(arms)
    assert plan["minimumDetectableDifference"] == pytest.approx(in_report["minimumDetectableDifference"])
    assert 0 < plan["minimumDetectableDifference"] < abs(expected)
    assert plan["simulatedPower"] >= 0.8


def test_every_format_runs_and_the_html_does_not_draw_one_element_per_attempt(large: Path) -> None:
    for output_format in ("text", "md"):
        assert "input tokens" in _run("report", str(large), "--format", output_format)
    html = _run("report", str(large), "--format", "html")
    assert "plot-status" in html and "the cells are not lettered by arm" in html
    assert html.count("<path") + html.count("<use") < OBSERVATIONS  # scatters and the strip are images


def test_the_normal_approximation_matches_the_monte_carlo_sign_flip_power(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = power_module.NORMAL_MIN_TASKS
    approximate = simulate_power(0.25, 1.0, tasks, 1, 0.05)
    monkeypatch.setattr(power_module, "NORMAL_MIN_TASKS", 10 * tasks)
    monte_carlo = simulate_power(0.25, 1.0, tasks, 1, 0.05)
    assert 0.5 < monte_carlo.power < 0.95
    assert abs(approximate.power - monte_carlo.power) < 0.03
    assert not np.isclose(approximate.power, 0.0)
