"""Which argument of a real server's tool takes a glob, read from that argument's own words (issue 32).

Pure, over the tools/list that code-index-mcp 2.17.1 and server-filesystem 2026.8.31 really answer
(captured with the official MCP SDK into tests/data). code-index-mcp's ``search_code_advanced`` greps
for ``pattern`` and speaks of a glob only for its ``file_pattern``; its ``find_files`` matches file
names by glob ``pattern``; server-filesystem's ``search_files`` takes glob-style patterns. ``init``'s
proposed probe and the rehearsal agent's search must send a corpus word to the first, ``**/*`` to the
others; the rehearsal prefers the text search and can cite its JSON hits (``file``, ``line``, ``text``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.tool_proposal import propose_probe, tool_roles
from agentstudy.protocol.tool_roles import BROAD_GLOB, choose_server_tools, takes_glob
from agentstudy.rehearsal.server_moves import line_hits

DATA = Path(__file__).parent / "data"


def _tools(name: str) -> dict[str, dict[str, Any]]:
    listed = json.loads((DATA / name).read_text(encoding="utf-8"))
    return {t["name"]: t for t in listed}


CODE_INDEX = _tools("code-index-mcp-2.17.1-tools.json")
FILESYSTEM = _tools("server-filesystem-2026.8.31-tools.json")


@pytest.mark.parametrize(("tools", "name", "key", "glob"), [
    (CODE_INDEX, "search_code_advanced", "pattern", False),  # "Supports glob file_pattern": another argument
    (CODE_INDEX, "search_code_advanced", "file_pattern", True),
    (CODE_INDEX, "find_files", "pattern", True),  # "Find files matching glob pattern"
    (FILESYSTEM, "search_files", "pattern", True),  # "The patterns should be glob-style patterns"
])
def test_an_argument_takes_a_glob_only_when_its_own_words_say_so(
    tools: dict[str, dict[str, Any]], name: str, key: str, glob: bool
) -> None:
    tool = tools[name]
    assert takes_glob(key, tool["input_schema"]["properties"], tool["description"]) is glob


def test_a_glob_in_the_arguments_own_schema_counts() -> None:
    properties = {"query": {"type": "string", "description": "A glob such as *.md"}, "limit": {"type": "integer"}}
    assert takes_glob("query", properties, "Find things.")
    # a sentence naming only another argument says nothing about this one; one naming none speaks of all
    assert not takes_glob("query", properties | {"query": {"type": "string"}}, "Find things. The limit is a glob.")
    assert takes_glob("query", {"query": {"type": "string"}}, "Find files by glob.")


def test_inits_probe_for_code_index_searches_a_corpus_word() -> None:
    listed = [(t["name"], t["description"], t["input_schema"], ToolHints()) for t in CODE_INDEX.values()]
    roles = tool_roles(listed, declared=["search_code_advanced", "find_files"])
    described = {t["name"]: (t["description"], t["input_schema"]) for t in CODE_INDEX.values()}
    assert propose_probe(roles, described, "reserve") == ("search_code_advanced", {"pattern": "reserve"})
    only_find = tool_roles(listed, declared=["find_files"])
    assert propose_probe(only_find, described, "reserve") == ("find_files", {"pattern": BROAD_GLOB})


def test_the_rehearsal_greps_code_index_with_the_term_and_globs_file_names() -> None:
    search = choose_server_tools(CODE_INDEX, ["search_code_advanced"]).search
    assert search is not None and search.arguments("reserve_budget") == {"pattern": "reserve_budget"}
    find = choose_server_tools(CODE_INDEX, ["find_files"]).search
    assert find is not None and find.arguments("reserve_budget") == {"pattern": "**/*reserve_budget*"}


def test_the_rehearsal_prefers_a_text_search_to_a_file_name_glob() -> None:
    chosen = choose_server_tools(CODE_INDEX, ["find_files", "search_code_advanced"])  # Codex's request order
    assert chosen.search is not None and chosen.search.name == "search_code_advanced"


def test_a_json_search_answer_gives_path_line_hits() -> None:
    """search_code_advanced's answer as the server gave it in a rehearsal: cited without a read."""
    answer = json.dumps({"results": [{"file": "./README.md", "line": 3, "text": "The app prints a greeting."}],
                         "pagination": {"total_matches": 1, "returned": 1, "start_index": 0, "has_more": False}},
                        indent=2)
    assert line_hits(answer) == [("./README.md", "3", "The app prints a greeting.")]
    assert line_hits("src/a.py:12: def main():\nno hit here") == [("src/a.py", "12", "def main():")]
    assert line_hits('{"status": "error", "line": 3}') == []
