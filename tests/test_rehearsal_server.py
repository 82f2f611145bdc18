"""Tests of the rehearsal Messages API: the scripted policy, the HTTP server (JSON and SSE forms)
and one end-to-end run of the real Claude Code binary against it on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import MCP_GET_TOOL, MCP_SEARCH_TOOL, find_prompt, next_reply, pick_term
from agentstudy.rehearsal.sse import sse_events

CWD = "/srv/corpus"
PROMPT = "Where is the retention window configured?"
CITATION_RE = re.compile(r"\(([^()\s]+):(\d+)\)")
REMINDER = "\n\n<system-reminder>\nUSD budget: $0.01/$0.1; $0.09 remaining\n</system-reminder>"


def _tool(name: str, props: dict[str, Any] | None = None) -> dict[str, Any]:
    schema = {"type": "object", "properties": props or {}, "required": list(props or {})}
    return {"name": name, "description": name, "input_schema": schema}


BUILTIN = [_tool("Glob", {"pattern": {}}), _tool("Grep", {"pattern": {}, "path": {}, "-i": {}}),
           _tool("Read", {"file_path": {}})]
MCP = [*BUILTIN, _tool(MCP_SEARCH_TOOL, {"query": {}}), _tool(MCP_GET_TOOL, {"path": {}})]


def _first_user(prompt: str = PROMPT, cwd: str = CWD) -> dict[str, Any]:
    return {"role": "user", "content": [
        {"type": "text", "text": f"<system-reminder>\n# Environment\n - Primary working directory: {cwd}\n"
                                 " - Platform: linux\n</system-reminder>"},
        {"type": "text", "text": "<system-reminder>\nToday's date is 2026-11-30.\n</system-reminder>\n"},
        {"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}},
    ]}


def _body(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
          stream: bool = False) -> dict[str, Any]:
    return {"model": "claude-haiku-4-5", "max_tokens": 32000, "stream": stream, "tools": tools,
            "system": [{"type": "text", "text": "You are Claude Code."}], "messages": messages}


def _continue(messages: list[dict[str, Any]], tools: list[dict[str, Any]], result: Any,
              is_error: bool = False) -> list[dict[str, Any]]:
    """Append the policy's next reply and a tool_result for its tool call."""
    reply = next_reply(_body(messages, tools))
    assert reply.stop_reason == "tool_use"
    call = reply.content[-1]
    tool_result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call["id"], "content": result}
    if is_error:
        tool_result["is_error"] = True
    return [*messages, {"role": "assistant", "content": reply.content},
            {"role": "user", "content": [tool_result]}]


def _tool_use(body: dict[str, Any]) -> dict[str, Any]:
    reply = next_reply(body)
    assert reply.stop_reason == "tool_use"
    block = reply.content[-1]
    assert block["type"] == "tool_use" and block["id"].startswith("toolu_")
    return block


# --- policy ---------------------------------------------------------------------------------------

def test_prompt_and_term_come_from_the_last_non_reminder_block() -> None:
    assert find_prompt([_first_user()]) == PROMPT
    assert find_prompt([{"role": "user", "content": "plain string prompt"}]) == "plain string prompt"
    assert pick_term(PROMPT) == "retention"
    assert pick_term("Which module handles HTTP retries?") == "module"
    assert pick_term("?!") is None


def test_turn_one_with_mcp_tools_calls_doc_search() -> None:
    block = _tool_use(_body([_first_user()], MCP))
    assert block["name"] == MCP_SEARCH_TOOL
    assert block["input"] == {"query": "retention"}


def test_turn_one_without_mcp_calls_grep_and_is_deterministic() -> None:
    body = _body([_first_user()], BUILTIN)
    block = _tool_use(body)
    assert block["name"] == "Grep"
    assert block["input"] == {"pattern": "retention", "path": CWD, "output_mode": "files_with_matches",
                              "-i": True}
    assert next_reply(body) == next_reply(json.loads(json.dumps(body)))


def test_glob_is_the_fallback_when_grep_is_not_offered_or_fails() -> None:
    tools = [t for t in BUILTIN if t["name"] != "Grep"]
    assert _tool_use(_body([_first_user()], tools))["name"] == "Glob"
    failed = _continue([_first_user()], BUILTIN, "<tool_use_error>rg failed</tool_use_error>", is_error=True)
    assert _tool_use(_body(failed, BUILTIN))["input"] == {"pattern": "**/*.md"}


def test_full_builtin_conversation_cites_path_and_line() -> None:
    messages = _continue([_first_user()], BUILTIN, "Found 2 files\ndocs/retention.md\nREADME.md" + REMINDER)
    read = _tool_use(_body(messages, BUILTIN))
    assert read == {**read, "name": "Read", "input": {"file_path": f"{CWD}/docs/retention.md"}}
    lines = ("1\t# Retention\n2\t\n3\tLogs are kept for 30 days.\n"
             "4\tThe retention window is set by RETENTION_DAYS.\n")
    messages = _continue(messages, BUILTIN, lines + REMINDER)
    reply = next_reply(_body(messages, BUILTIN))
    assert reply.stop_reason == "end_turn"
    assert [b["type"] for b in reply.content] == ["text"]
    text = reply.content[0]["text"]
    assert "(docs/retention.md:4)" in text and "RETENTION_DAYS" in text


def test_mcp_conversation_unwraps_structured_results() -> None:
    hits = json.dumps({"query": "retention", "hits": [{"path": "docs/retention.md", "score": 2}]})
    messages = _continue([_first_user()], MCP, [{"type": "text", "text": json.dumps({"result": hits})}])
    block = _tool_use(_body(messages, MCP))
    assert block["name"] == MCP_GET_TOOL and block["input"] == {"path": "docs/retention.md"}
    messages = _continue(messages, MCP, [{"type": "text", "text": "1\t# Notes\n2\tRetention is 30 days."}])
    reply = next_reply(_body(messages, MCP))
    assert reply.stop_reason == "end_turn" and "(docs/retention.md:2)" in reply.content[0]["text"]


def test_mcp_plain_text_hits_in_path_line_form() -> None:
    hits = "docs/ops/logging.md:7: The retention window is 30 days.\nREADME.md:2: retention"
    messages = _continue([_first_user()], MCP, [{"type": "text", "text": hits}])
    assert _tool_use(_body(messages, MCP))["input"] == {"path": "docs/ops/logging.md"}
    messages = _continue([_first_user()], MCP, [{"type": "text", "text": "no matches"}])
    assert next_reply(_body(messages, MCP)).stop_reason == "end_turn"


def test_no_hits_gives_an_honest_answer_without_citations() -> None:
    messages = _continue([_first_user()], BUILTIN, "No files found" + REMINDER)
    reply = next_reply(_body(messages, BUILTIN))
    assert reply.stop_reason == "end_turn"
    assert "no evidence" in reply.content[0]["text"]
    assert not CITATION_RE.search(reply.content[0]["text"])


def test_never_calls_an_unoffered_tool_and_stops_by_turn_four() -> None:
    assert next_reply(_body([_first_user()], [])).stop_reason == "end_turn"
    assert next_reply(_body([_first_user()], [_tool("Bash", {"command": {}})])).stop_reason == "end_turn"
    hits = "Found 9 files\n" + "\n".join(f"docs/d{i}.md" for i in range(9))
    messages = _continue([_first_user()], BUILTIN, hits)  # turn 1: Grep
    messages = _continue(messages, BUILTIN, "1\tnothing relevant here")  # turn 2: Read docs/d0.md
    assert messages[-2]["content"][-1]["input"] == {"file_path": f"{CWD}/docs/d0.md"}
    messages = _continue(messages, BUILTIN, "1\tstill nothing")  # turn 3: Read docs/d1.md
    assert messages[-2]["content"][-1]["input"] == {"file_path": f"{CWD}/docs/d1.md"}
    reply = next_reply(_body(messages, BUILTIN))  # turn 4 must answer
    assert reply.stop_reason == "end_turn" and "no evidence" in reply.content[0]["text"]


def test_usage_is_plausible() -> None:
    body = _body([_first_user()], BUILTIN)
    reply = next_reply(body)
    sent = json.dumps({k: body[k] for k in ("messages", "system", "tools")}, separators=(",", ":"))
    assert reply.usage["input_tokens"] == len(sent.encode()) // 4
    assert reply.usage["output_tokens"] >= 1
    assert reply.usage["cache_creation_input_tokens"] == reply.usage["cache_read_input_tokens"] == 0
    with pytest.raises(ValueError):
        next_reply({"model": "m", "messages": []})


# --- HTTP server ----------------------------------------------------------------------------------

def _parse_sse(raw: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_json_form_and_request_log() -> None:
    with RehearsalServer() as server, httpx.Client(base_url=server.base_url) as client:
        assert server.base_url.startswith("http://127.0.0.1:")
        response = client.post("/v1/messages?beta=true", json=_body([_first_user()], BUILTIN),
                               headers={"x-api-key": "sk-secret-value"})
        assert response.status_code == 200
        message = response.json()
        assert message["id"].startswith("msg_rehearsal_") and message["model"] == "claude-haiku-4-5"
        assert message["type"] == "message" and message["role"] == "assistant"
        assert message["stop_reason"] == "tool_use" and message["content"][-1]["name"] == "Grep"
        (record,) = server.requests
    assert (record.path, record.model, record.stream, record.message_count) == (
        "/v1/messages", "claude-haiku-4-5", False, 1)
    assert record.tool_names == ("Glob", "Grep", "Read")
    assert record.has_x_api_key and not record.has_authorization
    assert "secret" not in repr(record)


def test_sse_form_event_order_and_tool_input() -> None:
    body = _body([_first_user()], BUILTIN, stream=True)
    with RehearsalServer() as server, httpx.Client(base_url=server.base_url) as client:
        response = client.post("/v1/messages", json=body, headers={"authorization": "Bearer dummy"})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = _parse_sse(response.text)
        assert server.requests[0].stream and server.requests[0].has_authorization
    names = [name for name, _ in events]
    assert all(name == data["type"] for name, data in events)
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert re.fullmatch(r"(content_block_start (content_block_delta )+content_block_stop )+",
                        " ".join(names[1:-2]) + " ")
    assert events[0][1]["message"]["id"].startswith("msg_rehearsal_")
    blocks: dict[int, dict[str, Any]] = {}
    for name, data in events:
        if name == "content_block_start":
            blocks[data["index"]] = {**data["content_block"], "partial": ""}
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "input_json_delta":
                blocks[data["index"]]["partial"] += delta["partial_json"]
            else:
                blocks[data["index"]]["text"] += delta["text"]
    tool = blocks[max(blocks)]
    assert tool["type"] == "tool_use" and tool["name"] == "Grep"
    assert json.loads(tool["partial"]) == next_reply(body).content[-1]["input"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert len([e for e in sse_events(next_reply(body), "m", "msg_x") if e[0] == "content_block_delta"]) > 2


def test_errors_use_the_messages_api_shape() -> None:
    with RehearsalServer() as server, httpx.Client(base_url=server.base_url) as client:
        for method, path in [("GET", "/v1/models"), ("GET", "/v1/messages"), ("POST", "/v1/complete")]:
            response = client.request(method, path)
            assert response.status_code == 404
            assert response.json()["type"] == "error"
            assert response.json()["error"]["type"] == "not_found_error"
        for payload in [b"{not json", b"[]", b'{"model": "m", "messages": []}']:
            response = client.post("/v1/messages", content=payload)
            assert response.status_code == 400
            assert response.json()["error"]["type"] == "invalid_request_error"
        assert [r.status for r in server.requests] == [404, 404, 404, 400, 400, 400]


def test_scripted_failure_status() -> None:
    with RehearsalServer(fail_with_status=529) as server, httpx.Client(base_url=server.base_url) as client:
        response = client.post("/v1/messages?beta=true", json=_body([_first_user()], BUILTIN, stream=True))
        assert response.status_code == 529
        assert response.json()["error"]["type"] == "overloaded_error"
        assert [(r.status, r.stream) for r in server.requests] == [(529, True)]
    with pytest.raises(ValueError):
        RehearsalServer(fail_with_status=200)


# --- the real Claude Code binary ------------------------------------------------------------------

def _claude_bin() -> Path:
    configured = os.environ.get("AGENTSTUDY_CLAUDE_BIN")
    path = Path(configured) if configured else (
        Path(__file__).resolve().parents[1] / ".tools/claude-code/node_modules/.bin/claude")
    if not path.exists():
        pytest.fail(f"Claude Code binary not found at {path}: install it with scripts/setup.sh "
                    "or point AGENTSTUDY_CLAUDE_BIN at it")
    return path


def test_real_claude_cli_end_to_end(tmp_path: Path) -> None:
    claude = _claude_bin()
    work, home, tmp = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for folder in (work / "docs", home, tmp):
        folder.mkdir(parents=True)
    (work / "README.md").write_text("# Demo\n\nThis project keeps its logs on disk.\n")
    (work / "docs" / "logging.md").write_text(
        "# Logging\n\nLogs are rotated daily.\nThe retention window is set by RETENTION_DAYS (default 30).\n")
    argv = [str(claude), "-p", "--model", "claude-haiku-4-5", "--output-format", "stream-json", "--verbose",
            "--no-session-persistence", "--max-budget-usd", "0.100000", "--disable-slash-commands",
            "--permission-mode", "dontAsk", "--tools", "Read,Grep,Glob", "--allowedTools", "Read,Grep,Glob",
            "--disallowedTools", "Bash,Edit,MultiEdit,Write,NotebookEdit,WebFetch,WebSearch,Task,Agent",
            "--mcp-config", '{"mcpServers":{}}', "--strict-mcp-config", "--", PROMPT]
    with RehearsalServer() as server:
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": str(home),
               "TMPDIR": str(tmp), "LANG": "C.UTF-8", "TERM": "dumb", "ANTHROPIC_BASE_URL": server.base_url,
               "ANTHROPIC_AUTH_TOKEN": "rehearsal-dummy-token",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
               "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
               "CLAUDE_CODE_MAX_RETRIES": "0"}
        proc = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=120, check=False)
        records = server.requests
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    result = events[-1]
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success", False), result
    tool_uses = [block["name"] for event in events if event["type"] == "assistant"
                 for block in event["message"]["content"] if block["type"] == "tool_use"]
    assert tool_uses[0] in ("Grep", "Glob") and "Read" in tool_uses[1:], tool_uses
    citation = CITATION_RE.search(result["result"])
    assert citation, result["result"]
    cited = work / citation.group(1)
    assert cited.is_file(), result["result"]
    assert "retention" in cited.read_text().splitlines()[int(citation.group(2)) - 1].lower()
    assert records and all(r.path == "/v1/messages" and r.status == 200 for r in records)
    assert all(r.has_authorization and not r.has_x_api_key for r in records)
