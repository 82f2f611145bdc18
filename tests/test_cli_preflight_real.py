"""Preflight and isolation with the real Claude Code binary, the rehearsal server and real MCP servers.

A foreign study (corpora and an MCP server written here, not the bundled ones) runs through
``agentstudy minimal --rehearsal --mcp-config``; refusals happen before any reservation and
write nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from claude_versions import ClaudeCode

from inprocess_cli import invoke_agentstudy

KB_SERVER = Path(__file__).resolve().parent / "data" / "kb_server.py"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def _corpus(root: Path, files: dict[str, str]) -> str:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    subprocess.run([*GIT, "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-q", "-m", "corpus"], check=True)
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _study(tmp_path: Path, extra_tool_in: str | None = None) -> tuple[Path, dict[str, Path], Path]:
    """Three corpora with a kb.json config each, a manifest over them, and an MCP config for kb_server."""
    roots, pins, tasks = {}, {}, []
    for name in ("alpha", "beta", "gamma"):
        files = {
            "kb.json": json.dumps({"maxHits": 5}),
            "README.md": f"# {name}\n\nThe {name} gateway retries requests three times.\n",
            "docs/limits.md": f"# Limits\n\nThe {name} service allows 40 connections per client.\n",
        }
        if extra_tool_in == name:
            files["EXTRA_TOOL"] = "yes\n"
        roots[name] = tmp_path / "corpora" / name
        pins[name] = _corpus(roots[name], files)
        for index, source in enumerate(("README.md", "docs/limits.md")):
            tasks.append({
                "id": f"{name}-{index}", "repository": name, "category": "discovery",
                "question": f"How many connections does the {name} service allow per client?",
                "sources": [source], "expected": ["40 connections"],
            })
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({
        "version": "minimal-study-v1", "repetitions": 3, "scenarios": ["repository-only", "doc-bridge-mcp"],
        "repositories": pins, "tasks": tasks,
    }), encoding="utf-8")
    mcp_config = tmp_path / "kb-mcp.json"
    mcp_config.write_text(json.dumps({"mcpServers": {"kb": {
        "type": "stdio", "command": sys.executable, "args": [str(KB_SERVER), "--config", "{config}"]}}}),
        encoding="utf-8")
    return manifest, roots, mcp_config


def _minimal(
    manifest: Path, roots: dict[str, Path], output: Path, claude_bin: Path, tmpdir: Path, *extra: str,
    in_process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The pilot as a process of its own (its ``TMPDIR`` and what it leaves behind are read), or, for a refusal
    whose exit code and stderr are all that is read, in this process (``in_process``)."""
    env = {**os.environ, "TMPDIR": str(tmpdir), "ANTHROPIC_API_KEY": "sk-ant-never-to-the-child"}
    env.pop("AGENTSTUDY_CLAUDE_BIN", None)
    args = ["minimal", "--manifest", str(manifest), "--pilot", "--transport", "cli",
            *[f"--root={n}={p}" for n, p in roots.items()], "--output", str(output), "--claude-bin", str(claude_bin),
            "--model", "claude-haiku-5-5", "--budget-usd", "1", *extra]
    if in_process:
        return invoke_agentstudy(*args, env=env)
    return subprocess.run([sys.executable, "-m", "agentstudy", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def _kb_args(mcp_config: Path) -> list[str]:
    return ["--rehearsal", "--mcp-config", str(mcp_config), "--server-config-candidates", "kb.json",
            "--mcp-tools", "kb.find,kb.read", "--mcp-probe", "kb.find", "--mcp-probe-arguments", '{"term": "gateway"}']


def _leftover_processes(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline)
    return found


@pytest.fixture
def tmpdir_for_runner(tmp_path: Path) -> Path:
    directory = tmp_path / "runner-tmp"
    directory.mkdir()
    return directory


def test_foreign_study_rehearses_both_arms_and_leaves_nothing_behind(
    tmp_path: Path, claude_code: ClaudeCode, tmpdir_for_runner: Path
) -> None:
    """A third-party MCP server's study, both arms, with each pinned Claude Code (2.1.296 and 2.1.328)."""
    manifest, roots, mcp_config = _study(tmp_path)
    output = tmp_path / "ledger.json"
    result = _minimal(manifest, roots, output, claude_code.binary, tmpdir_for_runner, *_kb_args(mcp_config),
                      "--cli-version", claude_code.version)
    assert result.returncode == 0, result.stderr
    ledger: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
    assert ledger["rehearsal"] is True
    assert ledger["status"] == "awaiting-adjudication"
    assert ledger["mcpServer"]["name"] == "kb"
    assert ledger["mcpServer"]["deniedTools"] == ["mcp__kb__kb_erase"]
    first, second = ledger["observations"]
    assert [first["scenario"], second["scenario"]] == ["repository-only", "doc-bridge-mcp"]
    assert first["cliVersion"].split()[0] == second["cliVersion"].split()[0] == claude_code.version
    assert second["mcp_servers"] == [{"name": "kb", "status": "connected", "source": "dynamic"}]
    assert sorted(second["tools"]) == ["Glob", "Grep", "Read", "mcp__kb__kb_find", "mcp__kb__kb_read"]
    assert first["tools"] == ["Glob", "Grep", "Read"]
    assert list(tmpdir_for_runner.iterdir()) == [], "no export or attempt directory is left behind"
    assert _leftover_processes(str(tmp_path)) == []
    assert "sk-ant-never-to-the-child" not in output.read_text(encoding="utf-8")


def test_version_mismatch_is_refused_and_writes_nothing(
    tmp_path: Path, claude_bin: Path, tmpdir_for_runner: Path
) -> None:
    manifest, roots, mcp_config = _study(tmp_path)
    output = tmp_path / "ledger.json"
    result = _minimal(manifest, roots, output, claude_bin, tmpdir_for_runner, *_kb_args(mcp_config),
                      "--cli-version", "2.1.297", in_process=True)
    assert result.returncode == 2
    assert "not the expected 2.1.297" in result.stderr
    assert not output.exists()


def test_failing_freshness_probe_is_refused(tmp_path: Path, claude_bin: Path, tmpdir_for_runner: Path) -> None:
    manifest, roots, mcp_config = _study(tmp_path)
    output = tmp_path / "ledger.json"
    args = _kb_args(mcp_config)
    args[args.index("--mcp-probe") + 1] = "kb.read"
    args[args.index("--mcp-probe-arguments") + 1] = '{"path": "missing.md"}'
    result = _minimal(manifest, roots, output, claude_bin, tmpdir_for_runner, *args, in_process=True)
    assert result.returncode == 2
    assert "freshness probe kb.read failed" in result.stderr
    assert not output.exists()


def test_missing_server_config_is_refused(tmp_path: Path, claude_bin: Path, tmpdir_for_runner: Path) -> None:
    manifest, roots, mcp_config = _study(tmp_path)
    args = _kb_args(mcp_config)
    args[args.index("--server-config-candidates") + 1] = "doc-bridge.config.json"
    result = _minimal(manifest, roots, tmp_path / "ledger.json", claude_bin, tmpdir_for_runner, *args,
                      in_process=True)
    assert result.returncode == 2
    assert "no MCP server config file" in result.stderr


def test_checkouts_listing_different_tools_are_refused(
    tmp_path: Path, claude_bin: Path, tmpdir_for_runner: Path
) -> None:
    manifest, roots, mcp_config = _study(tmp_path, extra_tool_in="beta")
    # The pilot uses only the first repository; the full run needs every checkout's server.
    output = tmp_path / "ledger.json"
    result = invoke_agentstudy(
        "minimal", "--manifest", str(manifest), "--run", "--transport", "cli",
        *[f"--root={n}={p}" for n, p in roots.items()], "--output", str(output), "--claude-bin", str(claude_bin),
        "--model", "claude-haiku-5-5", "--budget-usd", "5", *_kb_args(mcp_config),
        env={**os.environ, "TMPDIR": str(tmpdir_for_runner)},
    )
    assert result.returncode == 2, result.stderr
    assert "list different tools" in result.stderr
    assert not output.exists()
