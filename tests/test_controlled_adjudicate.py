"""``agentstudy adjudicate-controlled``: a separate, blind adjudicator; failures stay pending; new output file."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.controlled.contracts import parse_contract
from agentstudy.protocol.controlled.hashing import with_content_hash
from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
from agentstudy.rehearsal.controlled.example import ControlledExample, build_controlled_example, example_providers
from test_controlled_run_support import cli, copy_example, one_error_line, run_args, write_providers


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[ControlledExample, Path]:
    """The example study and a ledger of its run (12 observations), built once for this module."""
    base = tmp_path_factory.mktemp("adjudicate")
    example = build_controlled_example(base / "study")
    ledger = base / "ledger.json"
    result = cli(*run_args(example, ledger))
    assert result.exit_code == 0, result.output
    return example, ledger


def adjudicator_config(tmp_path: Path, example: ControlledExample, script: str | None = None,
                       **fields: Any) -> Path:
    """A provider config whose adjudicator runs ``script`` (a Python file), or the reference adjudicator."""
    payload = example_providers(sys.executable)
    if script is not None:
        path = tmp_path / "adjudicator.py"
        path.write_text(script)
        payload["adjudicator"] = {**payload["adjudicator"], "args": [str(path)]}
    payload["adjudicator"] = {**payload["adjudicator"], **fields}
    return write_providers(tmp_path / "adjudicator.json", payload)


def adjudicate(example: ControlledExample, ledger: Path, config: Path, output: Path, *extra: str) -> Any:
    return cli("adjudicate-controlled", str(ledger), str(example.suite), "--adjudicator", str(config), "--output",
               str(output), "--json", *extra)


def load(path: Path) -> ControlledStudyObservationLedgerV1:
    loaded = parse_contract(ControlledStudyObservationLedgerV1, path.read_text(encoding="utf-8"))
    assert loaded.verified
    return loaded.model


def test_reference_adjudicator_adjudicates_every_observation(study: tuple[ControlledExample, Path],
                                                             tmp_path: Path) -> None:
    example, ledger = study
    before = ledger.read_bytes()
    config = adjudicator_config(tmp_path, example)
    output = tmp_path / "adjudicated.json"
    result = adjudicate(example, ledger, config, output)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert summary["byAdjudication"] == {"automated": 12} and summary["selected"] == 12
    assert ledger.read_bytes() == before
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    config_hash = json.loads(config.read_text())["contentHash"]
    for observation in load(output).observations:
        judged = observation.adjudication
        assert (judged.status, judged.actor, judged.method, judged.configuration_hash, judged.token_method) == (
            "automated", "rehearsal-adjudicator", "independent-rubric-v1", config_hash, "estimate")
        measurements = observation.measurements or {}
        assert {"adjudicatorLatencyMs", "adjudicatorInputTokens", "adjudicatorOutputTokens",
                "adjudicatorCostUsd"} <= set(measurements)
        assert "adjudicatorTokenCostUnits" not in measurements  # estimated tokens are not provider units
    outcomes = sorted(item.adjudication.outcome or "" for item in load(output).observations)
    assert outcomes == ["partial", *["success"] * 11]
    again = adjudicate(example, ledger, config, output)
    assert "already exists" in one_error_line(again)


def test_adjudicator_tokens_units_and_cost(study: tuple[ControlledExample, Path], tmp_path: Path) -> None:
    example, ledger = study
    script = ("import json, sys; sys.stdin.read(); print(json.dumps({'outcome': 'success', 'confidence': 0.75, "
              "'reasonCodes': ['looks-right'], 'inputTokens': 100, 'outputTokens': 30, 'tokenMethod': 'provider', "
              "'measurements': {'cachedInputTokens': 20, 'agentCostUsd': 99}}))")
    pricing = {"currency": "USD", "inputPerMillionUsd": 2, "cachedInputPerMillionUsd": 1, "outputPerMillionUsd": 4}
    config = adjudicator_config(tmp_path, example, script, pricing=pricing)
    output = tmp_path / "out.json"
    result = adjudicate(example, ledger, config, output, "--limit", "1")
    assert result.exit_code == 0, result.output
    first = json.loads(output.read_text())["observations"][0]
    assert first["measurements"]["adjudicatorInputTokens"] == 100
    assert first["measurements"]["adjudicatorTokenCostUnits"] == 130
    assert first["measurements"]["adjudicatorCostUsd"] == 0.0003
    assert first["measurements"]["agentCostUsd"] == 0  # the provider's record is never overwritten
    assert first["adjudication"]["confidence"] == 0.75 and first["adjudication"]["reasonCodes"] == ["looks-right"]
    assert str(tmp_path) not in first["adjudication"]["reason"]
    original = json.loads(ledger.read_text())["observations"]
    assert json.loads(output.read_text())["observations"][1:] == original[1:]  # the rest pass through


@pytest.mark.parametrize(("script", "fields", "status"), [
    ("print('not json')", {}, "invalid-output"),
    ("import json; print(json.dumps({'outcome': 'success', 'confidence': 2, 'reasonCodes': []}))", {},
     "invalid output"),
    ("import json; print(json.dumps({'outcome': 'success', 'confidence': 1, 'reasonCodes': [], 'extra': 1}))", {},
     "invalid output"),
    ("import time; time.sleep(60)", {}, "timed-out"),
    ("print('x' * 5000)", {"maxOutputBytes": 100}, "budget-exceeded"),
    ("import json, sys; print(json.dumps({'outcome': 'success', 'confidence': 1, 'reasonCodes': []})); sys.exit(1)",
     {}, "unavailable"),
])
def test_failures_leave_the_observation_pending(study: tuple[ControlledExample, Path], tmp_path: Path, script: str,
                                                fields: dict[str, Any], status: str) -> None:
    example, ledger = study
    suite = copy_example(example, tmp_path / "inputs")
    if status == "timed-out":  # the adjudicator's runtime is the suite's maxRuntimeMsPerTask: use a short one
        document = json.loads(suite.suite.read_text())
        document["maxRuntimeMsPerTask"] = 500
        for task in document["tasks"]:
            task["budget"]["maxRuntimeMs"] = 500
        suite.suite.write_text(json.dumps(with_content_hash({k: v for k, v in document.items()
                                                             if k != "contentHash"})))
    config = adjudicator_config(tmp_path, example, "import sys; sys.stdin.read()\n" + script, **fields)
    output = tmp_path / "out.json"
    result = cli("adjudicate-controlled", str(ledger), str(suite.suite), "--adjudicator", str(config), "--output",
                 str(output), "--limit", "1", "--json")
    assert result.exit_code == 1, result.output  # written, but something stayed pending
    first = load(output).observations[0]
    judged = first.adjudication
    assert (judged.status, judged.actor, judged.method, judged.outcome) == ("pending", "rehearsal-adjudicator",
                                                                            "independent-rubric-v1", None)
    assert judged.reason is not None and status in judged.reason
    assert "adjudicatorLatencyMs" in (first.measurements or {})


def test_the_adjudicator_sees_no_paths_output_or_credentials(study: tuple[ControlledExample, Path],
                                                             tmp_path: Path) -> None:
    example, ledger = study
    seen = tmp_path / "seen.json"
    script = (f"import json, os, sys; data = sys.stdin.read(); json.dump({{'input': data, 'cwd': os.getcwd(), "
              f"'files': os.listdir('.'), 'env': sorted(os.environ)}}, open({str(seen)!r}, 'w')); "
              "print(json.dumps({'outcome': 'partial', 'confidence': 0.5, 'reasonCodes': []}))")
    config = adjudicator_config(tmp_path, example, script)
    output = tmp_path / "out.json"
    result = cli("adjudicate-controlled", str(ledger), str(example.suite), "--adjudicator", str(config), "--output",
                 str(output), "--limit", "1", env={"ANTHROPIC_API_KEY": "sk-planted-adjudicator-key-123456"})
    assert result.exit_code == 0, result.output
    record = json.loads(seen.read_text())
    assert record["files"] == [] and Path(record["cwd"]) != Path.cwd()
    assert set(record["env"]) - {"LC_CTYPE"} <= {"PATH", "HOME", "TMPDIR"}
    data = record["input"]
    observation = json.loads(ledger.read_text())["observations"][0]
    for forbidden in [*(str(root) for root in example.roots.values()), str(ledger), "sk-planted-adjudicator-key",
                      observation["runId"], observation["execution"]["stdoutHash"], "doc-bridge.study-provider.v1"]:
        assert forbidden not in data
    request = json.loads(data)
    assert request["protocol"] == "doc-bridge.study-adjudicator.v1"
    assert set(request["candidate"]) == {"taskOutcome", "evidenceQuality", "safetyOutcome", "evidenceIds",
                                         "evidenceCoverage", "acceptanceExecution", "measurements", "execution"}
    assert request["candidate"]["acceptanceExecution"]["measurementPresent"] is True
    assert request["task"]["mechanical"] == [] and set(request["task"]["rubric"]) == {
        "success", "partial", "incorrect", "incomplete", "blocked"}


def test_selection_by_run_offset_and_limit(study: tuple[ControlledExample, Path], tmp_path: Path) -> None:
    example, ledger = study
    config = adjudicator_config(tmp_path, example)
    output = tmp_path / "out.json"
    result = adjudicate(example, ledger, config, output, "--run-id", "rehearsal-example-01", "--offset", "3",
                        "--limit", "2")
    assert result.exit_code == 0, result.output
    actors = [item.adjudication.actor for item in load(output).observations]
    assert actors == ["deterministic-rubric-v1"] * 3 + ["rehearsal-adjudicator"] * 2 + ["deterministic-rubric-v1"] * 7
    other = tmp_path / "other.json"
    none = adjudicate(example, ledger, config, other, "--run-id", "another-run")
    assert none.exit_code == 0 and json.loads(none.stdout)["summary"]["selected"] == 0
    assert load(other).content_hash == load(ledger).content_hash


@pytest.mark.parametrize(("change", "expected"), [
    ("no-adjudicator", "declares no adjudicator"),
    ("missing-command", "does not exist"),
    ("input-too-large", "above the adjudicator's maxInputBytes 10"),
])
def test_refusals_before_any_adjudicator_starts(study: tuple[ControlledExample, Path], tmp_path: Path, change: str,
                                                expected: str) -> None:
    example, ledger = study
    payload = example_providers(sys.executable)
    if change == "no-adjudicator":
        del payload["adjudicator"]
    elif change == "missing-command":
        payload["adjudicator"]["command"] = "./no-such-adjudicator"
    else:
        payload["adjudicator"]["maxInputBytes"] = 10
    config = write_providers(tmp_path / "config.json", payload)
    output = tmp_path / "out.json"
    assert expected in one_error_line(adjudicate(example, ledger, config, output))
    assert not output.exists()
