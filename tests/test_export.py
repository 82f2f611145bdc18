"""``agentstudy export`` (issue 43 item 2) over a real rehearsal study of Claude Code and Codex: ATIF trajectories
valid against harbor 0.26.0's ATIF v1.8 models, and a tidy table whose sums are the report's."""

from __future__ import annotations

import importlib
import json
import os
import stat
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.report.observed import attempt_steps, load_observed
from agentstudy.report.tidy import ANSWER_COLUMN, COLUMNS
from agentstudy.web.pair_page import pair_page, sides_for
from agentstudy.web.study_page import ViewOptions
from export_study import run_args, small_study

HARBOR_WHEEL = Path(__file__).resolve().parents[1] / ".tools" / "harbor" / "harbor-0.26.0-py3-none-any.whl"
MODELS = "harbor/models/trajectories/"


@pytest.fixture(scope="module")
def atif_models(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """harbor 0.26.0's ATIF models, imported alone from the pinned wheel (``scripts/setup.sh`` fetches it)."""
    if not HARBOR_WHEEL.is_file():
        pytest.fail(f"{HARBOR_WHEEL} is missing: run scripts/setup.sh")
    root = tmp_path_factory.mktemp("harbor")
    with zipfile.ZipFile(HARBOR_WHEEL) as wheel:
        for name in wheel.namelist():
            if name.startswith(MODELS) and name.endswith(".py"):
                wheel.extract(name, root)
    for package in ("harbor", "harbor/models"):
        (root / package / "__init__.py").write_text("")
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("harbor.models.trajectories")
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == "harbor" or n.startswith("harbor.")]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished rehearsal pilot of both agents (one task, one repetition: 4 attempts) with its transcripts."""
    base = tmp_path_factory.mktemp("export")
    study, roots = small_study(base, ["claude-code", "codex"])
    output = base / "ledger.json"
    result = CliRunner().invoke(main, run_args(study, roots, output, 1, 1))
    assert result.exit_code == 0, result.output
    return output


def export(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["export", *args])
    return result.exit_code, result.stdout, result.stderr


def observations(ledger: Path) -> list[dict[str, Any]]:
    observed: list[dict[str, Any]] = json.loads(ledger.read_text())["observations"]
    return observed


def test_atif_trajectories_validate_and_count_the_ledgers_tool_calls(ledger: Path, atif_models: ModuleType,
                                                                      tmp_path: Path) -> None:
    target = tmp_path / "atif"
    code, out, err = export(str(ledger), "--format", "atif", "--output", str(target))
    assert code == 0, err
    assert out.strip() == f"4 attempts -> {target}"
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    files = sorted(target.iterdir())
    assert [f.name for f in files] == [f"attempt-0000{i}.json" for i in range(1, 5)]
    observed = observations(ledger)
    server_steps = 0
    for path, observation in zip(files, observed, strict=True):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        document = json.loads(path.read_text())
        trajectory = atif_models.Trajectory.model_validate(document)
        assert trajectory.schema_version == "ATIF-v1.8"
        calls = [call for step in trajectory.steps for call in step.tool_calls or []]
        assert len(calls) == observation["toolCalls"] > 0
        results = {r.source_call_id for step in trajectory.steps if step.observation
                   for r in step.observation.results}
        assert {call.tool_call_id for call in calls} == results  # every call has its result
        facts = document["extra"]["agentstudy"]
        assert (facts["task"], facts["scenario"], facts["repetition"], facts["agent"]) == (
            observation["taskId"], observation["scenario"], observation["repetition"], observation["agent"])
        assert facts["chargedUsd"] == observation["chargedUsd"] and facts["status"] == "completed"
        assert trajectory.agent.name == observation["agent"]
        assert trajectory.final_metrics.total_prompt_tokens == observation["inputTokens"]
        server_steps += sum(1 for call in calls if (call.extra or {}).get("server") == "doc-bridge")
        if observation["scenario"] == "repository-only":
            assert all(not call.extra for call in calls)
    assert server_steps == sum(o["treatment"]["serverCalls"] for o in observed)
    assert {o["agent"] for o in observed} == {"claude-code", "codex"}


def report_json(ledger: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["report", str(ledger), "--format", "json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_parquet_and_csv_read_back_give_the_reports_sums_per_arm(ledger: Path, tmp_path: Path) -> None:
    parquet, table = tmp_path / "t.parquet", tmp_path / "t.csv"
    assert export(str(ledger), "--format", "parquet", "--output", str(parquet))[0] == 0
    assert export(str(ledger), "--format", "csv", "--output", str(table))[0] == 0
    for path in (parquet, table):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    frame = pd.read_parquet(parquet)
    assert list(frame.columns) == [name for name, _, _ in COLUMNS]
    assert str(frame["inputTokens"].dtype) == "int64" and str(frame["chargedUsd"].dtype) == "float64"
    from_csv = pd.read_csv(table)
    assert list(from_csv.columns) == list(frame.columns)
    reported = report_json(ledger)
    attempts = [a for agent in reported["agents"].values() for a in agent["attempts"]]
    for source in (frame, from_csv):
        for agent in ("claude-code", "codex"):
            mine = source[source["agent"] == agent]
            theirs = reported["agents"][agent]["attempts"]
            for arm in ("repository-only", "doc-bridge-mcp"):
                rows = mine[mine["scenario"] == arm]
                wanted = [a for a in theirs if a["scenario"] == arm]
                assert len(rows) == len(wanted) == 1
                assert int(rows["inputTokens"].sum()) == sum(a["inputTokens"] for a in wanted)
                assert int(rows["outputTokens"].sum()) == sum(a["outputTokens"] for a in wanted)
                assert rows["chargedUsd"].sum() == pytest.approx(sum(a["chargedUsd"] for a in wanted), abs=1e-12)
        assert len(source) == len(attempts) == 4
    assert list(frame["position"]) == [1, 2, 3, 4]
    assert set(frame["armLabel"]) == {"Repository tools only", "Repository tools + doc-bridge MCP"}
    assert frame[frame["scenario"] == "doc-bridge-mcp"]["serverCalls"].min() >= 1


def test_answers_only_with_with_answers(ledger: Path, tmp_path: Path) -> None:
    answers = [o["answer"] for o in observations(ledger)]
    assert all(isinstance(a, str) and len(a) > 20 for a in answers)
    plain, full = tmp_path / "plain.csv", tmp_path / "full.csv"
    assert export(str(ledger), "--format", "csv", "--output", str(plain))[0] == 0
    assert export(str(ledger), "--format", "csv", "--output", str(full), "--with-answers")[0] == 0
    text = plain.read_text()
    assert "answer" not in text.splitlines()[0].split(",")
    assert not any(answer[:20] in text for answer in answers)
    assert list(pd.read_csv(full)["answer"]) == answers


def test_the_study_file_adds_category(ledger: Path, tmp_path: Path) -> None:
    target = tmp_path / "with.csv"
    assert export(str(ledger), "--format", "csv", "--output", str(target),
                  "--manifest", str(ledger.parent / "study.json"))[0] == 0
    frame = pd.read_csv(target)
    assert set(frame["category"]) == {"discovery"} and set(frame["repository"]) == {"lantern-cache"}


def test_bad_input_exits_2_and_writes_nothing(ledger: Path, tmp_path: Path) -> None:
    existing = tmp_path / "existing.csv"
    existing.write_text("mine\n")
    code, out, err = export(str(ledger), "--format", "csv", "--output", str(existing))
    assert (code, out) == (2, "") and "already exists" in err and len(err.strip().splitlines()) == 1
    assert existing.read_text() == "mine\n"
    tampered = tmp_path / "tampered.json"
    document = json.loads(ledger.read_text())
    document["observations"][0]["chargedUsd"] = 0
    tampered.write_text(json.dumps(document))
    code, _, err = export(str(tampered), "--format", "parquet", "--output", str(tmp_path / "t.parquet"))
    assert code == 2 and "does not verify" in err and not (tmp_path / "t.parquet").exists()
    # A transcript the ledger names but that is gone: the ATIF export refuses, and leaves no directory.
    copy = tmp_path / "copy.json"
    copy.write_bytes(ledger.read_bytes())
    (tmp_path / "copy.json.transcripts").mkdir(mode=0o700)
    code, _, err = export(str(copy), "--format", "atif", "--output", str(tmp_path / "atif"))
    assert code == 2 and "cannot read" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.json", "copy.json.transcripts", "existing.csv",
                                                           "tampered.json"]
    code, _, err = export(str(ledger), "--format", "xml", "--output", str(tmp_path / "x"))
    assert code == 2


def test_every_column_is_documented_with_its_type() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "looking-inside.md").read_text()
    documented = [line.split("|")[1:3] for line in page.splitlines() if line.startswith("| `")]
    assert [(name.strip().strip("`"), kind.strip()) for name, kind in documented] == [
        (name, kind) for name, kind, _ in (*COLUMNS, ANSWER_COLUMN)]


@pytest.fixture(scope="module")
def companion(ledger: Path) -> Path:
    """The rehearsal adjudication of the ledger (the scripted adjudicator, through the pinned Claude Code)."""
    roots = json.loads((ledger.parent / "study.json").read_text())["repositories"]
    argv = [sys.executable, "-m", "agentstudy", "adjudicate", str(ledger), "--manifest",
            str(ledger.parent / "study.json"), *[f"--root={name}={ledger.parent / 'study' / name}" for name in roots],
            "--rehearsal", "--cli-version", "2.1.296"]
    env = {**os.environ, "ADJUDICATOR_MODEL": "claude-haiku-5-5", "ADJUDICATOR_BUDGET_USD": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return ledger.parent / "ledger.adjudication.json"


def test_the_companion_adds_correctness_to_the_table_and_the_pair_page(ledger: Path, companion: Path,
                                                                         tmp_path: Path) -> None:
    target = tmp_path / "scored.csv"
    assert export(str(ledger), "--format", "csv", "--output", str(target), "--adjudication", str(companion))[0] == 0
    frame = pd.read_csv(target)
    reported = CliRunner().invoke(main, ["report", str(ledger), "--format", "json", "--adjudication", str(companion)])
    theirs = {(a["taskId"], a["scenario"], agent): a["correctness"]
              for agent, view in json.loads(reported.stdout)["agents"].items() for a in view["attempts"]}
    mine = {(r.task, r.scenario, r.agent): r.correctness for r in frame.itertuples()}
    assert mine == theirs and all(0 <= value <= 1 for value in mine.values())
    observed = load_observed([ledger], [companion])
    options = ViewOptions(token="t")
    sides = sides_for(observed, options, "lantern-discovery", 1, "codex", attempt_steps, lambda item: None)
    page = pair_page(observed, options, "lantern-discovery", 1, "codex", sides)
    assert page.count("adjudicator: correctness") == 2


def test_the_http_transports_attempts_export_as_valid_trajectories(atif_models: ModuleType, tmp_path: Path) -> None:
    study, roots = small_study(tmp_path / "http", None)
    ledger = tmp_path / "http" / "ledger.json"
    args = [a for a in run_args(study, roots, ledger, 1, 1) if a != "cli"]
    args[args.index("--transport") + 1:args.index("--transport") + 1] = ["http"]
    result = CliRunner().invoke(main, [*args, "--input-usd-per-million", "1", "--output-usd-per-million", "1"])
    assert result.exit_code == 0, result.output
    target = tmp_path / "atif"
    assert export(str(ledger), "--format", "atif", "--output", str(target))[0] == 0
    observed = observations(ledger)
    assert [o["transport"] for o in observed] == ["http", "http"]
    for path, observation in zip(sorted(target.iterdir()), observed, strict=True):
        trajectory = atif_models.Trajectory.model_validate(json.loads(path.read_text()))
        calls = [call for step in trajectory.steps for call in step.tool_calls or []]
        assert len(calls) == observation["toolCalls"] > 0
        server = [call for call in calls if (call.extra or {}).get("server")]
        assert len(server) == (observation["treatment"]["serverCalls"] if observation["treatment"] else 0)


def test_a_missing_transcript_is_said_on_the_pair_page(ledger: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.json"
    copy.write_bytes(ledger.read_bytes())  # no transcripts beside it
    observed = load_observed([copy])
    options = ViewOptions(token="t")
    sides = sides_for(observed, options, "lantern-discovery", 1, "claude-code", attempt_steps, lambda item: None)
    page = pair_page(observed, options, "lantern-discovery", 1, "claude-code", sides)
    assert page.count("its transcript cannot be shown: cannot read") == 2
