"""``agentstudy run`` on the example study: dry run, full run, idempotent re-run, refusals, no secrets recorded."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from agentstudy.commands.run import run_command
from agentstudy.protocol.controlled.contracts import parse_contract
from agentstudy.protocol.controlled.hashing import with_content_hash
from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
from agentstudy.rehearsal.controlled.example import (
    ControlledExample,
    build_controlled_example,
    example_providers,
)
from test_controlled_run_support import cli, copy_example, one_error_line, run_args, write_providers

PLANTED_SECRET = "sk-planted-0123456789abcdef-never-record"
PLANTED_ALLOWED = "allowlisted-credential-77889900"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> ControlledExample:
    """The example study, built once for this module (runs write only their own ledgers)."""
    return build_controlled_example(tmp_path_factory.mktemp("controlled") / "study")


def read_ledger(path: Path) -> ControlledStudyObservationLedgerV1:
    loaded = parse_contract(ControlledStudyObservationLedgerV1, path.read_text(encoding="utf-8"))
    assert loaded.verified
    return loaded.model


def test_dry_run_counts_and_hashes_without_ledger_or_process(example: ControlledExample, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    script = tmp_path / "provider.py"
    script.write_text(f"#!{sys.executable}\nopen({str(marker)!r}, 'w').write('x')\n")
    script.chmod(0o755)
    inputs = copy_example(example, tmp_path / "inputs")
    write_providers(inputs.providers, {**example_providers(sys.executable), "providers": [
        {**entry, "command": str(script), "args": []} for entry in example_providers(sys.executable)["providers"]]})
    ledger = tmp_path / "ledger.json"
    result = cli(*run_args(inputs, ledger, "--dry-run", "--json"))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert (summary["status"], summary["planned"], summary["executed"], summary["skipped"]) == ("dry-run", 12, 0, 0)
    providers_hash = json.loads(inputs.providers.read_text())["contentHash"]
    assert summary["providerConfigHash"] == providers_hash
    assert summary["repositoryConfigHash"] == json.loads(inputs.repositories.read_text())["contentHash"]
    assert not ledger.exists() and not marker.exists()


def test_run_then_rerun_skips_everything(example: ControlledExample, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    first = cli(*run_args(example, ledger, "--json", "--round", "rehearsal-1"))
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)["summary"]
    assert (summary["status"], summary["planned"], summary["executed"], summary["skipped"]) == ("completed", 12, 12, 0)
    assert summary["byStatus"] == {"completed": 12}
    assert summary["byOutcome"] == {"success": 11, "partial": 1}  # lantern-implementation's peek check fails
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    model = read_ledger(ledger)
    assert len(model.observations) == 12 and summary["ledgerHash"] == model.content_hash
    for observation in model.observations:
        assert observation.round == "rehearsal-1" and observation.execution.token_method == "estimate"
        assert observation.adjudication.status == "automated"
        assert observation.adjudication.actor == "deterministic-rubric-v1"
        assert observation.context_token_method == "estimate"
        assert observation.context_tokens == -(-observation.context_bytes // 4)
    before = ledger.read_bytes()
    again = cli(*run_args(example, ledger, "--json", "--round", "rehearsal-1"))
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)["summary"]
    assert (summary["executed"], summary["skipped"]) == (0, 12)
    assert ledger.read_bytes() == before


def test_run_resumes_what_is_missing(example: ControlledExample, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    assert cli(*run_args(example, ledger)).exit_code == 0
    document = json.loads(ledger.read_text())
    kept = document["observations"][:5]
    payload = {key: value for key, value in document.items() if key not in ("contentHash", "contentHashAlgo")}
    ledger.write_text(json.dumps(with_content_hash({**payload, "observations": kept}), ensure_ascii=False))
    result = cli(*run_args(example, ledger, "--json"))
    summary = json.loads(result.stdout)["summary"]
    assert (summary["executed"], summary["skipped"]) == (7, 5)
    assert len(read_ledger(ledger).observations) == 12


def test_a_ledger_holding_the_run_under_another_plan_is_refused(example: ControlledExample, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    assert cli(*run_args(example, ledger)).exit_code == 0
    inputs = copy_example(example, tmp_path / "inputs")
    plan: dict[str, Any] = json.loads(inputs.plan.read_text())
    plan["budget"]["maxAttempts"] = 1
    inputs.plan.write_text(json.dumps(with_content_hash({k: v for k, v in plan.items() if k != "contentHash"})))
    before = ledger.read_bytes()
    line = one_error_line(cli(*run_args(inputs, ledger)))
    assert "already holds run 'rehearsal-example-01' with another plan hash" in line
    assert ledger.read_bytes() == before


def test_retries_through_the_run_with_the_reference_provider(example: ControlledExample, tmp_path: Path) -> None:
    inputs = copy_example(example, tmp_path / "inputs")
    write_providers(inputs.providers, example_providers(sys.executable, provider_args=("--fail-first-attempt",)))
    ledger = tmp_path / "ledger.json"
    result = cli(*run_args(inputs, ledger, "--json"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["byStatus"] == {"completed": 12}  # attempt 2 of each succeeded


@pytest.mark.parametrize(("change", "expected"), [
    ("tamper-plan", "content hash does not match"),
    ("missing-root", "the configured root is not an existing directory"),
    ("command-not-on-path", "not found on PATH"),
    ("input-too-large", "above the provider's maxInputBytes 100"),
    ("ledger-in-root", "output must lie outside"),
    ("bad-round", "is not a reference"),
])
def test_inputs_are_checked_before_any_provider_starts(example: ControlledExample, tmp_path: Path, change: str,
                                                       expected: str) -> None:
    inputs = copy_example(example, tmp_path / "inputs")
    ledger, extra = tmp_path / "ledger.json", []
    providers = example_providers(sys.executable)
    if change == "tamper-plan":
        inputs.plan.write_text(inputs.plan.read_text().replace('"maxAttempts": 2', '"maxAttempts": 1'))
    elif change == "missing-root":
        repositories = json.loads(inputs.repositories.read_text())
        repositories["repositories"][0]["root"] = str(tmp_path / "nowhere")
        inputs.repositories.write_text(json.dumps(with_content_hash(
            {k: v for k, v in repositories.items() if k != "contentHash"})))
    elif change == "command-not-on-path":
        write_providers(inputs.providers, {**providers, "providers": [
            {**entry, "command": "agentstudy-no-such-provider"} for entry in providers["providers"]]})
    elif change == "input-too-large":
        write_providers(inputs.providers, {**providers, "providers": [
            {**entry, "maxInputBytes": 100} for entry in providers["providers"]]})
    elif change == "ledger-in-root":
        ledger = example.roots["quill-notes"] / "ledger.json"
    else:
        extra = ["--round", "Round One"]
    result = cli(*run_args(inputs, ledger, *extra))
    assert expected in one_error_line(result)
    assert not ledger.exists()


def test_no_secret_prompt_or_repository_content_reaches_the_ledger(example: ControlledExample, tmp_path: Path) -> None:
    leaky = tmp_path / "leaky_provider.py"
    leaky.write_text(f"""#!{sys.executable}
import json, os, sys
request = sys.stdin.read()
readme = open('README.md' if os.path.exists('README.md') else 'AGENTS.md').read()
secret = os.environ.get('PLANTED_SECRET', '')
allowed = os.environ.get('PLANTED_ALLOWED', '')
sys.stderr.write(request + readme + secret + allowed)
task = json.loads(request)['task']['taskId']
answer = {{'taskOutcome': 'success', 'evidenceIds': ['cited-' + task], 'inputTokens': 10, 'outputTokens': 5,
          'tokenMethod': 'provider', 'rawRequest': request, 'readme': readme, 'secret': secret, 'env': allowed,
          'measurements': {{'acceptanceChecksPassed': 2, 'acceptanceChecksTotal': 2, 'acceptanceChecksExecuted': 2}}}}
if task.startswith('quill'):
    answer['evidenceIds'].append('token-' + allowed)  # smuggling an allowlisted value makes the answer invalid
print(json.dumps(answer))
""")
    leaky.chmod(0o755)
    inputs = copy_example(example, tmp_path / "inputs")
    providers = example_providers(sys.executable)
    write_providers(inputs.providers, {**providers, "providers": [
        {**entry, "command": str(leaky), "args": [], "envAllowlist": ["PLANTED_ALLOWED"]}
        for entry in providers["providers"]]})
    ledger = tmp_path / "ledger.json"
    env = {"PLANTED_SECRET": PLANTED_SECRET, "PLANTED_ALLOWED": PLANTED_ALLOWED}
    result = cli(*run_args(inputs, ledger, "--json"), env=env)
    assert result.exit_code == 0, result.output
    text = ledger.read_text(encoding="utf-8")
    suite = json.loads(inputs.suite.read_text())
    readme_lines = [line for root in example.roots.values()
                    for line in ((root / "README.md") if (root / "README.md").exists() else (root / "AGENTS.md"))
                    .read_text().splitlines() if len(line) > 30]
    planted = [PLANTED_SECRET, PLANTED_ALLOWED, "rawRequest", "doc-bridge.study-provider.v1",
               *(task["objective"] for task in suite["tasks"]), *readme_lines, str(example.roots["quill-notes"])]
    assert readme_lines and all(item not in text for item in planted)
    assert PLANTED_SECRET not in result.output and PLANTED_ALLOWED not in result.output
    statuses = {item.task.task_id: item.execution.status for item in read_ledger(ledger).observations}
    assert {task: status for task, status in statuses.items() if task.startswith("quill")} == {
        task: "invalid-output" for task in statuses if task.startswith("quill")}
    assert os.environ.get("PLANTED_SECRET") is None


def test_the_ledger_is_persisted_after_every_observation(example: ControlledExample, tmp_path: Path) -> None:
    ledger, log = tmp_path / "ledger.json", tmp_path / "seen.log"
    watcher = tmp_path / "watching_provider.py"
    watcher.write_text(f"""#!{sys.executable}
import json, os, subprocess, sys
path = {str(ledger)!r}
count = len(json.load(open(path))["observations"]) if os.path.exists(path) else 0
open({str(log)!r}, "a").write(f"{{count}}\\n")
sys.stdout.write(subprocess.run([{sys.executable!r}, "-I", "-m", "agentstudy.rehearsal.controlled_provider"],
                                stdin=sys.stdin, capture_output=True, text=True).stdout)
""")
    watcher.chmod(0o755)
    inputs = copy_example(example, tmp_path / "inputs")
    providers = example_providers(sys.executable)
    write_providers(inputs.providers, {**providers, "providers": [
        {**entry, "command": str(watcher), "args": []} for entry in providers["providers"]]})
    result = cli(*run_args(inputs, ledger))
    assert result.exit_code == 0, result.output
    assert [int(line) for line in log.read_text().split()] == list(range(12))  # each child sees every earlier one


def test_an_unverified_ledger_is_refused(example: ControlledExample, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    assert cli(*run_args(example, ledger)).exit_code == 0
    ledger.write_text(ledger.read_text().replace('"contextBytes": ', '"contextBytes": 1', 1))
    before = ledger.read_bytes()
    assert "content hash" in one_error_line(cli(*run_args(example, ledger)))
    assert ledger.read_bytes() == before


def test_progress_lines_name_executions_and_statuses_only(example: ControlledExample, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    summary = run_command(example.plan, example.suite, example.providers, example.repositories,
                          tmp_path / "ledger.json", None, False, show_progress=True)
    assert summary["executed"] == 12
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("[1/12] ") and " · replicate 0" in lines[0]
    assert sum(line.strip().startswith("completed, rubric ") for line in lines) == 12
    assert not any("{" in line for line in lines)
