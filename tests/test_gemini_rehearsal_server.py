"""The scripted Gemini API on 127.0.0.1: the careful agent behind ``generateContent`` (JSON) and
``streamGenerateContent`` (server-sent events), the Gemini request read as the policy's view, bad requests
answered 400/404."""

from __future__ import annotations

import json
from typing import Any

import httpx

from agentstudy.rehearsal.gemini_server import GeminiRehearsalServer
from agentstudy.rehearsal.gemini_wire import messages_view

PROMPT = "Who owns handoff H-1? Cite the file and line."
CONTEXT = ("<session_context>\n- **Workspace Directories:**\n  - /work/export\n- **Directory Structure:**\n"
           "</session_context>")
TOOLS = [{"functionDeclarations": [
    {"name": "read_file", "parametersJsonSchema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
    {"name": "grep_search", "parametersJsonSchema": {"type": "object", "properties": {"pattern": {"type": "string"}}}},
    {"name": "mcp_doc-bridge_doc.search", "description": "Search the docs.",
     "parametersJsonSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
]}]


def _body(*later: dict[str, Any]) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": CONTEXT}, {"text": PROMPT}]}, *later], "tools": TOOLS}


def test_the_view_maps_tools_calls_and_results_to_the_policys_names() -> None:
    call = {"role": "model",
            "parts": [{"functionCall": {"id": "c1", "name": "grep_search", "args": {"pattern": "H-1"}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "grep_search", "response": {
        "output": "Found 2 matches for pattern \"H-1\":\n---\nFile: content/handoffs.md\nL3: H-1 ...\n"
                  "File: content/handoffs.md\nL9: H-1 again\n---"}}}]}
    view = messages_view(_body(call, answer), "rehearsal-scripted")
    assert view["workingDirectory"] == "/work/export" and view["model"] == "rehearsal-scripted"
    assert [t["name"] for t in view["tools"]] == ["Read", "Grep", "mcp__doc-bridge__doc.search"]
    assert view["messages"][0]["content"][0]["text"] == PROMPT
    assert view["messages"][1]["content"][0] == {"type": "tool_use", "id": "c1", "name": "Grep",
                                                 "input": {"pattern": "H-1"}}
    assert view["messages"][2]["content"][0]["content"] == "Found 1 files\ncontent/handoffs.md"


def test_both_methods_answer_and_the_treatment_search_comes_first() -> None:
    with GeminiRehearsalServer() as server:
        url = f"{server.agent_base_url}/v1beta/models/rehearsal-scripted"
        plain = httpx.post(f"{url}:generateContent", json=_body(), headers={"x-goog-api-key": "k"})
        streamed = httpx.post(f"{url}:streamGenerateContent?alt=sse", json=_body())
        bad = httpx.post(f"{url}:generateContent", json={"contents": []})
        other = httpx.post(f"{url}:countTokens", json=_body())
        junk = httpx.post(f"{server.agent_base_url}/v1/messages", json={})
    assert plain.status_code == 200
    parts = plain.json()["candidates"][0]["content"]["parts"]
    assert parts[-1]["functionCall"]["name"] == "mcp_doc-bridge_doc.search"  # the server's search, offered
    assert plain.json()["usageMetadata"]["promptTokenCount"] > 0
    events = [json.loads(line[len("data: "):]) for line in streamed.text.split("\r\n\r\n") if line.startswith("data: ")]
    assert events[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in events[-1]
    assert (bad.status_code, other.status_code, junk.status_code) == (400, 400, 404)
    # the control arm's search: grep_search with only its declared arguments (no Claude Code output_mode)
    control = {**_body(), "tools": [{"functionDeclarations": TOOLS[0]["functionDeclarations"][:2]}]}
    with GeminiRehearsalServer() as control_server:
        searched = httpx.post(f"{control_server.agent_base_url}/v1beta/models/m:generateContent", json=control)
    call = searched.json()["candidates"][0]["content"]["parts"][-1]["functionCall"]
    assert call["name"] == "grep_search" and set(call["args"]) == {"pattern"}
    assert server.offered_tools[0] == ("read_file", "grep_search", "mcp_doc-bridge_doc.search")
    first = server.requests[0]
    assert first.tool_names == ("Read", "Grep", "mcp__doc-bridge__doc.search")
    assert "k" not in {str(value) for value in vars(first).values()}  # no header value is kept
    assert first.served_input_tokens == plain.json()["usageMetadata"]["promptTokenCount"]
