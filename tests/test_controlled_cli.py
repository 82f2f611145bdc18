"""``agentstudy plan | suite | ledger | schema`` on the original files, tampered files and bad files."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.protocol.controlled.hashing import js_json, with_content_hash
from agentstudy.protocol.controlled.ledger import create_observation, empty_ledger, ledger_file_text, upsert_observation

ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"
MISMATCH_237 = "observation 237 (observations[236], observedAt 2026-08-31T17:44:06.352Z)"
MISMATCH_283 = "observation 283 (observations[282], observedAt 2026-08-31T18:26:31.828Z)"


def artifact(name: str) -> Path:
    path = ARTIFACTS / name
    if not path.is_file():
        pytest.fail(f"original artifact missing: {path}")
    return path


@cache
def original(name: str) -> str:
    return artifact(name).read_text(encoding="utf-8")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentstudy: error: "), result.stderr
    return lines[0]


def test_plan_text_describes_hashes_models_scenarios_sampling_budget() -> None:
    result = run("plan", str(artifact("run-plan-v1.json")))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "29e95cc2d8fa7f3e6a789884943f9d2cf20896ddb5405196b5ae869e87577d28  verified" in text
    assert "phase-7-canonical-metrics-01" in text and "gpt-5.6-sol" in text and "gpt-5.6-luna" in text
    assert "registry-assisted (agent ecosystem-doc-bridge-corpus-scanner v1.0.0)" in text
    assert "balanced-task-strata: 24 executions over 6 model×scenario strata (4 each)" in text
    assert "400000 tokens, 180000 ms, 256000 output bytes" in text
    assert not text.lstrip().startswith("{")


def test_plan_with_suite_counts_selected_executions_per_stratum() -> None:
    result = run("plan", str(artifact("run-plan-v1.json")), "--suite", str(artifact("task-suite-v1.json")), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["ok"] is True
    selection = document["plan"]["selection"]
    assert selection["executions"] == 24 and selection["tasks"] == 24
    assert [item["executions"] for item in selection["byStratum"]] == [4] * 6
    text = run("plan", str(artifact("run-plan-v1.json")), "--suite", str(artifact("task-suite-v1.json"))).stdout
    assert "24 executions of 24 tasks (seed phase-1-baseline)" in text
    assert "reference-model  registry-assisted                  4" in text


def test_plan_with_a_suite_it_was_not_made_for(tmp_path: Path) -> None:
    suite = json.loads(original("task-suite-v1.json"))
    suite["ordering"]["seed"] = "another-seed"
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(with_content_hash(suite)), encoding="utf-8")
    line = one_error_line(run("plan", str(artifact("run-plan-v1.json")), "--suite", str(path)))
    assert "taskSuiteHash: the plan names suite d7810828" in line


def test_suite_text_and_json() -> None:
    text = run("suite", str(artifact("task-suite-v1.json")))
    assert text.exit_code == 0
    assert "288 executions" in text.stdout and "seed phase-1-baseline" in text.stdout
    document = json.loads(run("suite", str(artifact("task-suite-v1.json")), "--json").stdout)["suite"]
    assert document["plannedRuns"] == 288 and document["taskCount"] == 24 and document["verified"] is True


def test_original_ledger_is_refused_naming_exactly_its_two_mismatches() -> None:
    line = one_error_line(run("ledger", str(artifact("observation-ledger-v1.json"))))
    assert "2 content hashes do not match" in line
    assert MISMATCH_237 in line and MISMATCH_283 in line
    assert line.count("observation ") == 2
    assert "--allow-unverified" in line


def test_original_ledger_with_allow_unverified_warns_and_summarises() -> None:
    result = run("ledger", str(artifact("observation-ledger-v1.json")), "--allow-unverified")
    assert result.exit_code == 0
    warning = result.stderr.strip()
    assert warning.startswith("agentstudy: warning: unverified:") and "\n" not in warning
    assert MISMATCH_237 in warning and MISMATCH_283 in warning
    assert "446 verified, 2 NOT VERIFIED" in result.stdout
    assert "cc3eb8a816f961b4a4d8fdefd96365e6b89f3fd7d5aad287c3c5cc79a80ed0f5  verified" in result.stdout
    assert "completed 255" in result.stdout and "pending 314, automated 134" in result.stdout
    assert "phase-9-ab-adjudicated-cost-03" in result.stdout


def test_original_ledger_json_summary() -> None:
    result = run("ledger", str(artifact("observation-ledger-v1.json")), "--allow-unverified", "--json")
    summary = json.loads(result.stdout)["ledger"]
    assert summary["observations"] == 448 and summary["verified"] is False
    assert [item["position"] for item in summary["mismatches"]] == [237, 283]
    assert summary["byAdjudication"] == {"pending": 314, "automated": 134}
    assert len(summary["runs"]) == 11 and len(summary["byRound"]) == 8
    assert sum(run["observations"] for run in summary["runs"]) == 448
    assert summary["byStatus"]["completed"] == 255


def _clean_ledger_file(tmp_path: Path, count: int = 3) -> Path:
    payloads = [json.loads(original("observation-ledger-v1.json"))["observations"][index] for index in range(count)]
    ledger = empty_ledger()
    for payload in payloads:
        ledger = upsert_observation(ledger, create_observation(payload))
    path = tmp_path / "ledger.json"
    path.write_text(ledger_file_text(ledger), encoding="utf-8")
    return path


def test_a_verified_ledger_passes(tmp_path: Path) -> None:
    result = run("ledger", str(_clean_ledger_file(tmp_path)))
    assert result.exit_code == 0 and result.stderr == ""
    assert "3 verified" in result.stdout


def test_one_changed_byte_in_an_observation_is_refused(tmp_path: Path) -> None:
    path = _clean_ledger_file(tmp_path)
    text = path.read_text(encoding="utf-8")
    target = '"durationMs": 79451'  # observation 1 only
    assert text.count(target) == 1
    path.write_text(text.replace(target, '"durationMs": 79452'), encoding="utf-8")
    line = one_error_line(run("ledger", str(path)))
    assert "2 content hashes do not match: the top-level contentHash" in line
    assert "observation 1 (observations[0], observedAt 2026-08-31T13:44:22.523Z)" in line
    allowed = run("ledger", str(path), "--allow-unverified")
    assert allowed.exit_code == 0 and "observation 1 (observations[0]" in allowed.stderr
    assert "NOT VERIFIED" in allowed.stdout


def test_one_changed_byte_in_a_plan_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(original("run-plan-v1.json").replace('"maxTokens": 400000', '"maxTokens": 400001'),
                    encoding="utf-8")
    line = one_error_line(run("plan", str(path)))
    assert "1 content hash does not match: the top-level contentHash (stored 29e95cc2" in line
    assert "--allow-unverified" not in line  # plan has no such option
    assert run("plan", str(path), "--allow-unverified").exit_code == 2


def _bad(tmp_path: Path, name: str, mutate: Callable[[dict[str, Any]], object]) -> Path:
    document = json.loads(original(name))
    changed = copy.deepcopy(document)
    mutate(changed)
    path = tmp_path / name
    path.write_text(js_json(with_content_hash(changed), indent=2), encoding="utf-8")
    return path


BAD_FILES: list[tuple[str, str, Callable[[dict[str, Any]], object], str]] = [
    ("plan", "run-plan-v1.json", lambda d: d["budget"].update(maxTokenz=1), "budget.maxTokenz: unknown key"),
    ("plan", "run-plan-v1.json", lambda d: d["taskIds"].__setitem__(3, d["taskIds"][0]),
     "taskIds: duplicate task id 'consumer-01-discovery'"),
    ("plan", "run-plan-v1.json", lambda d: d["models"].pop(), "models: List should have at least 2 items"),
    ("suite", "task-suite-v1.json", lambda d: d["tasks"].pop(), "tasks: 6 repositories need exactly 24 tasks"),
    ("suite", "task-suite-v1.json", lambda d: d["tasks"][2].update(expectedOutcome="Write to /home/alice/out"),
     "tasks[2].expectedOutcome: unsafe study text"),
    ("suite", "task-suite-v1.json", lambda d: d.update(population=[*d["population"][:5], "consumer-01"]),
     "population: duplicate id 'consumer-01'"),
    ("ledger", "observation-ledger-v1.json",
     lambda d: (d.update(observations=d["observations"][:1]), d["observations"][0]["execution"].pop("tokenMethod"),
                d["observations"][0].update(with_content_hash(d["observations"][0]))),
     "observations[0].execution.tokenMethod: inputTokens/outputTokens require a tokenMethod"),
]


@pytest.mark.parametrize(("command", "name", "mutate", "expected"), BAD_FILES)
def test_bad_files_give_one_line_naming_the_field(tmp_path: Path, command: str, name: str,
                                                 mutate: Callable[[dict[str, Any]], object], expected: str) -> None:
    path = _bad(tmp_path, name, mutate)
    line = one_error_line(run(command, str(path)))
    assert expected in line and str(path) in line


@pytest.mark.parametrize(("text", "expected"), [
    ("{", "not valid JSON (line 1"),
    ('{"type": 1, "type": 2}', "duplicated key 'type'"),
    ("[]", "the document must be a JSON object"),
])
def test_unreadable_documents(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    assert expected in one_error_line(run("ledger", str(path)))


def test_missing_file() -> None:
    assert "no such file" in one_error_line(run("suite", "/nonexistent/suite.json"))


def test_schema_prints_each_registered_contract() -> None:
    names = run("schema").stdout.split()
    assert {"controlled-study-run-plan", "study-task-suite", "study-provider-cli-config",
            "controlled-study-repository-config", "controlled-study-observation",
            "controlled-study-observation-ledger"} <= set(names)
    for name in names:
        result = run("schema", name)
        assert result.exit_code == 0
        schema = json.loads(result.stdout)
        assert schema["type"] == "object" and schema["additionalProperties"] is False


def test_schema_uses_json_names_and_forbids_null_optionals() -> None:
    schema = json.loads(run("schema", "controlled-study-observation").stdout)
    execution = schema["$defs"]["ExecutionResult"]
    assert "exitCode" in execution["required"] and {"type": "null"} in execution["properties"]["exitCode"]["anyOf"]
    assert execution["properties"]["stdoutHash"] == {"title": "stdoutHash", "pattern": "^[a-f0-9]{64}$",
                                                     "type": "string"}
    assert "contextTokens" in schema["properties"] and "context_tokens" not in schema["properties"]


def test_unknown_schema() -> None:
    assert "unknown schema 'nope'; known: " in one_error_line(run("schema", "nope"))
