"""The rehearsal's careful agent speaks the http transport's tools (repo_search / repo_read / doc_search / doc_get)."""

from __future__ import annotations

import json
from typing import Any

from agentstudy.rehearsal.conversation import numbered_lines, result_paths
from agentstudy.rehearsal.policy import HTTP_MCP_GET_TOOL, HTTP_MCP_SEARCH_TOOL, next_reply
from agentstudy.transports.repo_tools import DEFINITIONS

PROMPT = "Where is the retention window configured?\nAnswer from the repository only."
MCP = [
    *DEFINITIONS,
    {"name": HTTP_MCP_SEARCH_TOOL, "description": "s", "input_schema": {"type": "object", "properties": {
        "query": {"type": "string"}}, "required": ["query"]}},
    {"name": HTTP_MCP_GET_TOOL, "description": "g", "input_schema": {"type": "object", "properties": {
        "path": {"type": "string"}, "start": {"type": "integer"}}, "required": ["path"]}},
]


def _body(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 1024, "temperature": 0, "messages": messages, "tools": tools}


Messages = list[dict[str, Any]]


def _step(messages: Messages, tools: list[dict[str, Any]], result: str) -> tuple[Messages, dict[str, Any]]:
    """The policy's tool call for ``messages`` and the conversation after answering it with ``result``."""
    reply = next_reply(_body(messages, tools))
    assert reply.stop_reason == "tool_use"
    call = reply.content[-1]
    answered = [*messages, {"role": "assistant", "content": reply.content},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": result,
                                              "is_error": False}]}]
    return answered, call


def test_repository_only_searches_reads_and_cites_with_relative_paths() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    search = json.dumps({"matches": ["docs/ops/logging.md:7: The retention window is 30 days.",
                                     "README.md:2: retention"], "limitedToFirstFiles": 500}, separators=(",", ":"))
    messages, call = _step(messages, list(DEFINITIONS), search)
    assert (call["name"], call["input"]) == ("repo_search", {"term": "retention"})
    lines = json.dumps("1: # Logging\n6: \n7: The retention window is 30 days.")
    messages, call = _step(messages, list(DEFINITIONS), lines)
    assert (call["name"], call["input"]) == ("repo_read", {"path": "docs/ops/logging.md"})
    answer = next_reply(_body(messages, list(DEFINITIONS)))
    assert answer.stop_reason == "end_turn"
    assert "(docs/ops/logging.md:7)" in answer.content[0]["text"]


def test_the_mcp_arm_prefers_doc_search_and_doc_get() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    messages, call = _step(messages, MCP, json.dumps("docs/ops/logging.md:7: The retention window is 30 days."))
    assert (call["name"], call["input"]) == ("doc_search", {"query": "retention"})
    messages, call = _step(messages, MCP, json.dumps("6\t\n7\tThe retention window is 30 days."))
    assert (call["name"], call["input"]) == ("doc_get", {"path": "docs/ops/logging.md"})
    answer = next_reply(_body(messages, MCP))
    assert answer.stop_reason == "end_turn" and "(docs/ops/logging.md:7)" in answer.content[0]["text"]


def test_no_match_is_an_honest_answer() -> None:
    messages, _ = _step([{"role": "user", "content": PROMPT}], list(DEFINITIONS),
                        '{"matches":[],"limitedToFirstFiles":500}')
    answer = next_reply(_body(messages, list(DEFINITIONS)))
    assert answer.stop_reason == "end_turn" and "no evidence" in answer.content[0]["text"]


def test_result_parsing_of_the_http_shapes() -> None:
    assert result_paths('{"matches":["a/b.md:3: x: y","c.md:1: z"]}') == ["a/b.md", "c.md"]
    assert result_paths('["docs/a.md", "docs/b.md"]') == ["docs/a.md", "docs/b.md"]
    assert numbered_lines("1: # T\n12: text: more\nnot a line") == [(1, "# T"), (12, "text: more")]
    assert numbered_lines("     3\ttab\n4\u2192arrow") == [(3, "tab"), (4, "arrow")]
