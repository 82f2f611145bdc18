"""The rehearsal agent uses an unknown server as a model would (issue 32 item 4): pure tests of the policy.

Content words instead of the first word, absolute paths where the schema or the server asks for them,
ids returned by an earlier call followed, search preferred to listing, and every allowed tool tried
once; the same conversation always gives the same reply.
"""

from __future__ import annotations

import json
from typing import Any

from agentstudy.rehearsal.conversation import ToolStep, tool_steps
from agentstudy.rehearsal.policy import next_reply
from agentstudy.rehearsal.reply_kit import search_terms
from agentstudy.rehearsal.responses_wire import messages_view
from agentstudy.rehearsal.server_moves import (
    content_words,
    fill_arguments,
    ids_in,
    needs_absolute,
    server_base,
    server_path,
)

CWD = "/tmp/agentstudy-export-abc"
PROMPT = "Alpha: where is the retention window configured?"
BUILTINS = [{"name": n, "description": n, "input_schema": {"type": "object", "properties": {
    "pattern": {"type": "string"}, "file_path": {"type": "string"}}}} for n in ("Grep", "Read", "Glob")]


def _tool(name: str, description: str, **props: str) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": {
        "type": "object", "properties": {k: {"type": t} for k, t in props.items()}, "required": list(props)}}


PLAIN = [  # like tests/data/plain_server.py: no annotations, absolute paths
    _tool("mcp__plain__read_directory", "List the entries of a directory. The path must be absolute.", path="string"),
    _tool("mcp__plain__search_text", "Search the text files under an absolute directory path for a query.",
          query="string", path="string"),
]
NOTES = [  # a search that answers ids, a read that takes one
    _tool("mcp__notes__search_notes", "Search the notes for a word; answers matching note ids.", query="string"),
    _tool("mcp__notes__get_note", "Get the text of a note by the note_id a search returned.", note_id="string"),
    _tool("mcp__notes__note_stats", "Counts of the notes.", verbose="boolean"),
]


def _first(prompt: str = PROMPT) -> list[dict[str, Any]]:
    reminder = f"<system-reminder>\nPrimary working directory: {CWD}\n</system-reminder>"
    return [{"role": "user", "content": [{"type": "text", "text": reminder}, {"type": "text", "text": prompt}]}]


def _step(messages: list[dict[str, Any]], tools: list[dict[str, Any]], result: str,
          is_error: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    reply = next_reply({"model": "m", "messages": messages, "tools": tools})
    assert reply.stop_reason == "tool_use", reply.content
    call: dict[str, Any] = reply.content[-1]
    return [*messages, {"role": "assistant", "content": reply.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                          "content": [{"type": "text", "text": result}], "is_error": is_error}]}], call


def _answer(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    reply = next_reply({"model": "m", "messages": messages, "tools": tools})
    assert reply.stop_reason == "end_turn", reply.content
    return str(reply.content[0]["text"])


def test_the_search_uses_the_questions_content_words_not_its_first_word_or_its_name() -> None:
    assert search_terms(PROMPT) == ["retention", "window", "configured"]
    assert search_terms("Which ports does the Gateway listen on?") == ["ports", "listen", "Gateway"]
    assert content_words("Alpha keeps alpha caches", frozenset(), exclude=["caches"]) == ["keeps"]
    assert search_terms("?!") == []


def test_paths_become_absolute_where_the_schema_or_the_server_says_so() -> None:
    search = PLAIN[1]
    assert needs_absolute(search, "path", [], ["x"])
    plain = _tool("s", "Search files.", path="string")
    assert not needs_absolute(plain, "path", [], ["s"])
    refused = ToolStep("s", {"path": "."}, "Access denied - path outside allowed directories: /x not in /srv/snap",
                       True)
    assert needs_absolute(plain, "path", [refused], ["s"])
    assert server_base([refused], ["s"], CWD) == "/srv/snap"  # the directory the server named wins
    assert server_base([], ["s"], CWD) == CWD
    listed = ToolStep("list_allowed_directories", {}, "Allowed directories:\n/srv/other", False)
    assert server_base([listed], ["list_allowed_directories"], None) == "/srv/other"
    assert server_path("docs/a.md", True, "/srv/snap") == "/srv/snap/docs/a.md"
    assert server_path(".", True, "/srv/snap") == "/srv/snap"
    assert server_path("docs/a.md", False, "/srv/snap") == "docs/a.md"


def test_an_absolute_path_server_is_searched_under_the_working_directory_and_cited_from_its_lines() -> None:
    tools = PLAIN  # no read tool: the listing is none, whatever its name
    messages, call = _step(_first(), tools, "docs/retention.md:3: The retention window is 30 days.")
    assert (call["name"], call["input"]) == ("mcp__plain__search_text", {"query": "retention", "path": CWD})
    messages, call = _step(messages, tools, "README.md\ndocs")  # tried once, after the answer is found
    assert (call["name"], call["input"]) == ("mcp__plain__read_directory", {"path": CWD})
    assert _answer(messages, tools) == ("Based on the repository, The retention window is 30 days. "
                                        "(docs/retention.md:3).")


def test_a_refusal_naming_the_servers_directory_is_followed_by_a_search_there() -> None:
    tools = [*BUILTINS, _tool("mcp__fs__grep", "Search for a query.", query="string", path="string"),
             _tool("mcp__fs__read_text_file", "Read a file's text.", path="string")]
    messages, call = _step(_first(), tools, "Access denied - path outside allowed directories: . not in /srv/snap",
                           True)
    assert call["input"] == {"query": "retention", "path": "."}
    messages, call = _step(messages, tools, "/srv/snap/docs/retention.md")
    assert (call["name"], call["input"]) == ("mcp__fs__grep", {"query": "retention", "path": "/srv/snap"})
    messages, call = _step(messages, tools, "1\t# R\n2\tThe retention window is 30 days.")
    assert (call["name"], call["input"]) == ("mcp__fs__read_text_file", {"path": "/srv/snap/docs/retention.md"})
    assert _answer(messages, tools).endswith("(docs/retention.md:2).")  # cited without the server's directory


def test_ids_returned_by_a_search_are_followed_and_every_other_tool_is_tried_once() -> None:
    tools = [*BUILTINS, *NOTES]
    hits = json.dumps({"hits": [{"note_id": "n3", "title": "docs/retention.md"}, {"note_id": "n5", "title": "x"}]})
    assert ids_in(hits, "note_id") == [("n3", "docs/retention.md"), ("n5", "x")]
    assert ids_in("note_id: n7, note_id=n8", "note_id") == [("n7", None), ("n8", None)]
    messages, call = _step(_first(), tools, hits)
    assert (call["name"], call["input"]) == ("mcp__notes__search_notes", {"query": "retention"})
    messages, call = _step(messages, tools, "# R\n\nThe retention window is 30 days.")
    assert (call["name"], call["input"]) == ("mcp__notes__get_note", {"note_id": "n3"})
    messages, call = _step(messages, tools, "12 notes")
    assert (call["name"], call["input"]) == ("mcp__notes__note_stats", {"verbose": False})
    answer = _answer(messages, tools)
    assert answer == "Based on the repository, The retention window is 30 days. (docs/retention.md:3)."
    body = {"model": "m", "messages": messages, "tools": tools}
    assert next_reply(body) == next_reply(json.loads(json.dumps(body)))  # deterministic


def test_a_tool_whose_id_no_call_returned_is_skipped() -> None:
    tool = NOTES[1]
    assert fill_arguments(tool, term="t", found=None, steps=[], server=["mcp__notes__get_note"], cwd=CWD) is None
    many = _tool("m", "Read several files.", paths="array")
    many["input_schema"]["properties"]["paths"]["items"] = {"type": "string"}
    assert fill_arguments(many, term="t", found="docs/a.md", steps=[], server=["m"], cwd=CWD) == {
        "paths": ["docs/a.md"]}


def test_codex_names_its_working_directory_and_its_mcp_header_is_dropped() -> None:
    namespace = {"type": "namespace", "name": "mcp__notes", "tools": [
        {"type": "function", "name": "search_notes", "parameters": NOTES[0]["input_schema"]}]}
    body = {"model": "m", "tools": [namespace], "input": [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/x/repo</cwd>\n</environment_context>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPT}]},
        {"type": "function_call", "name": "search_notes", "namespace": "mcp__notes", "call_id": "c1",
         "arguments": json.dumps({"query": "retention"})},
        {"type": "function_call_output", "call_id": "c1", "output": [
            {"type": "input_text", "text": "Wall time: 0.0053 seconds\nOutput:"},
            {"type": "input_text", "text": "found it"}, {"type": "input_text", "text": '{"content": "found it"}'}]}]}
    view = messages_view(body)
    assert view["workingDirectory"] == "/x/repo"
    assert view["messages"][-1]["content"][0]["content"] == "found it"
    body["input"][-1]["output"] = 'Wall time: 0.0029 seconds\nOutput:\n{"content":"# Alpha\\nkeeps pages"}'
    assert messages_view(body)["messages"][-1]["content"][0]["content"] == '{"content":"# Alpha\\nkeeps pages"}'
    [step] = tool_steps(messages_view(body)["messages"])  # the structured content read as the server's text
    assert (step.name, step.result) == ("mcp__notes__search_notes", "# Alpha\nkeeps pages")


def test_a_search_that_needs_an_id_waits_for_the_call_that_returns_it() -> None:
    tools = [*BUILTINS,
             _tool("mcp__code__list_projects", "List the indexed projects."),
             _tool("mcp__code__search_code", "Search a project's code.", query="string", project_id="string"),
             _tool("mcp__code__get_file", "Read a file's content.", path="string")]
    messages, call = _step(_first(), tools, json.dumps([{"id": "p1", "name": "alpha"}]))
    assert (call["name"], call["input"]) == ("mcp__code__list_projects", {})
    messages, call = _step(messages, tools, "docs/retention.md:3: The retention window is 30 days.")
    assert (call["name"], call["input"]) == ("mcp__code__search_code", {"query": "retention", "project_id": "p1"})
    messages, call = _step(messages, tools, "1\t# R\n2\t\n3\tThe retention window is 30 days.")
    assert (call["name"], call["input"]) == ("mcp__code__get_file", {"path": "docs/retention.md"})
    assert _answer(messages, tools).endswith("(docs/retention.md:3).")
