"""The http transport's run loop over real HTTP on 127.0.0.1 (issue 7; digest 2.1 and 2.4).

Real parts throughout: the example study's git corpora, the bundled MCP server, the
rehearsal Messages API server driven by scripted policies, and, for answers the rehearsal
server cannot give (a dropped connection, a redirect), a tiny ``http.server`` in a thread.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io.ledger_journal import read_ledger
from agentstudy.pricing.http import UpperPrices
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.prompt import study_prompt
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, StopReason, next_reply
from agentstudy.runners.http_request import HttpRunRequest
from agentstudy.runners.minimal_http import run_http_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER, PreflightError
from agentstudy.runners.summary import RunSummary

PLANTED_KEY = "sk-ant-planted-http-key-0123456789"
PRICES = UpperPrices(Decimal("0.50"), Decimal("2.50"))
USAGE = {"input_tokens": 100, "output_tokens": 10}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("http") / "study")


def _request(study: ExampleStudy, output: Path, base_url: str, **changes: Any) -> HttpRunRequest:
    values: dict[str, Any] = {
        "loaded": load_manifest(study.manifest_path), "mode": "pilot", "roots": study.roots, "output": output,
        "model": "claude-haiku-5-5", "prices": PRICES, "cap_usd": Decimal("1"), "api_key": PLANTED_KEY,
        "base_url": base_url, "mcp": DEFAULT_MCP_SERVER,
    }
    values.update(changes)
    return HttpRunRequest(**values)


def _ledger(path: Path) -> dict[str, Any]:
    """The ledger's state as every reader sees it: the snapshot plus the journal beside it, if any."""
    data: dict[str, Any] = json.loads(read_ledger(path, path.read_bytes()).data)
    return data


def _tool_use(call_id: str, name: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": dict(tool_input)}


def _reply(content: list[dict[str, Any]], stop: StopReason, usage: Mapping[str, Any] = USAGE) -> ScriptedReply:
    return ScriptedReply(content, stop, dict(usage))


def _turn(body: Mapping[str, Any]) -> int:
    return 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")


def _micro(value: float) -> Decimal:
    return Decimal(str(value))


class _Loopback:
    """A tiny real HTTP server on 127.0.0.1: ``answer(handler, body)`` writes (or withholds) each response."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler, bytes], None]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                answer(self, body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> _Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _send_json(handler: BaseHTTPRequestHandler, document: Mapping[str, Any]) -> None:
    data = json.dumps(document).encode()
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture
def output(tmp_path: Path) -> Path:
    return tmp_path / "ledger.json"


@dataclass(frozen=True)
class _EchoedRun:
    """One pilot of the rehearsal agent whose answers echo the key: what each request saw on disk, and the end."""

    seen: list[tuple[dict[str, Any], dict[str, Any]]]
    records: tuple[Any, ...]
    summary: RunSummary
    output: Path


@pytest.fixture(scope="module")
def echoed_run(study: ExampleStudy, tmp_path_factory: pytest.TempPathFactory) -> _EchoedRun:
    """The rehearsal agent's pilot, each answer followed by the planted key; run once and read by two tests."""
    output = tmp_path_factory.mktemp("echoed") / "ledger.json"
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        seen.append((dict(body), _ledger(output)))
        reply = next_reply(body)
        if reply.stop_reason != "end_turn":
            return reply
        content = [{**block, "text": f"{block['text']} echo {PLANTED_KEY} echo"} if block.get("type") == "text"
                   else block for block in reply.content]
        return _reply(content, "end_turn", reply.usage)

    with RehearsalServer(policy=policy) as server:
        summary = run_http_study(_request(study, output, server.base_url))
        records = server.requests
    return _EchoedRun(seen, records, summary, output)


def test_requests_are_the_digest_body_and_each_reservation_is_on_disk_first(
    study: ExampleStudy, echoed_run: _EchoedRun
) -> None:
    seen, records, summary, output = echoed_run.seen, echoed_run.records, echoed_run.summary, echoed_run.output
    assert summary.status == "awaiting-adjudication" and summary.line["transport"] == "http"
    question = load_manifest(study.manifest_path).manifest.tasks[0].question
    for body, on_disk in seen:
        assert set(body) == {"model", "max_tokens", "temperature", "messages", "tools"}
        assert (body["max_tokens"], body["temperature"], body["model"]) == (1024, 0, "claude-haiku-5-5")
        assert body["messages"][0] == {"role": "user", "content": study_prompt(question)}
        assert all(set(tool) == {"name", "description", "input_schema"} for tool in body["tools"])
        reserved = on_disk["openReservation"]["reservedUsd"]
        assert reserved > 0 and on_disk["budget"]["spent"] >= reserved, "the reservation was persisted first"
    tool_counts = {len(body["tools"]) for body, _ in seen}
    assert tool_counts == {3, 6}, "3 repository tools; plus 3 MCP tools in the MCP arm"
    assert all(r.has_x_api_key and not r.has_authorization and not r.stream for r in records)
    ledger = _ledger(output)
    assert ledger["transport"] == "http" and ledger["prices"] == {"input": 0.5, "output": 2.5}
    assert "cli" not in ledger and ledger["rehearsal"] is False and "openReservation" not in ledger
    budget = ledger["budget"]
    assert budget["spent"] == budget["measured"] == pytest.approx(sum(o["chargedUsd"] for o in ledger["observations"]))
    assert budget["reserved"] > budget["spent"]


def test_lost_response_keeps_the_reservation_and_stops_the_run(study: ExampleStudy, output: Path) -> None:
    at_request: list[dict[str, Any]] = []

    def answer(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        at_request.append(_ledger(output))
        if len(at_request) == 1:
            reply = _reply([_tool_use("toolu_1", "repo_list", {})], "tool_use")
            _send_json(handler, {"content": reply.content, "stop_reason": reply.stop_reason, "usage": reply.usage})
            return
        handler.close_connection = True  # the request was read; the response never comes

    with _Loopback(answer) as server:
        summary = run_http_study(_request(study, output, server.base_url))
    assert summary.status == "blocked" and summary.line["attempts"] == 1 and summary.line["usageComplete"] is False
    ledger = _ledger(output)
    [observation] = ledger["observations"]
    assert observation["status"] == "failed" and observation["usageComplete"] is False
    assert (observation["numTurns"], observation["toolCalls"]) == (2, 1)
    assert (observation["inputTokens"], observation["outputTokens"]) == (100, 10), "only the settled first turn"
    lost_reservation = _micro(at_request[1]["openReservation"]["reservedUsd"])
    first_turn = (Decimal(100) * Decimal("0.50") + Decimal(10) * Decimal("2.50")) / Decimal(10**6)
    assert _micro(observation["measuredUsd"]) == first_turn
    assert _micro(observation["chargedUsd"]) == pytest.approx(first_turn + lost_reservation)
    assert ledger["budget"]["spent"] == at_request[1]["budget"]["spent"], "the lost call stays charged"
    assert ledger["status"] == "blocked" and ledger["stopReason"] == "attempt 1 ended failed"
    assert "lost" in observation["statusReason"] and observation["answer"] == ""


def test_invalid_usage_fails_and_keeps_the_reservation(study: ExampleStudy, output: Path) -> None:
    # One run: every kind of invalid usage (a missing or non-integer count, a count over the
    # reservation's ceiling, a cache field) takes the same path from the settlement's problem to the
    # failed attempt; tests/test_pricing_http.py holds each kind against the validator it goes through.
    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        return _reply([{"type": "text", "text": "done"}], "end_turn", {"input_tokens": "100", "output_tokens": 10})

    with RehearsalServer(policy=policy) as server:
        summary = run_http_study(_request(study, output, server.base_url))
        requests = server.requests
    assert summary.status == "blocked" and len(requests) == 1
    ledger = _ledger(output)
    [observation] = ledger["observations"]
    assert observation["status"] == "failed" and observation["usageComplete"] is False
    assert observation["inputTokens"] == 0 and observation["answer"] == ""
    assert observation["chargedUsd"] == observation["reservedUsd"] == ledger["budget"]["spent"] > 0
    assert ledger["budget"]["measured"] == 0
    assert "invalid" in observation["statusReason"]


def test_max_tokens_and_the_turn_limit_are_incomplete_and_the_run_goes_on(study: ExampleStudy, output: Path) -> None:
    # One pilot: the repository-only attempt (3 tools offered) is cut by max_tokens on its first turn;
    # the MCP attempt after it (6 tools) calls a tool every turn until the limit ends it after 8 paid turns.
    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        if len(body["tools"]) == 3:
            return _reply([{"type": "text", "text": "cut"}], "max_tokens")
        return _reply([_tool_use(f"toolu_{_turn(body)}", "repo_list", {"term": "docs"})], "tool_use")

    with RehearsalServer(policy=policy) as server:
        summary = run_http_study(_request(study, output, server.base_url))
        requests = server.requests
    assert summary.status == "blocked"
    assert summary.line["byStatus"] == {"incomplete": 2}, "incomplete does not stop an http run"
    assert summary.line["extrapolatedFullRunUsd"] is None
    assert len(requests) == 1 + 8
    ledger = _ledger(output)
    cut, limited = ledger["observations"]
    assert (cut["scenario"], limited["scenario"]) == ("repository-only", "doc-bridge-mcp")
    assert (cut["status"], cut["numTurns"], cut["answer"]) == ("incomplete", 1, "")
    assert cut["usageComplete"] and "max_tokens" in cut["statusReason"]
    assert (limited["status"], limited["numTurns"], limited["toolCalls"]) == ("incomplete", 8, 8)
    assert ledger["stopReason"] == "not every attempt completed"


def test_twenty_tool_calls_run_and_twenty_one_fail(study: ExampleStudy, output: Path) -> None:
    # One pilot: the repository-only attempt (3 tools offered) asks for 20 calls in a turn and
    # completes; the MCP attempt after it (6 tools) asks for 21, fails and stops the run.
    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        if _turn(body) > 1:
            return _reply([{"type": "text", "text": "answer"}], "end_turn")
        count = 20 if len(body["tools"]) == 3 else 21
        calls = [_tool_use(f"toolu_{i}", "repo_read", {"path": "README.md", "start": 3 * i + 1, "lines": 1})
                 for i in range(count)]
        return _reply(calls, "tool_use")

    with RehearsalServer(policy=policy) as server:
        summary = run_http_study(_request(study, output, server.base_url))
        requests = server.requests
    twenty, many = _ledger(output)["observations"]
    assert (twenty["scenario"], many["scenario"]) == ("repository-only", "doc-bridge-mcp")
    assert twenty["status"] == "completed"
    assert twenty["toolCalls"] == 20 and twenty["numTurns"] == 2
    assert twenty["toolCallsByName"]["repo_read"] == 20
    # README.md has 45 lines: the reads starting at 46, 49, 52, 55 and 58 fail and still count.
    assert twenty["toolErrorsByName"] == {"repo_read": 5}
    assert summary.status == "blocked" and len(requests) == 3, "two turns of the first attempt, one of the second"
    assert many["status"] == "failed" and many["toolCalls"] == 0
    assert many["usageComplete"] is True, "the turn itself was settled"
    assert many["chargedUsd"] == many["measuredUsd"] < many["reservedUsd"]


def test_a_redirect_is_refused_not_followed(study: ExampleStudy, output: Path) -> None:
    with RehearsalServer() as target:
        def answer(handler: BaseHTTPRequestHandler, body: bytes) -> None:
            handler.send_response(307)
            handler.send_header("location", f"{target.base_url}/v1/messages")
            handler.send_header("content-length", "0")
            handler.end_headers()

        with _Loopback(answer) as server:
            summary = run_http_study(_request(study, output, server.base_url))
        assert target.requests == (), "the redirect target never saw the request (nor the key)"
    [observation] = _ledger(output)["observations"]
    assert summary.status == "blocked"
    assert observation["status"] == "failed" and observation["usageComplete"] is False
    assert observation["chargedUsd"] == observation["reservedUsd"] > 0
    assert observation["statusReason"].endswith("redirect (HTTP 307)")


def test_a_reservation_over_the_cap_is_refused_before_sending(study: ExampleStudy, output: Path) -> None:
    with RehearsalServer() as server:
        summary = run_http_study(_request(study, output, server.base_url, cap_usd=Decimal("0.001")))
        requests = server.requests
    assert requests == ()
    ledger = _ledger(output)
    [observation] = ledger["observations"]
    assert observation["status"] == "budget-exceeded" and observation["numTurns"] == 0
    assert ledger["budget"]["spent"] == ledger["budget"]["reserved"] == 0
    assert summary.status == "blocked" and ledger["stopReason"] == "attempt 1 ended budget-exceeded"


def test_the_deadline_is_checked_between_tools(study: ExampleStudy, output: Path) -> None:
    now = [0.0]

    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        now[0] += 150.0  # each answer takes two and a half minutes of the attempt's clock
        return _reply([_tool_use(f"toolu_{_turn(body)}", "repo_list", {})], "tool_use")

    with RehearsalServer(policy=policy) as server:
        summary = run_http_study(_request(study, output, server.base_url, clock=lambda: now[0]))
    observations = _ledger(output)["observations"]
    assert [(o["status"], o["numTurns"], o["toolCalls"]) for o in observations] == [("timed-out", 2, 1)] * 2
    assert all(o["usageComplete"] and o["wallTimeMs"] == 300_000 for o in observations)
    assert summary.status == "blocked", "timed-out does not stop an http run, but it is not completed"


def test_a_key_with_a_newline_is_refused_before_anything(study: ExampleStudy, output: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before the preflight starts any server or checkout, before any request, with no ledger."""
    import agentstudy.runners.minimal_http as minimal_http

    prepared: list[object] = []
    real_prepare = getattr(minimal_http, "prepare_study")  # noqa: B009 -- the name the run looks up at call time

    def recording_prepare(*args: Any, **kwargs: Any) -> Any:
        prepared.append(args)
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(minimal_http, "prepare_study", recording_prepare)
    with RehearsalServer() as server:
        with pytest.raises(PreflightError) as refused:
            run_http_study(_request(study, output, server.base_url, api_key="sk-ant-bad\nInjected: 1"))
        requests = server.requests
    assert "sk-ant-bad" not in str(refused.value) and requests == () and not output.exists()
    assert prepared == [], "no preflight ran"


def test_the_ledger_never_holds_the_key_even_when_the_provider_echoes_it(echoed_run: _EchoedRun) -> None:
    text = echoed_run.output.read_text(encoding="utf-8")
    assert echoed_run.summary.status == "awaiting-adjudication"
    assert PLANTED_KEY not in text and PLANTED_KEY not in json.dumps(echoed_run.summary.line)
    answers = [o["answer"] for o in _ledger(echoed_run.output)["observations"]]
    assert len(answers) == 2 and all(a.endswith(" echo [redacted] echo") for a in answers)


def test_the_mcp_server_is_fresh_per_attempt_and_never_gets_the_key(
    study: ExampleStudy, output: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED_KEY)
    starts = tmp_path / "starts.jsonl"
    script = (
        "import json, os, sys\n"
        "from agentstudy.rehearsal.mcp_server import main\n"
        f"with open({str(starts)!r}, 'a') as f:\n"
        "    f.write(json.dumps({'key': any(" + repr(PLANTED_KEY) + " in v for v in os.environ.values()),"
        " 'pid': os.getpid()}) + '\\n')\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    command = (sys.executable, "-c", script, "--root", "{root}", "--pin", "{pin}")
    spec = McpServerSpec(name="doc-bridge", command=command)
    # The server logs its starts to a host file, which a bubblewrap sandbox would hide: restricted.
    # Its environment is the same allowlist either way; the parent's holds the planted key.
    with RehearsalServer() as server:
        request = _request(study, output, server.base_url, mcp=spec, containment="restricted",
                           parent_env=dict(os.environ))
        summary = run_http_study(request)
    assert summary.status == "awaiting-adjudication"
    launches = [json.loads(line) for line in starts.read_text().splitlines()]
    assert len(launches) == 2, "one preflight probe and one fresh server for the one MCP attempt"
    assert not any(launch["key"] for launch in launches)
    repository_only, doc_bridge = _ledger(output)["observations"]
    assert not {"doc_search", "doc_get", "handoff_resolve"} & set(repository_only["toolCallsByName"])
    assert doc_bridge["toolCallsByName"] == {"doc_search": 1, "doc_get": 1}
    assert "doc_write" not in doc_bridge["tools"]
    assert doc_bridge["containment"] == repository_only["containment"] == "restricted"

