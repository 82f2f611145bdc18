"""The agent seam (issue 21 item 1): the registry, the pinned binaries, the agent-neutral version probe."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from agentstudy.agents.registry import AGENT_MODULES, AGENT_NAMES, DEFAULT_AGENT, UnknownAgent, agent_cli
from agentstudy.io.agent_binary import AgentBinaryError, probe_version
from agentstudy.runners.preflight import PreflightError, check_cli_version


def test_the_registry_names_the_three_agents_and_defaults_to_claude_code() -> None:
    assert AGENT_NAMES == ("claude-code", "codex", "gemini")
    assert DEFAULT_AGENT == "claude-code"
    assert [agent_cli(name).name for name in AGENT_NAMES] == list(AGENT_NAMES)
    assert tuple(AGENT_MODULES) == AGENT_NAMES  # one module per name the core knows (protocol.agent_names)
    assert agent_cli("codex").pinned_version == "0.171.0"
    assert agent_cli("claude-code").pinned_version == "2.1.296"
    assert agent_cli("gemini").pinned_version == "0.61.0"
    with pytest.raises(UnknownAgent, match="unknown agent 'aider' \\(known: claude-code, codex, gemini\\)"):
        agent_cli("aider")


def test_each_agent_finds_its_pinned_install_in_tools() -> None:
    env = {"PATH": "/usr/bin:/bin"}
    assert ".tools/codex/" in str(agent_cli("codex").find_binary(None, env))
    assert ".tools/claude-code/" in str(agent_cli("claude-code").find_binary(None, env))
    assert ".tools/gemini-cli/" in str(agent_cli("gemini").find_binary(None, env))
    with pytest.raises(AgentBinaryError, match="the Codex CLI binary 'no-such-codex' is not found on PATH"):
        agent_cli("codex").find_binary("no-such-codex", env)


def test_the_override_variable_is_the_agents_own(tmp_path: Path) -> None:
    fake = tmp_path / "my-codex"
    fake.write_text("#!/bin/sh\necho codex-cli 0.171.0\n")
    fake.chmod(0o755)
    assert agent_cli("codex").find_binary(None, {"AGENTSTUDY_CODEX_BIN": str(fake)}) == fake
    assert agent_cli("claude-code").find_binary(None, {"AGENTSTUDY_CODEX_BIN": str(fake)}) != fake


def test_the_real_codex_version_is_probed_contained_and_matched() -> None:
    codex = agent_cli("codex").find_binary(None, os.environ)
    line = probe_version(codex, {**os.environ, "OPENAI_API_KEY": "sk-sentinel"}, "bwrap")
    assert line == "codex-cli 0.171.0"
    assert check_cli_version(codex, "0.171.0", os.environ, "bwrap", agent="codex") == line
    wrong = re.escape("codex --version printed 'codex-cli 0.171.0', not 'codex-cli 0.170.0'")
    with pytest.raises(PreflightError, match=wrong):
        check_cli_version(codex, "0.170.0", os.environ, "bwrap", agent="codex")


def test_version_lines_are_read_by_each_agents_rule() -> None:
    assert agent_cli("claude-code").version_problem("2.1.296 (Claude Code)", "2.1.296") is None
    assert agent_cli("codex").version_problem("codex-cli 0.171.0", "0.171.0") is None
    assert agent_cli("codex").version_problem("0.171.0", "0.171.0") is not None
    assert agent_cli("claude-code").version_problem("codex-cli 0.171.0", "2.1.296") is not None


def test_each_agent_names_its_own_login_file_and_only_a_regular_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".codex").mkdir()
    claude, codex = agent_cli("claude-code"), agent_cli("codex")
    assert claude.login_file({"HOME": str(home)}) is None
    assert codex.login_file({"HOME": str(home)}) is None
    (home / ".claude" / ".credentials.json").write_text("{}")
    (home / ".codex" / "auth.json").mkdir()  # a directory is not a login file
    assert claude.login_file({"HOME": str(home)}) == home / ".claude" / ".credentials.json"
    assert codex.login_file({"HOME": str(home)}) is None
    (home / ".codex" / "auth.json").rmdir()
    (home / ".codex" / "auth.json").write_text("{}")
    assert codex.login_file({"HOME": str(home)}) == home / ".codex" / "auth.json"
    elsewhere = tmp_path / "codex-home"
    elsewhere.mkdir()
    assert codex.login_file({"HOME": str(home), "CODEX_HOME": str(elsewhere)}) is None
    (elsewhere / "auth.json").write_text("{}")
    assert codex.login_file({"HOME": str(home), "CODEX_HOME": str(elsewhere)}) == elsewhere / "auth.json"
    assert codex.login_file({"CODEX_HOME": "relative/dir"}) is None
    assert codex.login_file({}) is None and claude.login_file({}) is None


def test_capabilities_decide_strict_cap_and_transcript_stderr_not_the_agents_name() -> None:
    claude, codex = agent_cli("claude-code"), agent_cli("codex")
    assert (claude.bounds_worst_turn, codex.bounds_worst_turn) == (True, False)
    assert (claude.judged_with_stderr, codex.judged_with_stderr) == (False, True)
