"""``run_controlled_command`` with real children: every outcome, bounds, retries, environment, recording."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from agentstudy.controlled.command import run_controlled_command, session_base
from agentstudy.controlled.record import Fallbacks
from agentstudy.protocol.controlled.config import ProviderPricing
from agentstudy.protocol.controlled.hashing import sha256_normalized_v1
from agentstudy.protocol.controlled.ledger import LedgerConflictError, empty_ledger, upsert_observation
from test_controlled_run_support import ANSWER, EXECUTION, PY, is_alive, plan_with, py_code_printing, request

ENV = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/nonexistent-home", "LC_ALL": "C.UTF-8"}


def test_completed_answer_is_recorded_without_raw_output(tmp_path: Path) -> None:
    run = run_controlled_command(request(py_code_printing({**ANSWER, "privateNotes": "raw words"}), tmp_path),
                                 environ=ENV)
    observation, document = run.observation.model, run.observation.document
    execution = observation.execution
    assert (execution.status, execution.exit_code, execution.signal, execution.error_code) == ("completed", 0, None,
                                                                                               None)
    assert (execution.input_tokens, execution.output_tokens, execution.token_method, execution.tool_calls) == (
        3, 5, "provider", 2)
    assert (observation.task_outcome, observation.evidence_quality, observation.evidence_ids) == (
        "success", "high", ["entry-1"])
    assert document["measurements"] == {"searchHitRate": 1, "providerTokenCostUnits": 8}
    stdout = (json.dumps({**ANSWER, "privateNotes": "raw words"}) + "\n").encode()
    assert execution.response_bytes == len(stdout)
    assert execution.stdout_hash is not None and len(execution.stdout_hash) == 64
    assert "raw words" not in json.dumps(document) and "privateNotes" not in json.dumps(document)
    assert document["adjudication"] == {"status": "pending"}
    assert (document["contextBytes"], document["contextTokens"], document["contextTokenMethod"]) == (2, 1, "estimate")
    assert run.observation.verified and [item.status for item in run.attempts] == ["completed"]


def test_timeout_kills_the_child_and_records_timed_out(tmp_path: Path) -> None:
    run = run_controlled_command(request("import time; time.sleep(30)", tmp_path, max_runtime_ms=200), environ=ENV)
    execution = run.observation.model.execution
    assert (execution.status, execution.error_code, execution.exit_code, execution.signal) == (
        "timed-out", "timeout", None, "SIGTERM")
    assert execution.duration_ms >= 200


def test_grandchild_is_killed_on_timeout_within_two_seconds(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    code = ("import subprocess, sys, time; "
            f"child = subprocess.Popen([{PY!r}, '-c', 'import time; time.sleep(60)']); "
            f"open({str(pid_file)!r}, 'w').write(str(child.pid)); time.sleep(60)")
    run = run_controlled_command(request(code, tmp_path, max_runtime_ms=3000), environ=ENV)
    assert run.observation.model.execution.status == "timed-out"
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 2.0  # a bound on the wait, not a speed claim
    while is_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not is_alive(grandchild)


def test_missing_program_is_unavailable(tmp_path: Path) -> None:
    missing = request("", tmp_path)
    run = run_controlled_command(type(missing)(**{**missing.__dict__, "command": str(tmp_path / "no-such-provider")}),
                                 environ=ENV)
    execution = run.observation.model.execution
    assert (execution.status, execution.error_code, execution.exit_code, execution.signal) == (
        "unavailable", "unavailable", None, None)
    assert execution.response_bytes == 0 and "inputTokens" not in run.observation.document["execution"]


def test_non_zero_exit_is_failed_and_its_answer_still_counts(tmp_path: Path) -> None:
    code = py_code_printing(ANSWER) + "; sys.exit(3)"
    run = run_controlled_command(request(code, tmp_path), environ=ENV)
    execution = run.observation.model.execution
    assert (execution.status, execution.error_code, execution.exit_code) == ("failed", "non-zero-exit", 3)
    assert execution.input_tokens == 3  # bounded, labelled figures are kept (digest section 7 item 36)


def test_non_json_stdout_is_invalid_json(tmp_path: Path) -> None:
    run = run_controlled_command(request("print('the answer is 42')", tmp_path), environ=ENV)
    assert (run.observation.model.execution.status, run.observation.model.execution.error_code) == (
        "invalid-output", "invalid-json")


@pytest.mark.parametrize("answer", [
    {**ANSWER, "inputTokens": "unknown"},
    {**ANSWER, "tokenMethod": "guess"},
    {"inputTokens": 3, "outputTokens": 5},  # tokens without a label
    [ANSWER],
    {**ANSWER, "evidenceIds": ["see api_key=abc"]},
])
def test_a_json_answer_that_breaks_the_contract_is_invalid_metrics(tmp_path: Path, answer: object) -> None:
    code = f"import sys, json; sys.stdin.read(); print(json.dumps({answer!r}))"
    run = run_controlled_command(request(code, tmp_path), environ=ENV)
    document = run.observation.document
    assert (document["execution"]["status"], document["execution"]["errorCode"]) == ("invalid-output",
                                                                                     "invalid-metrics")
    assert document["evidenceIds"] == [] and "inputTokens" not in document["execution"]


def test_stdout_over_the_bound_is_budget_exceeded_output_limit(tmp_path: Path) -> None:
    code = "import sys, time; sys.stdout.write('0123456789'); sys.stdout.flush(); time.sleep(30)"
    run = run_controlled_command(request(code, tmp_path, max_output_bytes=2), environ=ENV)
    execution = run.observation.model.execution
    assert (execution.status, execution.error_code, execution.response_bytes) == ("budget-exceeded", "output-limit",
                                                                                  2)
    assert execution.stdout_hash == hashlib.sha256(b"01").hexdigest()  # the hash of the bytes kept


def test_tokens_above_the_plan_budget_are_budget_exceeded_token_budget(tmp_path: Path) -> None:
    answer = {**ANSWER, "inputTokens": 9, "outputTokens": 2}
    run = run_controlled_command(request(py_code_printing(answer), tmp_path, plan=plan_with(max_tokens=10)),
                                 environ=ENV)
    execution = run.observation.model.execution
    assert (execution.status, execution.error_code) == ("budget-exceeded", "token-budget")
    assert (execution.input_tokens, execution.output_tokens) == (9, 2)


def test_a_retry_succeeds_on_the_second_attempt_with_its_own_session(tmp_path: Path) -> None:
    log = tmp_path / "sessions.log"
    code = ("import os, sys, json; s = os.environ['DOC_BRIDGE_STUDY_SESSION_ID']; "
            f"open({str(log)!r}, 'a').write(s + '\\n'); sys.stdin.read(); "
            f"sys.exit(1) if s.endswith('-1') else print(json.dumps({ANSWER!r}))")
    plan = plan_with(max_attempts=2)
    run = run_controlled_command(request(code, tmp_path, plan=plan), environ=ENV)
    base = sha256_normalized_v1({"runId": plan.model.run_id, "execution": EXECUTION})[:32]
    assert session_base(plan.model.run_id, EXECUTION) == base
    assert log.read_text().split() == [f"{base}-1", f"{base}-2"]
    assert [(item.number, item.status, item.error_code) for item in run.attempts] == [
        (1, "failed", "non-zero-exit"), (2, "completed", None)]
    assert run.observation.model.execution.status == "completed"  # only the last attempt is recorded


def test_attempts_stop_at_the_plan_limit_and_never_retry_token_budget(tmp_path: Path) -> None:
    runs = run_controlled_command(request("import sys; sys.exit(1)", tmp_path, plan=plan_with(max_attempts=3)),
                                  environ=ENV)
    assert [item.number for item in runs.attempts] == [1, 2, 3]
    answer = {**ANSWER, "inputTokens": 9, "outputTokens": 2}
    once = run_controlled_command(request(py_code_printing(answer), tmp_path,
                                          plan=plan_with(max_attempts=3, max_tokens=10)), environ=ENV)
    assert [item.error_code for item in once.attempts] == ["token-budget"]


def test_environment_is_the_allowlist_and_the_request_arrives_on_a_closed_stdin(tmp_path: Path) -> None:
    code = ("import os, sys, json; data = sys.stdin.read(); "
            "print(json.dumps({'measurements': {'requestBytes': len(data)}, 'evidenceIds': sorted(os.environ)}))")
    environ = {**ENV, "TMPDIR": str(tmp_path), "STUDY_ALLOWED": "1", "STUDY_SECRET_OUTSIDE": "never"}
    run = run_controlled_command(request(code, tmp_path, input=b"x" * 300_000, env_allowlist=("STUDY_ALLOWED",)),
                                 environ=environ)
    document = run.observation.document
    names = set(document["evidenceIds"]) - {"LC_CTYPE"}  # CPython may add LC_CTYPE to its own environ
    assert names == {"PATH", "HOME", "TMPDIR", "STUDY_ALLOWED", "DOC_BRIDGE_STUDY_SESSION_ID"}
    assert document["measurements"] == {"requestBytes": 300_000}
    assert document["contextBytes"] == 300_000 and document["contextTokens"] == 75_000


def test_the_working_directory_is_the_given_root(tmp_path: Path) -> None:
    code = "import os, sys, json; sys.stdin.read(); print(json.dumps({'evidenceIds': os.listdir('.')}))"
    (tmp_path / "marker-file.md").write_text("x")
    run = run_controlled_command(request(code, tmp_path), environ=ENV)
    assert run.observation.model.evidence_ids == ["marker-file.md"]


def test_agent_cost_from_pricing_and_missing_data_stays_missing(tmp_path: Path) -> None:
    pricing = ProviderPricing.model_validate({"currency": "USD", "inputPerMillionUsd": 2,
                                              "cachedInputPerMillionUsd": 1, "outputPerMillionUsd": 4})
    answer = {**ANSWER, "inputTokens": 1500, "outputTokens": 1000, "measurements": {"cachedInputTokens": 500}}
    priced = run_controlled_command(request(py_code_printing(answer), tmp_path, pricing=pricing), environ=ENV)
    assert priced.observation.document["measurements"] == {"cachedInputTokens": 500, "providerTokenCostUnits": 2500,
                                                           "agentCostUsd": 0.0065}
    estimated = {**ANSWER, "tokenMethod": "estimate", "measurements": {}}
    unpriced = run_controlled_command(request(py_code_printing(estimated), tmp_path), environ=ENV)
    assert "measurements" not in unpriced.observation.document  # no pricing, no provider usage: nothing invented
    no_tokens = {key: value for key, value in ANSWER.items() if key not in ("inputTokens", "outputTokens")}
    partial = run_controlled_command(request(py_code_printing(no_tokens), tmp_path, pricing=pricing), environ=ENV)
    assert "agentCostUsd" not in partial.observation.document["measurements"]


def test_fallbacks_fill_only_what_the_provider_did_not_report(tmp_path: Path) -> None:
    fallbacks = Fallbacks(task_outcome="blocked", rework_count=4, measurements={"errorRate": 0.5})
    answer = {"taskOutcome": "partial"}
    run = run_controlled_command(request(py_code_printing(answer), tmp_path, fallbacks=fallbacks, round_id="r-1"),
                                 environ=ENV)
    document = run.observation.document
    assert (document["taskOutcome"], document["reworkCount"], document["round"]) == ("partial", 4, "r-1")
    assert document["measurements"] == {"errorRate": 0.5}


def test_context_tokens_need_their_method_and_nothing_starts_otherwise(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    code = f"open({str(marker)!r}, 'w').write('x')"
    with pytest.raises(ValueError, match="given together"):
        run_controlled_command(request(code, tmp_path, context_tokens=10), environ=ENV)
    assert not marker.exists()
    given = run_controlled_command(request(py_code_printing(ANSWER), tmp_path, context_tokens=10,
                                           context_token_method="provider"), environ=ENV)
    assert (given.observation.model.context_tokens, given.observation.model.context_token_method) == (10, "provider")


def test_a_conflicting_replacement_of_an_observation_is_refused(tmp_path: Path) -> None:
    first = run_controlled_command(request(py_code_printing(ANSWER), tmp_path), environ=ENV).observation
    ledger = upsert_observation(empty_ledger(), first)
    assert upsert_observation(ledger, first) is ledger  # the same observation again is a no-op
    second = run_controlled_command(request(py_code_printing({**ANSWER, "toolCalls": 7}), tmp_path),
                                    environ=ENV).observation
    with pytest.raises(LedgerConflictError, match="already exists with different contents"):
        upsert_observation(ledger, second)


def test_the_attempt_machine_settles_once_and_only_from_running() -> None:
    from statemachine.exceptions import TransitionNotAllowed

    from agentstudy.fsm.controlled import ControlledAttemptMachine, may_retry

    machine = ControlledAttemptMachine()
    with pytest.raises(TransitionNotAllowed):
        machine.settle(status="completed")
    machine.start()
    with pytest.raises(TransitionNotAllowed):
        machine.settle(status="approved")
    machine.settle(status="invalid-output", error_code="invalid-metrics")
    assert (machine.status, machine.error_code, machine.settled) == ("invalid-output", "invalid-metrics", True)
    with pytest.raises(TransitionNotAllowed):
        machine.settle(status="completed")
    assert may_retry(None, 0, 1) and not may_retry(machine, 1, 3)  # an invalid answer is not retried
