"""What a server's stderr says about why it could not serve, in words (issue 39 items 5 and 7): pure checks."""

from __future__ import annotations

import pytest

from agentstudy.protocol.server_words import last_line, server_cause, server_failure_words, with_cause

NODE_PROC = ("node:internal/process/per_thread:1\nError: ENOENT: no such file or directory, uv_resident_set_memory\n"
             "    at process.memoryUsage (node:internal)\n  code: 'ENOENT'\n\nNode.js v20.20.2\n")


@pytest.mark.parametrize(("said", "words"), [
    (NODE_PROC, "the server needs /proc"),
    ("open /proc/self/statm: no such file or directory", "the server needs /proc"),
    ("Error: ENOENT: no such file or directory, uv_cwd", "the server reads its working directory"),
    ("FileNotFoundError: getcwd failed", "the server reads its working directory"),
    ("Error executing tool search_files: Directory not found: /tmp/agentstudy-export-x",
     "the server's tools take absolute paths"),
    ("path must be absolute: docs", "the server's tools take absolute paths"),
])
def test_a_known_cause_is_said_in_words(said: str, words: str) -> None:
    cause = server_cause(said)
    assert cause is not None and cause.startswith(words)
    assert with_cause("probe failed", said) == f"probe failed; {cause}"


def test_an_unknown_cause_adds_nothing() -> None:
    assert server_cause("fatal: the index database is missing") is None
    assert with_cause("probe failed", "fatal: the index database is missing") == "probe failed"


def test_the_last_non_blank_line_is_quoted_with_the_cause() -> None:
    assert last_line(NODE_PROC) == "Node.js v20.20.2"
    words = server_failure_words(NODE_PROC)
    assert words is not None
    assert words.startswith("the MCP server's stderr ends: Node.js v20.20.2; the server needs /proc")
    assert server_failure_words("\n  \n") is None
    assert len(last_line("x" * 5000)) == 300
