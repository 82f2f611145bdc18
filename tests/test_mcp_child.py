"""The MCP server child, through the real SDK: annotations in the probe, an allowlisted private
environment (``io.mcp_child``), a vetted listing before the probe call, the server's stderr on failure."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agentstudy.io.environment import PASSED_THROUGH
from agentstudy.io.mcp_child import mcp_child, server_text, stderr_tail
from agentstudy.io.mcp_client import McpListing, McpProbeError, probe_mcp_server
from agentstudy.io.mcp_session import McpSession
from agentstudy.protocol.read_only import ToolHints

SERVER = str(Path(__file__).resolve().parent / "data" / "annotated_server.py")


def test_the_probe_returns_every_tools_annotations_and_calls_the_probe(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    with mcp_child({"NOTES_LOG": str(log)}) as child:
        probe = probe_mcp_server(sys.executable, [SERVER], child, "notes.find", {"term": "x"})
    assert probe.probe_ok
    assert sorted(probe.tools) == ["notes.edit", "notes.environment", "notes.find", "notes.purge", "notes.raw"]
    assert probe.hints == {
        "notes.find": ToolHints(read_only=True, destructive=False),
        "notes.environment": ToolHints(read_only=True, destructive=False),
        "notes.purge": ToolHints(read_only=True, destructive=True),
        "notes.edit": ToolHints(read_only=False, destructive=None),
        "notes.raw": ToolHints(read_only=None, destructive=None),
    }
    assert log.read_text(encoding="utf-8") == "notes.find\n"


def test_a_refusing_check_is_re_raised_and_the_probe_is_never_called(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    seen: list[McpListing] = []

    class Refused(Exception):
        pass

    def check(listing: McpListing) -> None:
        seen.append(listing)
        raise Refused("no")

    with pytest.raises(Refused), mcp_child({"NOTES_LOG": str(log)}) as child:
        probe_mcp_server(sys.executable, [SERVER], child, "notes.purge", {}, check=check)
    [listing] = seen
    assert listing.hints["notes.purge"] == ToolHints(read_only=True, destructive=True)
    assert not log.exists()


def test_a_failed_probe_quotes_the_servers_stderr_tail_on_one_line() -> None:
    noise = "x" * 5000 + "\x1b[31mfatal:\r\n  bad config\x07 file\n"
    with pytest.raises(McpProbeError) as caught, mcp_child() as child:
        probe_mcp_server(sys.executable, [SERVER, "--fail-with", noise], child, "notes.find", {"term": "x"})
    message = str(caught.value)
    assert message.startswith(f"MCP server {sys.executable} could not be probed: ")
    assert message.endswith("(server stderr: [31mfatal: bad config file)"), "the cut word is dropped"
    assert "\x1b" not in message and "\x07" not in message and "\r" not in message
    assert "xx" not in message and "Group" not in message, "the cut word is dropped; the real error is named"


def test_stderr_tail_is_bounded_and_empty_for_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "err"
    path.write_bytes(b"a" * 100 + b"\tlast\x07 words\n")
    assert stderr_tail(path, limit=12) == "last words", "a cut at white space keeps the first word"
    assert stderr_tail(path, limit=11) == "words", "the word cut by the bound is dropped"
    assert stderr_tail(path) == "a" * 100 + " last words"
    assert stderr_tail(tmp_path / "missing") == ""


def test_the_session_child_sees_only_the_allowlist_a_private_home_and_its_configured_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-parent-secret")
    monkeypatch.setenv("SHELL", "/bin/zsh-of-the-user")
    monkeypatch.setenv("AGENTSTUDY_LEAK_PROBE", "leaked")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    configured = {"NOTES_FLAVOUR": "plain", "ANTHROPIC_API_KEY": "sk-ant-configured"}
    with mcp_child(configured) as child, McpSession(sys.executable, [SERVER], child) as session:
        env = json.loads(session.call_tool("notes.environment", {}).text)
        home, tmpdir = Path(env["HOME"]), Path(env["TMPDIR"])
        assert home.is_dir() and tmpdir.is_dir()
    copied = {name for name in PASSED_THROUGH if name in os.environ}
    assert set(env) == copied | {"PATH", "LANG", "HOME", "TMPDIR", "SHELL", "NOTES_FLAVOUR"}
    assert env["SHELL"] == "/bin/sh" and env["NOTES_FLAVOUR"] == "plain"
    assert home != Path(os.environ.get("HOME", "/nonexistent")) and home.parent == tmpdir.parent
    assert not home.exists() and not tmpdir.exists(), "the private directories are removed with the session"
    assert list(tmp_path.iterdir()) == [], "nothing is left in the parent's TMPDIR"


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        ("bad key hunter2-long in request", "bad key [redacted] in request"),
        ("token=abc123 api_key: 'k-9' password = pw Bearer eyJhbGci", "token=[redacted] api_key: '[redacted]' "
         "password = [redacted] Bearer [redacted]"),
        ("the token is missing; secret files stay", "the token is missing; secret files stay"),
        ("flag on\r\n\tnext\x1b[0m", "flag on next [0m"),
    ],
)
def test_server_text_redacts_secrets_and_assignments_and_keeps_prose(said: str, shown: str) -> None:
    assert server_text(said, ("hunter2-long", "on")) == shown, "a 2-character value is no secret"


def test_server_text_is_bounded_at_a_character_boundary() -> None:
    shown = server_text("é" * 3000, limit=101)
    assert shown.endswith("…") and len(shown.encode()) <= 101 and "\ufffd" not in shown
    assert server_text("short", limit=101) == "short"


def test_the_child_knows_its_configured_values_and_our_keys_as_secrets() -> None:
    parent = {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "sk-ant-test-0000", "OPENAI_API_KEY": "sk-oa-test-1111"}
    with mcp_child({"SERVER_TOKEN": "tok-2222"}, parent) as child:
        assert set(child.secrets) == {"tok-2222", "sk-ant-test-0000", "sk-oa-test-1111"}
        assert "ANTHROPIC_API_KEY" not in child.env
