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
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
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


def test_a_control_arms_own_server_is_held_to_its_own_word(repo: Path) -> None:
    """Issue 44: in a comparison the control arm (``repository-only``) runs a server of its own; its http attempt
    checks that server's listing against that server's own read-only tools, never the treatment's."""
    control = _spec("notes.find", "notes.edit")  # the control's preflight word; the server now says otherwise
    with ServerCorpora(control, {"notes": (repo, head(repo))}) as corpora, pytest.raises(ToolSetupError) as raised:
        agent_tools(REPOSITORY_ONLY, repo, head(repo), control, corpora.paths("notes"), "bwrap",
                    served=True).__enter__()
    assert "changed its word since the preflight" in str(raised.value) and "notes.edit" in str(raised.value)
    held = _spec("notes.find")  # its own word unchanged: offered, although the treatment lists other tools
    with ServerCorpora(held, {"notes": (repo, head(repo))}) as corpora, agent_tools(
            REPOSITORY_ONLY, repo, head(repo), held, corpora.paths("notes"), "bwrap", served=True) as tools:
        exposed = [name for name in tools.names if tools.mcp_name(name) == "notes.find"]
        assert len(exposed) == 1 and not tools.call(exposed[0], {"term": "x"}).is_error
