"""Codex attempts name their infrastructure failures (issue 33 items 5 and 6): the real pinned ``codex`` against the
scripted Responses server with fault schedules (429, 529, 500, 503, a reset connection, an overloaded error inside
an HTTP 200 stream), its ``exec --json`` events mapped to ``failureKind`` and its retries counted with the refusal
they name; the demo's ledger records it; and an attempt whose answer never comes is ``timed-out`` (``timeout``)."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.agents.registry import agent_cli
from agentstudy.cli import main
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.protocol.manifest import REPOSITORY_ONLY
from agentstudy.rehearsal.codex_run import run_codex_rehearsal
from agentstudy.rehearsal.example_study import build_corpus_repository
from agentstudy.rehearsal.responses_server import ResponsesRehearsalServer
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.stream.codex import codex_retries, parse_codex_stream
from agentstudy.stream.codex_failures import codex_error_status, codex_failure_status, codex_retry_wait_ms
from agentstudy.transports.cli import CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools
from agentstudy.transports.cli_evaluation import cli_failure_kind

from codex_attempts import HOMES, MODEL, SENTINELS, codex_binary
from codex_attempts import PROMPT as CORPUS_PROMPT

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = ROOT / ".codex-scratch" / "failure-kinds"  # not under /tmp: see rehearsal.codex_run
PROMPT = "What does the frobnicate flag enable? Cite the file and line."
FILES = {"README.md": "# Widgets\n\nThe frobnicate flag enables the widget cache.\n"}


@pytest.mark.parametrize(("message", "status", "kind"), [
    ("exceeded retry limit, last status: 429 Too Many Requests", 429, "rate-limited"),
    ("unexpected status 529 <unknown status code>: Scripted rehearsal fault (HTTP 529), url: http://127.0.0.1:1/v1",
     529, "overloaded"),
    ("Selected model is at capacity. Please try a different model.", 529, "overloaded"),
    ("We\u2019re currently experiencing high demand, which may cause temporary errors.", 500, "server-error"),
    ("unexpected status 503 Service Unavailable: Scripted rehearsal fault (HTTP 503)", 503, "server-error"),
    ("stream disconnected before completion: error sending request", "network", "network"),
    ("stream disconnected before completion: idle timeout waiting for SSE", "timeout", "timeout"),
    ("You've hit your usage limit. Upgrade to Pro or try again later.", 429, "rate-limited"),
    ("unexpected status 400 Bad Request: the model does not exist", 400, "agent"),
    ("the MCP server doc-bridge failed to start", None, "agent"),
])
def test_codex_messages_name_the_refusal_and_the_failure_kind(message: str, status: int | str | None,
                                                              kind: str) -> None:
    assert codex_error_status(message) == status
    terminal = {"type": "turn.failed", "error": {"message": message}}
    assert cli_failure_kind("failed", codex_failure_status(terminal)) == kind
    assert codex_failure_status({"type": "turn.completed", "usage": {}}) is None
    assert codex_retries([f"Reconnecting... 1/2 ({message})"]) == ["unknown" if status is None else status]


def test_the_retry_wait_is_read_from_stderr_only_when_every_retry_is_there() -> None:
    tail = ("WARN codex_core::responses_retry: stream disconnected - retrying sampling request (1/2 in 997.689172ms)..."
            "\nWARN codex_core::responses_retry: stream disconnected - retrying sampling request (2/2 in 1.5s)...\n")
    assert codex_retry_wait_ms(tail, 2) == 2498
    assert codex_retry_wait_ms(tail, 3) is None  # the tail was cut: no guess
    assert codex_retry_wait_ms("", 0) is None


def _failed(spec: str) -> tuple[Any, list[int | str], str]:
    run = run_codex_rehearsal(codex_binary(), scratch=SCRATCH, files=FILES, prompt=PROMPT,
                              parent_env=dict(os.environ), faults=parse_fault_schedule(spec), max_retries=1,
                              timeout_s=120)
    assert run.exit_code != 0, run.stdout[-2000:]
    stream = parse_codex_stream(run.stdout.splitlines())
    assert stream.grammar_problems == []
    kind = cli_failure_kind("failed", codex_failure_status(stream.terminal))
    assert kind is not None
    return run, codex_retries(stream.notices), kind


@pytest.mark.parametrize(("spec", "kind", "retried"), [
    ("*:429/ra=0", "rate-limited", 429),
    ("*:529", "overloaded", 529),
    ("*:500", "server-error", 500),
    ("*:503", "server-error", 503),
    ("*:reset", "network", "network"),
    ("*:sse-error", "overloaded", None),
])
def test_real_codex_names_each_infrastructure_failure(spec: str, kind: str, retried: int | str | None) -> None:
    run, retries, named = _failed(spec)
    assert named == kind
    refused = [r for r in run.requests if r.fault is not None]
    assert refused and len(refused) == len(run.requests)
    if retried is None:  # an error inside an HTTP 200 stream: Codex 0.171.0 does not retry it
        assert retries == []
    else:
        assert retries == [retried]  # one stream retry at max_retries 1 ("Reconnecting... 1/1 (…)")
        assert len(refused) >= 1 + len(retries)  # request-level retries are not in the stream: a lower bound


def test_the_codex_demo_records_an_overloaded_failure_and_its_retries(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    env = {**os.environ, **SENTINELS}
    result = CliRunner().invoke(main, ["demo", "--agent", "codex", "--output-dir", str(directory),
                                       "--rehearsal-faults", "*:529"], env=env)
    assert result.exit_code == 1, result.output
    ledger_bytes = (directory / "ledger.json").read_bytes()
    ledger = json.loads(ledger_bytes)
    assert ledger["status"] == "blocked"
    [observation] = ledger["observations"]
    assert observation["status"] == "failed" and observation["failureKind"] == "overloaded"
    assert observation["apiRetries"] >= 1 and set(observation["apiRetryStatuses"]) == {529}
    assert observation["apiRetryWaitMs"] > 0  # Codex's own back-off, read from its stderr
    assert verify_ledger_bytes(ledger_bytes).problems == ()
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["apiRetries"] == observation["apiRetries"]


def test_a_codex_attempt_whose_answer_never_comes_is_timed_out_with_failure_kind_timeout(
        tmp_path: Path) -> None:
    """The scripted server holds every first byte for 60 s; the attempt's 5 s limit stops the real Codex child."""
    root = tmp_path / "harbor-playbook"
    pin = build_corpus_repository("harbor-playbook", root)
    HOMES.mkdir(parents=True, exist_ok=True)
    with ResponsesRehearsalServer(faults=parse_fault_schedule("*:slow=60000")) as server:
        settings = CliSettings(binary=codex_binary(), model=MODEL, mcp=DEFAULT_MCP_SERVER,
                               rehearsal_base_url=server.provider_base_url, containment="bwrap", agent="codex",
                               agent_home_root=HOMES, timeout_s=5.0)
        result = run_cli_attempt(settings, agent=agent_cli(settings.agent),
                                 scenario=REPOSITORY_ONLY, tools=arm_tools(REPOSITORY_ONLY,
                                 DEFAULT_MCP_SERVER, ()), root=root, pin=pin, prompt=CORPUS_PROMPT,
                                 reservation_usd=Decimal("0.10"), parent_env={**os.environ, **SENTINELS})
    assert result.status == "timed-out"
    assert cli_failure_kind(result.status, result.fields.get("api_error_status")) == "timeout"
