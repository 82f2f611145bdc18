"""The server's word checked per attempt on the cli transports (issue 40, break 6): every byte the MCP server
sends a Claude Code, Codex or Gemini CLI attempt passes our relay (``io.server_host``), which holds each
``tools/list`` answer to the preflight's own rule (``protocol.read_only.read_only_evidence``). A tool now
annotated ``readOnlyHint: false`` or ``destructiveHint: true`` is never offered: the answer is withheld, the
server ended, and the change named for the attempt's ``invalid-setup`` (``transports.cli``).

Real parts: the official MCP SDK server of tests/data (bubblewrapped in its own world, as every attempt's),
the relay command the agent is given, run as a subprocess, and an SDK client session over it; a real git
repository. The pure watcher is checked on the exact bytes too.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from agentstudy.agents.registry import agent_cli
from agentstudy.io.mcp_child import McpChild
from agentstudy.io.mcp_session import McpSession
from agentstudy.io.server_corpus import ServerCorpora, at_corpus
from agentstudy.io.server_host import attempt_server
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.server_word import CHANGED_WORD, WordWatch
from agentstudy.stream.outcome import ProcessFacts
from agentstudy.transports.cli import CliAttemptBody, CliSettings, RawAttempt, finish_cli_attempt
from agentstudy.transports.cli_args import arm_tools

from corpus_git import committed_repo

SERVER = str(Path(__file__).resolve().parent / "data" / "annotated_server.py")


def _spec(*tools: str) -> McpServerSpec:
    return McpServerSpec(name="notes", command=(sys.executable, "-I", SERVER), read_only_tools=tools,
                         probe_tool=tools[0], config_candidates=())


def _listed(tmp_path: Path, spec: McpServerSpec) -> tuple[list[str] | Exception, str | None]:
    """List the tools through the relay an agent is given; what the client got and the host's noted change."""
    checkout = tmp_path / "checkout"
    pin = committed_repo(checkout, {"README.md": "notes\n"})
    export, scratch, client_home = tmp_path / "export", tmp_path / "scratch", tmp_path / "client"
    for directory in (export, scratch, client_home):
        directory.mkdir()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(client_home)}
    with ServerCorpora(spec, {"corpus": (checkout, pin)}) as corpora:
        paths = at_corpus(corpora.paths("corpus"), export)
        with attempt_server(spec, paths, "bwrap", env, scratch) as host:
            argv = host.launcher().argv
            child = McpChild(env=env, home=client_home, tmpdir=client_home, stderr_path=tmp_path / "relay.err")
            got: list[str] | Exception
            try:
                with McpSession(argv[0], argv[1:], child) as session:
                    got = [tool.name for tool in session.list_tools()]
            except Exception as error:  # the withheld answer: the client sees its server gone
                got = error
        return got, host.changed


@pytest.mark.parametrize(("tool", "says"), [
    ("notes.edit", "readOnlyHint: false"),
    ("notes.purge", "destructiveHint: true"),
])
def test_a_changed_tool_is_never_offered_through_the_relay(tmp_path: Path, tool: str, says: str) -> None:
    got, changed = _listed(tmp_path, _spec("notes.find", tool))  # the preflight's word; the server now says otherwise
    assert not isinstance(got, list), f"the changed tools reached the agent: {got}"
    assert changed is not None and changed.startswith(CHANGED_WORD) and tool in changed and says in changed


def test_an_unchanged_server_lists_through_the_relay(tmp_path: Path) -> None:
    got, changed = _listed(tmp_path, _spec("notes.find"))
    assert isinstance(got, list) and "notes.find" in got, got
    assert changed is None


def test_the_watch_withholds_the_changed_answer_and_passes_the_rest() -> None:
    hello = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"capabilities": {}}}).encode() + b"\n"
    listed = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "notes.find", "annotations": {"readOnlyHint": True}},
        {"name": "notes.web", "annotations": {"openWorldHint": True}}]}}).encode() + b"\n"
    watch = WordWatch(("notes.find", "notes.web"), ())
    assert watch.feed(hello[:5]) == b"" and watch.feed(hello[5:] + listed[:7]) == hello
    assert watch.feed(listed[7:]) == b"" and watch.flush() == b""
    assert watch.changed is not None and "notes.web" in watch.changed and "openWorldHint: true" in watch.changed
    let_through = WordWatch(("notes.find", "notes.web"), ("notes.web",))
    assert let_through.feed(hello + listed) == hello + listed and let_through.changed is None


def test_a_changed_word_ends_the_attempt_invalid_setup_under_isolation_not_achieved(tmp_path: Path) -> None:
    spec = _spec("notes.find", "notes.edit")
    settings = CliSettings(binary=tmp_path / "claude", model="claude-haiku-4-5", mcp=spec)
    body = CliAttemptBody(settings, DOC_BRIDGE_MCP, arm_tools(DOC_BRIDGE_MCP, spec, ()), "Where?", Decimal("0.10"),
                          None, {}, agent=agent_cli(settings.agent))
    change = f"{CHANGED_WORD}: --mcp-tools names notes.edit, which the server annotates readOnlyHint: false"
    facts = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)
    result = finish_cli_attempt(body, RawAttempt(b"", facts, 10, 1, 1, "0" * 64, server_changed=change))
    assert (result.status, result.status_reason) == ("invalid-setup", change)
    assert change in result.setup_problems and change in result.fields["isolation_not_achieved"]
    unchanged = finish_cli_attempt(body, RawAttempt(b"", facts, 10, 1, 1, "0" * 64))
    assert unchanged.status_reason != change and change not in unchanged.fields["isolation_not_achieved"]
