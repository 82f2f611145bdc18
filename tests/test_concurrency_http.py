"""``agentstudy minimal --transport http --concurrency N`` (issue 19, item 1), against the rehearsal server.

The LiteLLM #34732 race reproduced on http: a cap that fits exactly three attempt reservations,
eight attempts allowed in flight, each holding its reservation while its request waits at the
server until all three requests are in (then one more second). Exactly three are admitted at
once, never a fourth, the server holds all three requests at the same time, and the run ends
when the cap is spent with spent <= cap. Then
the http stop rule (a ``failed`` attempt stops admission), a SIGINT mid-run (running attempts
end and are charged at least their whole reservation; the ledger verifies), and N = 1 unchanged.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.pricing.http import UpperPrices
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.schedule import build_schedule
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.runners.http_request import REHEARSAL_KEY, HttpRunRequest
from agentstudy.runners.minimal_http import run_http_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from concurrent_ledgers import live_state, moment, peak_overlap, verified

MODEL = "claude-haiku-5-5"
PRICES = UpperPrices(Decimal("0.01"), Decimal("10"))
"""Upper prices (USD per million tokens) that make an answer of 1,024 output tokens cost 0.01024 USD exactly."""
ANSWER_USD = Decimal("0.01024")
LIMIT = Decimal("0.011")
"""Holds any first request here (its input ceiling costs well under 0.00076 USD at 0.01 per million)."""

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class _InFlight:
    """ASGI middleware counting the requests the rehearsal server holds at once (its latency sleep included).

    It holds each request until ``gate`` requests are in at once (or 60 s passed): a server that
    answered one agent loop at a time could never count ``gate``.
    """

    def __init__(self, app: Asgi, counter: list[int], gate: int) -> None:
        self.app, self.counter, self.gate, self.lock = app, counter, gate, threading.Lock()

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with self.lock:
            self.counter[0] += 1
            self.counter[1] = max(self.counter[1], self.counter[0])
        give_up = time.monotonic() + 60
        while self.counter[1] < self.gate and time.monotonic() < give_up:
            await asyncio.sleep(0.01)
        try:
            await self.app(scope, receive, send)
        finally:
            with self.lock:
                self.counter[0] -= 1


def _answer_with_whole_output(body: Mapping[str, Any]) -> ScriptedReply:
    """Answer at once, billing the whole ``max_tokens`` of output (so every attempt costs ``ANSWER_USD``)."""
    return ScriptedReply([{"type": "text", "text": "the answer"}], "end_turn",
                         {"input_tokens": 0, "output_tokens": 1024})


def _fail_the_mcp_arm(body: Mapping[str, Any]) -> ScriptedReply:
    """Answer at once, but without usage when the request offers a tool beyond the repository tools (``repo_*``):
    that doc-bridge-mcp attempt ends ``failed``."""
    mcp = any(isinstance(t, dict) and not str(t.get("name", "")).startswith("repo_") for t in body.get("tools", []))
    return ScriptedReply([{"type": "text", "text": "the answer"}], "end_turn",
                         {} if mcp else {"input_tokens": 10, "output_tokens": 2})


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    """The example study's corpora, built once for the module: the runs below only read them."""
    return build_example_study(tmp_path_factory.mktemp("concurrency-http") / "study")


def _request(study: ExampleStudy, output: Path, base_url: str, cap: Decimal, concurrency: int) -> HttpRunRequest:
    return HttpRunRequest(
        loaded=load_manifest(study.manifest_path), mode="full", roots=study.roots, output=output, model=MODEL,
        prices=PRICES, cap_usd=cap, api_key=REHEARSAL_KEY, base_url=base_url, mcp=DEFAULT_MCP_SERVER,
        rehearsal=True, concurrency=concurrency, attempt_budget_usd=LIMIT,
    )


def test_a_cap_that_fits_three_admits_exactly_three_at_concurrency_eight(study: ExampleStudy, tmp_path: Path) -> None:
    output = tmp_path / "ledger.json"
    held = [0, 0]  # requests at the server now, the most at once
    with RehearsalServer(policy=_answer_with_whole_output, latency_ms=1000) as server:
        server.app.add_middleware(_InFlight, counter=held, gate=3)
        summary = run_http_study(_request(study, output, server.base_url, LIMIT * 3, 8))
        requests = server.requests
    ledger = verified(output)
    assert summary.status == "blocked"
    assert ledger.concurrency == 8 and ledger.open_reservations == []
    assert ledger.http is not None and Decimal(str(ledger.http.attempt_budget_usd)) == LIMIT
    assert len(requests) == 3  # never a fourth attempt: each attempt sends one request
    assert held[1] == 3  # the server held all three requests at once (it serves concurrent agent loops)
    assert all(r.answered_after_ms >= 1000 for r in requests)  # --rehearsal-latency-ms applies to each
    assert [o.status for o in ledger.observations] == ["completed"] * 3
    assert peak_overlap(ledger) == 3  # all three held their reservation at the same time
    assert ledger.stop_reason == "the per-attempt limit does not fit under the remaining cap"
    spent = Decimal(str(ledger.budget.spent))
    assert spent == ANSWER_USD * 3 <= Decimal(str(ledger.budget.cap))
    assert not ledger.budget.cumulative_cap_exceeded
    assert all(Decimal(str(o.charged_usd)) == ANSWER_USD for o in ledger.observations)
    assert all(o.started_at is not None and o.ended_at is not None for o in ledger.observations)
    schedule = build_schedule(load_manifest(study.manifest_path).manifest, "full")
    assert [(o.task_id, o.scenario, o.repetition) for o in ledger.observations] == [
        (e.task_id, e.scenario, e.repetition) for e in schedule[:3]]  # admission follows the schedule


def test_a_failed_attempt_stops_admission_and_running_attempts_are_recorded(
    study: ExampleStudy, tmp_path: Path
) -> None:
    schedule = build_schedule(load_manifest(study.manifest_path).manifest, "full")
    first_mcp = next(i for i, e in enumerate(schedule, start=1) if e.scenario == "doc-bridge-mcp")
    output = tmp_path / "ledger.json"
    with RehearsalServer(policy=_fail_the_mcp_arm, latency_ms=1000) as server:
        summary = run_http_study(_request(study, output, server.base_url, Decimal("5"), 3))
        requests = server.requests
    ledger = verified(output)
    statuses = [o.status for o in ledger.observations]
    assert statuses[first_mcp - 1] == "failed"
    assert statuses[: first_mcp - 1] == ["completed"] * (first_mcp - 1)
    failed_at = moment(ledger.observations[first_mcp - 1].ended_at)
    assert all(moment(o.started_at) <= failed_at for o in ledger.observations)  # none admitted after it ended
    running_then = [o for o in ledger.observations if moment(o.started_at) <= failed_at <= moment(o.ended_at)]
    assert 1 <= len(running_then) <= 3  # it and the attempts in flight when it ended, which were recorded
    assert len(requests) == len(statuses)  # no attempt was started after admission stopped
    assert ledger.stop_reason == f"attempt {first_mcp} ended failed"
    assert summary.status == ledger.status == "blocked"
    assert ledger.observations[first_mcp - 1].usage_complete is False


def test_sigint_mid_run_ends_the_running_attempts_charged_their_whole_reservation(
    study: ExampleStudy, tmp_path: Path
) -> None:
    ledger_path = tmp_path / "out" / "ledger.json"
    ledger_path.parent.mkdir()
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    command = [sys.executable, "-m", "agentstudy", "minimal", "--manifest", str(study.manifest_path), "--run",
               "--transport", "http", "--rehearsal", *roots, "--output", str(ledger_path), "--model", MODEL,
               "--budget-usd", "5", "--attempt-budget-usd", "0.1", "--concurrency", "4",
               "--rehearsal-latency-ms", "1500"]
    runner = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    opened = 0
    while opened < 4 and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        document = live_state(ledger_path)
        if document is not None:
            opened = len(document.get("openReservations") or [])
    assert opened == 4, "the run never had four attempts in flight"
    runner.send_signal(signal.SIGINT)
    assert runner.wait(timeout=120) == 128 + signal.SIGINT
    ledger = verified(ledger_path)
    assert ledger.status == "blocked" and ledger.stop_reason is not None
    assert "stopped by SIGINT" in ledger.stop_reason
    assert ledger.open_reservations == []  # every running attempt was recorded
    stopped = [o for o in ledger.observations if o.status_reason and "stopped by SIGINT" in o.status_reason]
    assert stopped, "an attempt in flight ends with the signal as its reason"
    assert all(o.status != "completed" and Decimal(str(o.charged_usd)) >= Decimal("0.1") for o in stopped)
    assert Decimal(str(ledger.budget.spent)) <= Decimal(str(ledger.budget.cap))


def test_concurrency_one_writes_the_sequential_http_ledger(study: ExampleStudy, tmp_path: Path) -> None:
    ledger_path = tmp_path / "ledger.json"
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    result = CliRunner().invoke(main, ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--rehearsal",
                                       "--transport", "http", *roots, "--output", str(ledger_path), "--model", MODEL,
                                       "--budget-usd", "1", "--concurrency", "1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ledger = verified(ledger_path)
    document = json.loads(ledger_path.read_bytes())
    assert "concurrency" not in document and "openReservations" not in document
    assert "attemptBudgetUsd" not in document["http"]
    assert all("startedAt" not in o and "endedAt" not in o for o in document["observations"])
    assert ledger.observations and all(o.started_at is None for o in ledger.observations)


def test_a_concurrent_http_run_needs_a_limit_that_holds_the_first_request(
    study: ExampleStudy, tmp_path: Path
) -> None:
    output = tmp_path / "l.json"
    result = CliRunner().invoke(main, ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--rehearsal",
                                       "--transport", "http", "--model", MODEL, "--budget-usd", "1",
                                       "--concurrency", "2", "--attempt-budget-usd", "0.000001",
                                       "--output", str(output)])
    assert result.exit_code == 2
    assert "--attempt-budget-usd" in result.output
    assert "cannot hold the reservation of the first request" in result.output
    assert not output.exists()
