"""The http transport retries a refused request like the SDK, with one back-off per run (issue 33 items 2, 4, 6).

Real HTTP on 127.0.0.1: the scripted Messages server with a fault schedule, the real client, and
``agentstudy minimal --transport http --rehearsal --concurrency 4 --rehearsal-faults …`` end to end.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.io.ledger_journal import read_ledger
from agentstudy.io.messages_api import MessagesApiError, MessagesClient, retry_after
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.report.build import build_report
from agentstudy.transports.api_retry import (
    GATE_RAMP_S,
    GATE_SPACING_S,
    BackoffGate,
    RetryPolicy,
    RetryTally,
    failure_kind,
    retry_delay_s,
    send_with_retries,
)

BODY = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 64,
                   "messages": [{"role": "user", "content": "Where is the retention window set?"}]}).encode()


def _no_jitter() -> float:
    return 0.0


def test_the_delay_honours_retry_after_else_backs_off_exponentially_with_jitter() -> None:
    policy = RetryPolicy()
    assert retry_delay_s(policy, 0, 1.0, 0.9) == 1.0
    assert retry_delay_s(policy, 0, 0.0, 0.9) == 0.0
    assert retry_delay_s(policy, 0, 61.0, 0.0) == 0.5  # past 60 s the SDK ignores it
    assert [retry_delay_s(policy, n, None, 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert retry_delay_s(policy, 1, None, 0.999) == pytest.approx(0.75, abs=0.001)


def test_retry_after_headers_are_read_in_milliseconds_or_seconds() -> None:
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after({"retry-after": "-1"}) is None
    assert retry_after({}) is None


def test_a_429_then_a_529_are_retried_and_counted_against_the_server_log() -> None:
    tally = RetryTally()
    gate = BackoffGate(draw=_no_jitter)
    with RehearsalServer(faults=parse_fault_schedule("1:429,2:529")) as server, \
            MessagesClient("dummy", server.base_url) as client:
        answer = send_with_retries(client, BODY, 30, tally, gate=gate, draw=_no_jitter)
        log = server.requests
    assert answer["type"] == "message"
    assert [(r.status, r.fault) for r in log] == [(429, "429"), (529, "529"), (200, None)]
    assert tally.retries == 2 and tally.statuses == [429, 529]
    assert tally.wait_ms >= 1000 + 1000  # retry-after 1 s, then min(0.5 x 2, 8) s without jitter
    assert [p["cause"] for p in gate.pauses] == ["429", "529"]
    assert all(p["start"] < p["end"] for p in gate.pauses)


def test_retries_are_bounded_and_the_failure_is_named() -> None:
    tally = RetryTally()
    with RehearsalServer(faults=parse_fault_schedule("*:529")) as server, \
            MessagesClient("dummy", server.base_url) as client:
        with pytest.raises(MessagesApiError) as failed:
            send_with_retries(client, BODY, 30, tally, policy=RetryPolicy(max_retries=2, initial_delay_s=0.05),
                              draw=_no_jitter)
        log = server.requests
    assert len(log) == 3 and tally.retries == 2 and tally.statuses == [529, 529, 529]
    assert failure_kind(failed.value) == "overloaded"


@pytest.mark.parametrize(("spec", "requests", "kind"), [("1:400", 1, "agent"), ("1:401", 1, "agent")])
def test_a_client_error_is_never_retried(spec: str, requests: int, kind: str) -> None:
    tally = RetryTally()
    with RehearsalServer(faults=parse_fault_schedule(spec)) as server, \
            MessagesClient("dummy", server.base_url) as client:
        with pytest.raises(MessagesApiError) as failed:
            send_with_retries(client, BODY, 30, tally, draw=_no_jitter)
        log = server.requests
    assert len(log) == requests and tally.retries == 0
    assert failure_kind(failed.value) == kind


def test_a_reset_connection_is_retried_as_a_network_refusal() -> None:
    tally = RetryTally()
    with RehearsalServer(faults=parse_fault_schedule("1:reset,2:500")) as server, \
            MessagesClient("dummy", server.base_url) as client:
        answer = send_with_retries(client, BODY, 30, tally, policy=RetryPolicy(initial_delay_s=0.05),
                                   draw=_no_jitter)
    assert answer["type"] == "message"
    assert tally.statuses == ["network", 500] and tally.retries == 2
    assert failure_kind(MessagesApiError("connect")) == "network"
    assert failure_kind(MessagesApiError("status", 429)) == "rate-limited"
    assert failure_kind(MessagesApiError("status", 503)) == "server-error"
    assert failure_kind(MessagesApiError("timeout")) == "timeout"


def test_a_retry_that_would_outlive_the_request_window_is_not_sent() -> None:
    tally = RetryTally()
    with RehearsalServer(faults=parse_fault_schedule("1:429/ra=5")) as server, \
            MessagesClient("dummy", server.base_url) as client:
        with pytest.raises(MessagesApiError):
            send_with_retries(client, BODY, 3, tally, draw=_no_jitter)
        log = server.requests
    assert len(log) == 1 and tally.retries == 0 and tally.statuses == [429]


def test_pauses_overlapping_in_time_are_one_pause() -> None:
    gate = BackoffGate(draw=_no_jitter)
    gate.pause(0.2, "429")
    gate.pause(0.3, "529")
    assert gate.paused()
    assert gate.wait() > 0
    assert not gate.paused()
    gate.pause(0.05, "529")
    pauses = gate.pauses
    assert [p["cause"] for p in pauses] == ["429", "529"]


def test_after_a_pause_requests_leave_the_gate_spaced_so_no_100_ms_holds_more_than_4() -> None:
    """Answers that come back quickly after a pause must not let a fifth request into the first 100 ms: for a
    second after the pause every departure is at least GATE_SPACING_S after the one before."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    gate = BackoffGate(clock=lambda: now[0], wall=lambda: 1e9 + now[0], sleep=sleep, draw=_no_jitter)
    gate.pause(1.0, "429")
    departures = []
    for _ in range(8):  # waiters released by the pause's end, then requests sent right after quick answers
        gate.wait()
        departures.append(now[0])
    assert departures[0] >= 1.0
    assert all(b - a >= GATE_SPACING_S - 1e-9 for a, b in itertools.pairwise(departures))
    assert max(sum(1 for d in departures if t <= d <= t + 0.1) for t in departures) <= 4
    now[0] = 1.0 + GATE_RAMP_S + 1.0
    assert gate.wait() == 0.0  # long after the pause: no spacing, no wait


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("retry") / "study")


def _ledger(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read_ledger(path, path.read_bytes()).data)
    return data


def _run(study: ExampleStudy, output: Path, *extra: str) -> Any:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    args = ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "http", *roots,
            "--output", str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1", "--rehearsal", *extra]
    return CliRunner().invoke(main, args, env={"ANTHROPIC_API_KEY": None}, catch_exceptions=False)


def test_the_fault_flag_needs_rehearsal_and_a_valid_schedule(study: ExampleStudy, tmp_path: Path) -> None:
    bad = _run(study, tmp_path / "a.json", "--rehearsal-faults", "1:bogus")
    assert bad.exit_code == 2 and "unknown fault" in bad.output
    assert not (tmp_path / "a.json").exists()


def test_a_concurrent_rehearsal_rides_out_429s_and_529s(study: ExampleStudy, tmp_path: Path) -> None:
    """Concurrency 4 over 8 attempts, six scripted refusals: every attempt completes, the retries the ledger
    counts are the refusals the server logged, spent <= cap, and no burst above 4 follows a pause."""
    output = tmp_path / "ledger.json"
    schedule = "2-5:429,7:529,9:reset"
    captured: list[RehearsalServer] = []
    original = RehearsalServer.__enter__

    def keep(self: RehearsalServer) -> RehearsalServer:
        captured.append(self)
        return original(self)

    mp = pytest.MonkeyPatch()
    mp.setattr(RehearsalServer, "__enter__", keep)
    try:
        result = _run(study, output, "--rehearsal-faults", schedule, "--concurrency", "4", "--pilot-tasks", "2",
                      "--pilot-repetitions", "2", "--attempt-budget-usd", "0.05", "--api-max-retries", "6")
    finally:
        mp.undo()
    assert result.exit_code == 0, result.output
    ledger = _ledger(output)
    observations = ledger["observations"]
    assert len(observations) == 8 and {o["status"] for o in observations} == {"completed"}
    log = captured[0].requests
    refused = [r for r in log if r.fault is not None]
    assert len(refused) == 6
    assert sum(o["apiRetries"] for o in observations) == len(refused)
    statuses = sorted(str(s) for o in observations for s in o["apiRetryStatuses"])
    assert statuses == sorted(["429"] * 4 + ["529", "network"])
    assert ledger["budget"]["spent"] <= ledger["budget"]["cap"]
    pauses = ledger["backoffPauses"]
    assert pauses and {p["cause"] for p in pauses} <= {"429", "529"}
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["apiRetries"] == 6 and summary["backoffPauses"] == len(pauses)
    arrivals = sorted(r.arrived_at for r in log)
    for refusal in refused:
        after = [t for t in arrivals if refusal.arrived_at + 1.0 <= t <= refusal.arrived_at + 1.1]
        assert len(after) <= 4
    assert verify_ledger_bytes(output.read_bytes()).problems == ()
    tampered = json.loads(output.read_text(encoding="utf-8"))
    tampered["observations"][0]["failureKind"] = "cosmic-rays"
    assert verify_ledger_bytes(json.dumps(tampered)).problems  # an unknown kind (and a changed hash) is refused
    table = json.loads(build_report(output, output_format="json"))["tables"]["infrastructure"]
    assert sum(int(row[2]) for row in table["rows"]) == 6  # API retries, per arm
    assert all(row[4] == "none" for row in table["rows"])  # no infrastructure failure
