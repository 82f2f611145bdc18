"""The server's word is checked where it is used (issue 40 break 6): an http attempt lists the tools it is
offered and applies the preflight's own rule again, so a server that annotates a tool ``readOnlyHint: false``,
``destructiveHint: true`` or ``openWorldHint: true`` after the preflight gets no call; the attempt ends before
its first request, naming the change. Real parts: the official MCP SDK server in tests/data, a real git
repository, bubblewrap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentstudy.io.git import head
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.transports.http_tools import ToolSetupError, agent_tools

SERVER = str(Path(__file__).resolve().parent / "data" / "annotated_server.py")
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "notes"
    root.mkdir()
    (root / "README.md").write_text("# Notes\n", encoding="utf-8")
    subprocess.run([*GIT, "init", "-q", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-q", "-m", "c"], check=True)
    return root


def _spec(*tools: str) -> McpServerSpec:
    return McpServerSpec(name="notes", command=(sys.executable, "-I", SERVER), read_only_tools=tools,
                         probe_tool=tools[0], config_candidates=())


@pytest.mark.parametrize(("tool", "says"), [
    ("notes.edit", "readOnlyHint: false"),
    ("notes.purge", "destructiveHint: true"),
])
def test_a_tool_whose_annotations_changed_is_not_called(repo: Path, tool: str, says: str) -> None:
    spec = _spec("notes.find", tool)  # what the preflight accepted; the server now says otherwise of `tool`
    with ServerCorpora(spec, {"notes": (repo, head(repo))}) as corpora, pytest.raises(ToolSetupError) as raised:
        agent_tools(DOC_BRIDGE_MCP, repo, head(repo), spec, corpora.paths("notes"), "bwrap").__enter__()
    message = str(raised.value)
    assert "changed its word since the preflight" in message and tool in message and says in message


def test_an_unchanged_server_offers_its_read_only_tools(repo: Path) -> None:
    spec = _spec("notes.find")
    with ServerCorpora(spec, {"notes": (repo, head(repo))}) as corpora, agent_tools(
            DOC_BRIDGE_MCP, repo, head(repo), spec, corpora.paths("notes"), "bwrap") as tools:
        exposed = [name for name in tools.names if tools.mcp_name(name) == "notes.find"]
        assert len(exposed) == 1 and not tools.call(exposed[0], {"term": "x"}).is_error
