"""`--continue-from`: an explicit continuation of a blocked run into a second ledger (real HTTP on 127.0.0.1,
the scripted Messages API server with a fault schedule), and `report` over the chain."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.protocol.continuation import chain_problems
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger_bytes
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("continuation") / "study")


def _invoke(args: list[str]) -> Result:
    env: dict[str, str | None] = {"ANTHROPIC_API_KEY": None, "STUDY_INPUT_USD_PER_MILLION": None,
                                  "STUDY_OUTPUT_USD_PER_MILLION": None}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _args(study: ExampleStudy, output: Path, *extra: str, model: str = "claude-haiku-5-5") -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--pilot-tasks", "2", "--transport",
            "http", "--rehearsal", *roots, "--output", str(output), "--model", model, "--budget-usd", "1", *extra]


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


def _unsealed(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k not in ("hashAlgo", "ledgerHash")}


@pytest.fixture(scope="module")
def chain(study: ExampleStudy, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, bytes]:
    """A run whose second attempt meets a 529 on every request (blocked), and its continuation."""
    directory = tmp_path_factory.mktemp("chain")
    first, second = directory / "first.json", directory / "second.json"
    result = _invoke(_args(study, first, "--rehearsal-faults", "attempt=2:529"))
    assert result.exit_code == 1, result.output
    before = first.read_bytes()
    result = _invoke(_args(study, second, "--continue-from", str(first)))
    assert result.exit_code == 0, result.output
    return first, second, before


def test_a_persistent_529_blocks_the_run_and_the_continuation_finishes_it(
        chain: tuple[Path, Path, bytes]) -> None:
    first_path, second_path, before = chain
    assert first_path.read_bytes() == before, "the old ledger is only read"
    first, second = _read(first_path), _read(second_path)
    assert first["status"] == "blocked"
    assert [o["status"] for o in first["observations"]] == ["completed", "failed"]
    assert first["observations"][1]["failureKind"] == "overloaded"
    assert second["continues"] == {"ledgerSha256": hashlib.sha256(before).hexdigest(), "runId": first["runId"],
                                   "earlierRuns": [], "completedBefore": 1}
    assert second["runId"] != first["runId"]
    assert second["plannedAttempts"] == 3 and all(o["status"] == "completed" for o in second["observations"])
    cells = {(o["taskId"], o["scenario"], o["repetition"]) for o in second["observations"]}
    done = first["observations"][0]
    assert (done["taskId"], done["scenario"], done["repetition"]) not in cells
    failed = first["observations"][1]
    assert (failed["taskId"], failed["scenario"], failed["repetition"]) in cells
    assert verify_ledger_bytes(second_path.read_bytes()).problems == ()
    names = [("first.json", hashlib.sha256(before).hexdigest(), first),
             ("second.json", hashlib.sha256(second_path.read_bytes()).hexdigest(), second)]
    assert chain_problems(names) == []
    assert chain_problems(list(reversed(names)))  # the wrong order is no chain


def test_report_over_the_chain_names_both_runs_and_keeps_the_failure_as_evidence(
        chain: tuple[Path, Path, bytes]) -> None:
    first_path, second_path, _ = chain
    result = _invoke(["report", str(first_path), str(second_path), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    runs = report["runs"]
    assert [run["runId"] for run in runs] == [_read(first_path)["runId"], _read(second_path)["runId"]]
    assert [len(run["attempts"]) for run in runs] == [2, 3]
    statuses = [a["status"] for a in report["attempts"]]
    assert sorted(statuses) == ["completed"] * 4 + ["failed"]
    text = _invoke(["report", str(first_path), str(second_path)])
    assert text.exit_code == 0, text.output
    assert _read(first_path)["runId"] in text.stdout and _read(second_path)["runId"] in text.stdout


def test_power_plans_from_the_chain(chain: tuple[Path, Path, bytes]) -> None:
    first_path, second_path, _ = chain
    result = _invoke(["power", str(first_path), str(second_path), "--json", "--metric", "inputTokens"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ledger"] == f"{first_path} + {second_path}"
    result = _invoke(["power", str(second_path), str(first_path), "--json"])
    assert result.exit_code == 2 and "continues another run" in result.output


def test_a_chain_out_of_order_or_with_a_cell_completed_twice_is_refused(
        chain: tuple[Path, Path, bytes]) -> None:
    first_path, second_path, _ = chain
    result = _invoke(["report", str(second_path), str(first_path)])
    assert result.exit_code == 2 and "continues another run" in result.output
    result = _invoke(["report", str(first_path), str(first_path)])
    assert result.exit_code == 2 and "does not continue" in result.output


def test_a_cell_completed_in_both_runs_is_refused(study: ExampleStudy, chain: tuple[Path, Path, bytes],
                                                  tmp_path: Path) -> None:
    first_path, second_path, _ = chain
    first, forged = _read(first_path), _read(second_path)
    done = first["observations"][0]
    repeat = next(o for o in forged["observations"] if o["scenario"] == done["scenario"])
    repeat["taskId"], repeat["repetition"] = done["taskId"], done["repetition"]
    altered = tmp_path / "second.json"
    altered.write_text(json.dumps(seal_ledger(_unsealed(forged))), encoding="utf-8")
    assert verify_ledger_bytes(altered.read_bytes()).problems == (), "each ledger verifies on its own"
    result = _invoke(["report", str(first_path), str(altered)])
    assert result.exit_code == 2 and "completed in both first.json and second.json" in result.output
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    result = _invoke(["adjudicate", str(first_path), str(altered), "--manifest", str(study.manifest_path), *roots,
                      "--rehearsal", "--model", "claude-haiku-5-5", "--budget-usd", "1"])
    assert result.exit_code == 2 and "completed in both first.json and second.json" in result.output
    assert not altered.with_suffix(".adjudication.json").exists()


def test_a_continuation_with_another_model_is_refused(
        study: ExampleStudy, chain: tuple[Path, Path, bytes], tmp_path: Path) -> None:
    first_path, _, before = chain
    output = tmp_path / "other.json"
    result = _invoke(_args(study, output, "--continue-from", str(first_path), model="claude-sonnet-5-5"))
    assert result.exit_code == 2 and "model" in result.output and "claude-haiku-5-5" in result.output
    assert not output.exists() and first_path.read_bytes() == before


def test_a_continuation_at_another_pin_is_refused(study: ExampleStudy, chain: tuple[Path, Path, bytes],
                                                  tmp_path: Path) -> None:
    first_path = chain[0]
    forged = _read(first_path)
    name = next(iter(forged["repositories"]))
    forged["repositories"][name] = "0" * 40
    altered = tmp_path / "altered.json"
    altered.write_text(json.dumps(seal_ledger(_unsealed(forged))), encoding="utf-8")
    output = tmp_path / "next.json"
    result = _invoke(_args(study, output, "--continue-from", str(altered)))
    assert result.exit_code == 2, result.output
    assert "repository pins" in result.output and not output.exists()


def test_the_chain_is_adjudicated_and_its_report_shows_correctness_over_every_cell(
        study: ExampleStudy, chain: tuple[Path, Path, bytes], claude_bin: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``adjudicate A.json B.json`` (real Claude Code as the adjudicator, rehearsal): one companion per run, each
    bound to its ledger; ``report`` with both companions scores every completed cell and names both runs."""
    first_path, second_path, _ = chain
    monkeypatch.setenv("AGENTSTUDY_CLAUDE_BIN", str(claude_bin))
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    base = ["adjudicate", "--manifest", str(study.manifest_path), *roots, "--rehearsal", "--model", "claude-haiku-5-5",
            "--budget-usd", "1", "--seed", "7"]
    backwards = _invoke([*base[:1], str(second_path), str(first_path), *base[1:]])
    # given backwards, the later run comes first with its predecessor not yet given: refused, oldest first asked
    assert backwards.exit_code == 2 and "oldest first" in backwards.output
    one_output = _invoke([*base[:1], str(first_path), str(second_path), *base[1:], "--output",
                          str(first_path.with_name("both.adjudication.json"))])
    assert one_output.exit_code == 2 and "a chain of runs writes one beside each ledger" in one_output.output
    result = _invoke([*base[:1], str(first_path), str(second_path), *base[1:]])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.strip().splitlines()]
    assert [(line["status"], line["scored"], line["missing"]) for line in lines] == [("adjudicated", 1, 1),
                                                                                     ("adjudicated", 3, 0)]
    assert sum(Decimal(str(line["spentUsd"])) for line in lines) <= Decimal("1")
    companions = [first_path.with_suffix(".adjudication.json"), second_path.with_suffix(".adjudication.json")]
    for companion, ledger in zip(companions, (first_path, second_path), strict=True):
        assert _read(companion)["ledgerSha256"] == hashlib.sha256(ledger.read_bytes()).hexdigest()
    again = _invoke([*base[:1], str(first_path), str(second_path), *base[1:]])
    assert again.exit_code == 2 and "already exists" in again.output
    args = ["report", str(first_path), str(second_path), "--adjudication", str(companions[0]), "--adjudication",
            str(companions[1])]
    one = _invoke([*args[:-2], "--format", "json"])
    assert one.exit_code == 2 and "one per ledger" in one.output
    report = json.loads(_invoke([*args, "--format", "json"]).stdout)
    assert [run["runId"] for run in report["runs"]] == [_read(first_path)["runId"], _read(second_path)["runId"]]
    by_status = sorted((a["status"], a["adjudication"], a["runId"]) for a in report["attempts"])
    first_id, second_id = report["runs"][0]["runId"], report["runs"][1]["runId"]
    assert by_status == sorted([("completed", "scored", first_id), ("failed", "missing", first_id),
                                *[("completed", "scored", second_id)] * 3])
    assert all(isinstance(a["correctness"], float) for a in report["attempts"] if a["status"] == "completed")
    text = _invoke(args)
    assert text.exit_code == 0, text.output
    assert "correctness" in text.stdout and first_id in text.stdout and second_id in text.stdout
    assert "each bound to its run's ledger SHA-256" in text.stdout
    plan = _invoke(["power", *args[1:], "--json", "--metric", "correctness"])
    assert plan.exit_code == 0, plan.output
    planned = json.loads(plan.stdout)
    assert planned["ledger"] == f"{first_path} + {second_path}" and "correctness" in json.dumps(planned)
