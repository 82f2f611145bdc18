"""`agentstudy demo --transport http` and `agentstudy minimal --transport http`: real HTTP on 127.0.0.1, exit codes."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.io.ledger_journal import read_ledger
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer

PLANTED_KEY = "sk-ant-planted-command-key-0123456789"
MCP_TOOLS = {"doc_search", "doc_get", "handoff_resolve"}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("command") / "study")


def _invoke(args: list[str], env: dict[str, str | None]) -> Result:
    base: dict[str, str | None] = {"ANTHROPIC_API_KEY": None, "STUDY_INPUT_USD_PER_MILLION": None,
                                   "STUDY_OUTPUT_USD_PER_MILLION": None}
    return CliRunner().invoke(main, args, env={**base, **env}, catch_exceptions=False)


def _run_args(study: ExampleStudy, output: Path, *extra: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "http", *roots,
            "--output", str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1", *extra]


def _ledger(path: Path) -> dict[str, Any]:
    """The ledger's state as every reader sees it: the snapshot plus the journal beside it, if any."""
    data: dict[str, Any] = json.loads(read_ledger(path, path.read_bytes()).data)
    return data


def test_demo_over_http_completes_both_pilot_attempts(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    completed = subprocess.run(
        [sys.executable, "-m", "agentstudy", "demo", "--transport", "http", "--output-dir", str(directory)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "ANTHROPIC_API_KEY": PLANTED_KEY, "AGENTSTUDY_CLAUDE_BIN": "/nonexistent/claude"},
    )
    assert completed.returncode == 0, completed.stderr
    summary = json.loads(completed.stdout.strip().splitlines()[-1])
    assert summary["transport"] == "http" and summary["status"] == "awaiting-adjudication"
    assert summary["byStatus"] == {"completed": 2}
    assert summary["byScenario"] == {"repository-only": 1, "doc-bridge-mcp": 1}
    assert summary["extrapolatedFullRunUsd"] is not None and "cacheReadInputTokens" not in summary
    ledger_path = directory / "ledger.json"
    assert stat.S_IMODE(ledger_path.stat().st_mode) == 0o600
    ledger = _ledger(ledger_path)
    assert ledger["rehearsal"] is True and ledger["transport"] == "http"
    by_scenario = {o["scenario"]: o for o in ledger["observations"]}
    assert all(o["toolCalls"] > 0 for o in by_scenario.values()), "tool calls in both scenarios"
    assert not MCP_TOOLS & set(by_scenario["repository-only"]["toolCallsByName"])
    assert sum(n for name, n in by_scenario["doc-bridge-mcp"]["toolCallsByName"].items() if name in MCP_TOOLS) >= 1
    for text in (completed.stdout, completed.stderr, ledger_path.read_text(encoding="utf-8")):
        assert PLANTED_KEY not in text
    for observation in ledger["observations"]:
        assert observation["answer"] and observation["answer"] not in completed.stdout + completed.stderr


@pytest.mark.parametrize(
    ("env", "extra", "reason"),
    [
        ({"STUDY_INPUT_USD_PER_MILLION": "0.5", "STUDY_OUTPUT_USD_PER_MILLION": "2.5"}, [],
         "ANTHROPIC_API_KEY is required"),
        ({"ANTHROPIC_API_KEY": f"{PLANTED_KEY}\nX-Injected: 1", "STUDY_INPUT_USD_PER_MILLION": "0.5",
          "STUDY_OUTPUT_USD_PER_MILLION": "2.5"}, [], "contains a CR, LF or NUL"),
        ({"ANTHROPIC_API_KEY": PLANTED_KEY}, [], "the input price"),
        ({"ANTHROPIC_API_KEY": PLANTED_KEY, "STUDY_INPUT_USD_PER_MILLION": "0.5"}, [], "the output price"),
        ({"ANTHROPIC_API_KEY": PLANTED_KEY}, ["--input-usd-per-million", "NaN", "--output-usd-per-million", "1"],
         "finite amount above zero"),
        ({}, ["--rehearsal", "--api-base-url", "http://127.0.0.1:9", "--input-usd-per-million", "1",
              "--output-usd-per-million", "1"], "exclude each other"),
        ({"ANTHROPIC_API_KEY": PLANTED_KEY}, ["--api-base-url", "http://user:pw@127.0.0.1:9",
                                              "--input-usd-per-million", "1", "--output-usd-per-million", "1"],
         "must not carry credentials"),
    ],
)
def test_http_input_is_refused_in_one_line_before_anything(
    study: ExampleStudy, tmp_path: Path, env: dict[str, str | None], extra: list[str], reason: str
) -> None:
    output = tmp_path / "ledger.json"
    with RehearsalServer() as server:
        flags = ["--approve-budget", *extra]
        if "--api-base-url" not in extra:
            flags += ["--api-base-url", server.base_url]
        result = _invoke(_run_args(study, output, *flags), env)
        requests = server.requests
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and requests == () and not output.exists()
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("agentstudy: error: ") and reason in line and PLANTED_KEY not in line


def test_a_paid_run_sends_the_environment_key_and_never_writes_it(study: ExampleStudy, tmp_path: Path) -> None:
    output = tmp_path / "ledger.json"
    env: dict[str, str | None] = {"ANTHROPIC_API_KEY": PLANTED_KEY, "STUDY_INPUT_USD_PER_MILLION": "0.50",
                                  "STUDY_OUTPUT_USD_PER_MILLION": "2.50"}
    with RehearsalServer() as server:
        result = _invoke(_run_args(study, output, "--approve-budget", "--api-base-url", server.base_url), env)
        requests = server.requests
    assert result.exit_code == 0, result.output
    assert requests and all(r.has_x_api_key for r in requests)
    ledger = _ledger(output)
    assert ledger["rehearsal"] is False and ledger["prices"] == {"input": 0.5, "output": 2.5}
    assert ledger["http"]["apiBaseUrl"] == server.base_url
    assert PLANTED_KEY not in output.read_text(encoding="utf-8") + result.output
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["status"] == "awaiting-adjudication" and line["rehearsal"] is False and "note" not in line
    assert "no real money" not in result.stderr


def test_rehearsal_uses_a_dummy_key_and_says_so(study: ExampleStudy, tmp_path: Path) -> None:
    output = tmp_path / "ledger.json"
    args = _run_args(study, output, "--rehearsal", "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5")
    result = _invoke(args, {"ANTHROPIC_API_KEY": PLANTED_KEY})
    assert result.exit_code == 0, result.output
    ledger = _ledger(output)
    assert ledger["rehearsal"] is True and ledger["status"] == "awaiting-adjudication"
    assert ledger["prices"] == {"input": 0.5, "output": 2.5, "nominal": True}, "given prices are nominal too"
    assert ledger["http"]["apiBaseUrl"].startswith("http://127.0.0.1:")
    assert PLANTED_KEY not in output.read_text(encoding="utf-8") + result.output


def test_a_blocked_http_run_exits_1_without_provider_text(study: ExampleStudy, tmp_path: Path) -> None:
    output = tmp_path / "ledger.json"
    env: dict[str, str | None] = {"ANTHROPIC_API_KEY": PLANTED_KEY}
    prices = ["--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5"]
    with RehearsalServer(fail_with_status=529) as server:
        result = _invoke(_run_args(study, output, "--approve-budget", "--api-base-url", server.base_url, *prices), env)
    assert result.exit_code == 1
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "blocked" and summary["byStatus"] == {"failed": 1}
    assert summary["usageComplete"] is False and summary["spentUsd"] > 0
    text = result.output + output.read_text(encoding="utf-8")
    assert "Scripted rehearsal failure" not in text and "overloaded_error" not in text
    observation = _ledger(output)["observations"][0]
    assert observation["statusReason"].endswith("status (HTTP 529)")
    assert observation["failureKind"] == "overloaded"  # our own word, after the bounded retries
    assert observation["apiRetries"] == 2 and observation["apiRetryStatuses"] == [529, 529, 529]


def test_a_runner_killed_mid_request_leaves_the_reservation_charged(study: ExampleStudy, tmp_path: Path) -> None:
    output = tmp_path / "ledger.json"
    arrived, release = threading.Event(), threading.Event()

    class Hold(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            arrived.set()
            release.wait(60)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hold)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    args = [*_run_args(study, output, "--approve-budget", "--api-base-url", url), "--input-usd-per-million", "0.5",
            "--output-usd-per-million", "2.5"]
    runner = subprocess.Popen([sys.executable, "-m", "agentstudy", *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "ANTHROPIC_API_KEY": PLANTED_KEY})
    try:
        assert arrived.wait(120), "the runner never sent its first request"
        runner.send_signal(signal.SIGKILL)
        runner.wait(30)
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
    ledger = _ledger(output)
    assert ledger["status"] == "running" and ledger["observations"] == []
    reserved = ledger["openReservation"]["reservedUsd"]
    assert reserved > 0 and ledger["budget"]["spent"] == ledger["budget"]["reserved"] == reserved
    assert PLANTED_KEY not in output.read_text(encoding="utf-8")
