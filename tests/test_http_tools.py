"""Repository tools over frozen git blobs and the live MCP session used by the Messages API agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentstudy.io.export import export_corpus, remove_export
from agentstudy.io.git import head
from agentstudy.io.mcp_child import mcp_child
from agentstudy.io.mcp_session import McpSession
from agentstudy.transports.repo_tools import DEFINITIONS, TOOL_ERROR, RepositoryTools

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\nThe answer is 42.\nSecond mention of answer.\n", encoding="utf-8")
    (root / "docs" / "guide.md").write_text("\n".join(f"line {n}" for n in range(1, 151)) + "\n", encoding="utf-8")
    (root / ".env").write_text("TOKEN=hidden answer\n", encoding="utf-8")
    (root / "package-lock.json").write_text('{"answer": 1}\n', encoding="utf-8")
    subprocess.run([*GIT, "init", "-q", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-q", "-m", "c"], check=True)
    (root / "README.md").write_text("# Edited in the working tree\n", encoding="utf-8")
    return root, head(root)


def test_definitions_are_plain_messages_api_tools() -> None:
    assert [d["name"] for d in DEFINITIONS] == ["repo_list", "repo_read", "repo_search"]
    assert all(set(d) == {"name", "description", "input_schema"} for d in DEFINITIONS)


def test_list_read_search_use_the_pinned_blobs_and_the_export_filter(repo: tuple[Path, str]) -> None:
    tools = RepositoryTools(*repo)
    listed = json.loads(tools.call("repo_list", {}).content)
    assert listed == ["README.md", "docs/guide.md"]
    assert json.loads(tools.call("repo_list", {"term": "guide"}).content) == ["docs/guide.md"]
    read = json.loads(tools.call("repo_read", {"path": "README.md"}).content)
    assert read.splitlines()[1] == "2: The answer is 42."
    window = json.loads(tools.call("repo_read", {"path": "docs/guide.md", "start": 120, "lines": 3}).content)
    assert window == "120: line 120\n121: line 121\n122: line 122"
    search = json.loads(tools.call("repo_search", {"term": "answer"}).content)
    assert search == {
        "matches": ["README.md:2: The answer is 42.", "README.md:3: Second mention of answer."],
        "limitedToFirstFiles": 500,
    }


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("repo_read", {"path": ".env"}),
        ("repo_read", {"path": "../README.md"}),
        ("repo_read", {"path": "package-lock.json"}),
        ("repo_read", {"path": "README.md", "lines": 101}),
        ("repo_read", {"path": "README.md", "start": 0}),
        ("repo_read", {"path": "README.md", "start": 99}),
        ("repo_read", {"path": "README.md", "extra": 1}),
        ("repo_search", {"term": ""}),
        ("repo_search", {"term": "x" * 201}),
        ("repo_list", {"term": 5}),
        ("rm_rf", {}),
        ("repo_list", "not an object"),
    ],
)
def test_bad_calls_get_one_fixed_error(repo: tuple[Path, str], name: str, arguments: object) -> None:
    result = RepositoryTools(*repo).call(name, arguments)
    assert result.is_error and result.content == TOOL_ERROR


def test_search_stops_at_30_matches_and_at_its_deadline(repo: tuple[Path, str]) -> None:
    tools = RepositoryTools(*repo)
    many = json.loads(tools.call("repo_search", {"term": "line"}).content)
    assert len(many["matches"]) == 30
    moments = iter([0.0, 31.0, 62.0, 93.0])
    slow = RepositoryTools(*repo, clock=lambda: next(moments))
    assert slow.call("repo_search", {"term": "line"}).is_error


def test_mcp_session_lists_and_calls_the_real_server(tmp_path: Path) -> None:
    from agentstudy.rehearsal.example_study import build_example_study

    study = build_example_study(tmp_path / "study")
    root = next(iter(study.roots.values()))
    snapshot = export_corpus(root, head(root))
    args = ["-I", "-m", "agentstudy.rehearsal.mcp_server", "--root", str(snapshot), "--pin", head(root)]
    try:
        with mcp_child() as child, McpSession(sys.executable, args, child, snapshot) as session:
            names = sorted(t.name for t in session.list_tools())
            assert names == ["doc.get", "doc.search", "doc.write", "handoff.resolve"]
            found = session.call_tool("doc.search", {"query": "sweeper"})
            assert not found.is_error and "sweeper" in found.text
            refused = session.call_tool("doc.write", {"path": "README.md", "text": "x"})
            assert refused.is_error
    finally:
        remove_export(snapshot)
