"""The rehearsal agent uses whatever MCP server is under study (issue 18 item 3).

The tool definitions are the real ``tools/list`` of ``@modelcontextprotocol/server-filesystem``
2026.8.31 (recorded in tests/data); the end-to-end test with the live server is
tests/test_third_party_server_e2e.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentstudy.protocol.tool_roles import SearchTool, choose_server_tools, server_tool_names
from agentstudy.rehearsal.policy import next_reply
from agentstudy.transports.repo_tools import DEFINITIONS

DATA = Path(__file__).parent / "data" / "server-filesystem-2026.8.31-tools.json"
CWD = "/tmp/agentstudy-export-abc/repo"
ROOT = "/tmp/agentstudy-server-corpus-x/agentstudy-export-y"
PROMPT = "Where is the retention window configured?"
BUILTINS = [{"name": n, "description": n, "input_schema": {"type": "object", "properties": {
    "pattern": {"type": "string"}, "file_path": {"type": "string"}}}} for n in ("Grep", "Read", "Glob")]
WRITE_TOOLS = {"write_file", "edit_file", "create_directory", "move_file"}


def _filesystem(prefix: str = "mcp__filesystem__", *, denied: bool = True) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))
    return [{"name": prefix + t["name"], "description": t["description"], "input_schema": t["input_schema"]}
            for t in listed if not (denied and t["name"] in WRITE_TOOLS)]


def _by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in tools}


def _first(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    reminder = f"<system-reminder>\nPrimary working directory: {CWD}\n</system-reminder>"
    return [{"role": "user", "content": [{"type": "text", "text": reminder}, {"type": "text", "text": PROMPT}]}]


def _reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    return next_reply({"model": "m", "messages": messages, "tools": tools})


def _answer_call(messages: list[dict[str, Any]], tools: list[dict[str, Any]], result: str,
                 is_error: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The policy's next tool call, and the conversation after the tool answered it with ``result``."""
    reply = _reply(messages, tools)
    assert reply.stop_reason == "tool_use", reply.content
    call: dict[str, Any] = reply.content[-1]
    blocks = [{"type": "text", "text": result}]
    return [*messages, {"role": "assistant", "content": reply.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": blocks,
                                          "is_error": is_error}]}], call


def test_server_filesystem_tools_are_chosen_from_names_descriptions_and_schemas() -> None:
    for prefix in ("mcp__filesystem__", ""):
        tools = [*BUILTINS, *_filesystem(prefix)] if prefix else [*DEFINITIONS, *_filesystem("")]
        chosen = choose_server_tools(_by_name(tools))
        assert chosen.search == SearchTool(f"{prefix}search_files", "pattern", {"path": "."}, glob=True)
        assert chosen.read == (f"{prefix}read_text_file", "path")
    # even offered, a write tool is never chosen for searching or reading
    everything = choose_server_tools(_by_name([*BUILTINS, *_filesystem(denied=False)]))
    assert everything.read == ("mcp__filesystem__read_text_file", "path")


def test_server_names_follow_the_transport() -> None:
    assert server_tool_names(_by_name(BUILTINS)) == []
    assert server_tool_names(_by_name(list(DEFINITIONS))) == []
    http = server_tool_names(_by_name([*DEFINITIONS, *_filesystem("")]))
    assert "repo_read" not in http and "read_text_file" in http


def _structured(text: str) -> str:
    """How the CLI hands server-filesystem's answers over: its ``structuredContent`` as JSON text."""
    return json.dumps({"content": text})


def test_a_filesystem_conversation_globs_then_reads_until_the_term_and_cites_the_line() -> None:
    tools = [*BUILTINS, *_filesystem()]
    messages, call = _answer_call(_first(tools), tools, _structured("No matches found"))
    assert (call["name"], call["input"]) == ("mcp__filesystem__search_files",
                                             {"path": ".", "pattern": "**/*retention*"})
    listing = "\n".join([f"{ROOT}/docs", f"{ROOT}/README.md", f"{ROOT}/docs/ops.md"])
    messages, call = _answer_call(messages, tools, _structured(listing))
    assert (call["name"], call["input"]) == ("mcp__filesystem__search_files", {"path": ".", "pattern": "**/*"})
    messages, call = _answer_call(messages, tools, "Error: EISDIR: illegal operation on a directory", True)
    assert (call["name"], call["input"]) == ("mcp__filesystem__read_text_file", {"path": f"{ROOT}/docs"})
    messages, call = _answer_call(messages, tools, "# Demo\nNothing here.\n")
    assert call["input"] == {"path": f"{ROOT}/README.md"}
    messages, call = _answer_call(messages, tools, _structured("# Ops\n\nThe retention window is 30 days.\n"))
    assert call["input"] == {"path": f"{ROOT}/docs/ops.md"}
    answer, explored = _finish(messages, tools)
    assert set(explored) == {t["name"] for t in _filesystem()} - {  # every other allowed tool, once
        "mcp__filesystem__search_files", "mcp__filesystem__read_text_file"}
    assert len(explored) == len(set(explored))
    expected = f"Based on the repository, The retention window is 30 days. ({ROOT}/docs/ops.md:3)."
    assert answer.content[0]["text"] == expected


def _finish(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[Any, list[str]]:
    """Answer every further tool call with a plain text until the policy answers; the answer and the tools tried."""
    tried: list[str] = []
    while (reply := _reply(messages, tools)).stop_reason == "tool_use":
        tried.append(reply.content[-1]["name"])
        messages, _ = _answer_call(messages, tools, "ok")
    return reply, tried


def test_a_term_naming_a_file_is_read_straight_away_and_the_reply_is_deterministic() -> None:
    tools = [*BUILTINS, *_filesystem()]
    first = _first(tools)
    assert _reply(first, tools) == _reply(json.loads(json.dumps(first)), tools)
    messages, _ = _answer_call(first, tools, f"{ROOT}/docs/retention.md")
    _, call = _answer_call(messages, tools, "x")
    assert (call["name"], call["input"]) == ("mcp__filesystem__read_text_file", {"path": f"{ROOT}/docs/retention.md"})


def test_a_query_server_over_http_falls_back_to_the_repository_search_when_empty() -> None:
    server = [
        {"name": "lookup", "description": "Full-text search.", "input_schema": {
            "type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["q"]}},
        {"name": "fetch_page", "description": "Fetch a page's text.", "input_schema": {
            "type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}},
    ]
    tools = [*DEFINITIONS, *server]
    messages, call = _answer_call([{"role": "user", "content": PROMPT}], tools, json.dumps("no results"))
    assert (call["name"], call["input"]) == ("lookup", {"q": "retention"})
    for word in ("window", "configured"):  # the question's next content words, then the repository search
        messages, call = _answer_call(messages, tools, json.dumps("no results"))
        assert (call["name"], call["input"]) == ("lookup", {"q": word})
    messages, call = _answer_call(messages, tools, json.dumps({"matches": ["docs/ops.md:3: The retention window"]}))
    assert (call["name"], call["input"]) == ("repo_search", {"term": "retention"})
    _, call = _answer_call(messages, tools, "x")
    assert (call["name"], call["input"]) == ("fetch_page", {"uri": "docs/ops.md"})


def test_the_control_arm_keeps_the_built_in_tools() -> None:
    call = _reply(_first(BUILTINS), BUILTINS).content[-1]
    assert call["name"] == "Grep" and call["input"]["pattern"] == "retention"
    call = _reply([{"role": "user", "content": PROMPT}], list(DEFINITIONS)).content[-1]
    assert (call["name"], call["input"]) == ("repo_search", {"term": "retention"})


def test_an_unfillable_search_tool_is_not_chosen() -> None:
    server = [{"name": "mcp__s__find", "description": "", "input_schema": {
        "type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query", "limit"]}}]
    assert choose_server_tools(_by_name(server)).search is None
    assert _reply(_first([*BUILTINS, *server]), [*BUILTINS, *server]).content[-1]["name"] == "Grep"


def test_a_grep_tool_whose_required_paths_take_a_string_or_a_list_is_chosen_with_the_working_directory() -> None:
    # the shape of mcp-grep 0.2.1's grep tool: pattern plus paths (a string or a list of strings)
    server = [{"name": "mcp__g__grep", "description": "Search for pattern in files using system grep.",
               "input_schema": {"type": "object", "properties": {
                   "pattern": {"type": "string"},
                   "paths": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
                   "recursive": {"type": "boolean", "default": False}},
                   "required": ["pattern", "paths"]}}]
    chosen = choose_server_tools(_by_name(server)).search
    assert chosen is not None and chosen.name == "mcp__g__grep"
    assert chosen.arguments("retention") == {"pattern": "retention", "paths": "."}


def test_hits_without_the_term_lead_to_one_look_at_every_file() -> None:
    tools = [*BUILTINS, *_filesystem()]
    messages, _ = _answer_call(_first(tools), tools, _structured(f"{ROOT}/src/retention"))
    messages, call = _answer_call(messages, tools, "Error: EISDIR: illegal operation on a directory", True)
    assert call["input"] == {"path": f"{ROOT}/src/retention"}
    messages, call = _answer_call(messages, tools, _structured(f"{ROOT}/README.md"))
    assert (call["name"], call["input"]) == ("mcp__filesystem__search_files", {"path": ".", "pattern": "**/*"})
    messages, call = _answer_call(messages, tools, _structured("Nothing.\nKeep retention short.\n"))
    assert call["input"] == {"path": f"{ROOT}/README.md"}
    answer = _finish(messages, tools)[0].content[0]["text"]
    assert answer == f"Based on the repository, Keep retention short. ({ROOT}/README.md:2)."
