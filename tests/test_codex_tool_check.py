"""Codex's own check of the treatment arm's tool set (``--dry-run --probe --agent codex``): the pure gate rule,
and the pinned binary reading the generated configuration back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentstudy.io.agent_binary import AgentBinaryError
from agentstudy.transports.codex_args import CodexMcpServer, config_toml
from agentstudy.transports.codex_tool_check import check_codex_tool_set, codex_denials, enabled_by_codex

CODEX = Path(__file__).resolve().parents[1] / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
SERVER = CodexMcpServer("notes", ("python3", "srv.py"), {}, ("search_notes", "doc.get"))
UNANNOTATED = {"search_notes": {}, "doc.get": {"readOnlyHint": False}}


def test_every_enabled_tool_is_approved_in_its_own_table_so_codex_denies_none() -> None:
    text = config_toml(model="m", provider=None, mcp=SERVER)
    assert 'approval_mode = "approve"' in text
    assert codex_denials(text, "notes", UNANNOTATED) == []


def test_without_the_table_codex_would_cancel_every_unannotated_tool() -> None:
    bare = '[mcp_servers.notes]\ncommand = "x"\nenabled_tools = ["search_notes", "doc.get"]\n'
    denied = codex_denials(bare, "notes", UNANNOTATED)
    assert [d.split(":")[0] for d in denied] == ["search_notes", "doc.get"]
    assert "approval policy never" in denied[0]
    assert codex_denials(bare, "notes", {"search_notes": {"readOnlyHint": True}, "doc.get": {"readOnlyHint": True}}) \
        == []  # annotated read-only: the gate lets them through
    approved = bare + 'default_tools_approval_mode = "approve"\n'
    assert codex_denials(approved, "notes", UNANNOTATED) == []


def test_codex_mcp_get_output_is_read_or_refused() -> None:
    assert enabled_by_codex('{"name": "notes", "enabled_tools": ["a", "b"]}') == ["a", "b"]
    assert enabled_by_codex('{"name": "notes", "enabled_tools": null}') == []
    with pytest.raises(AgentBinaryError, match="no JSON object"):
        enabled_by_codex("Error: no such server")


def test_the_pinned_binary_enables_every_tool_of_the_generated_configuration(tmp_path: Path) -> None:
    assert CODEX.exists(), "run scripts/setup.sh: it installs Codex into .tools"
    home_root = tmp_path / "homes"
    home_root.mkdir()
    assert check_codex_tool_set(CODEX, "bwrap", SERVER, UNANNOTATED, os.environ, home_root) == []
    assert list(home_root.iterdir()) == []  # its private CODEX_HOME is removed
