"""``agentstudy demo --agent codex`` (issue 21 item 5): free, 2 completed observations, MCP only in the treatment
arm, and the parent's API keys nowhere in what the Codex child saw."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger, verify_ledger_bytes

from codex_attempts import SENTINELS, codex_binary


def _demo(directory: Path, *extra: str) -> dict[str, Any]:
    env = {**os.environ, **SENTINELS}
    result = CliRunner().invoke(main, ["demo", "--agent", "codex", "--output-dir", str(directory), *extra], env=env)
    assert result.exit_code == 0, result.output
    ledger: dict[str, Any] = json.loads((directory / "ledger.json").read_text())
    return ledger


def test_the_codex_demo_completes_both_arms_for_free(tmp_path: Path) -> None:
    ledger = _demo(tmp_path / "demo")
    observations = ledger["observations"]
    assert isinstance(observations, list)
    assert [o["status"] for o in observations] == ["completed", "completed"]
    by_arm = {o["scenario"]: o["toolCallsByName"] for o in observations}
    assert sum(n for name, n in by_arm["doc-bridge-mcp"].items() if name.startswith("mcp__doc-bridge__")) >= 1
    assert not any(name.startswith("mcp__") for name in by_arm["repository-only"])
    assert all(o["containment"] == "bwrap" and o["cliReportedCostUsd"] is None for o in observations)
    cli = ledger["cli"]
    assert isinstance(cli, dict)
    assert cli["agent"]["name"] == "codex" and cli["agent"]["version"] == "codex-cli 0.171.0"
    assert cli["agent"]["features"]["shell_tool"] is True and cli["agent"]["features"]["apps"] is False
    assert ledger["rehearsal"] is True and cli["prices"]["source"].startswith("nominal rehearsal price")
    assert verify_ledger_bytes((tmp_path / "demo" / "ledger.json").read_bytes()).problems == ()
    # The agent block is checked, not only hashed: resealed with a wrong agent, the ledger is refused.
    for change, problem in (({"name": "aider"}, "cli.agent.name 'aider' is not a known agent (claude-code, codex, "
                                                "gemini)"),
                            ({"version": "codex-cli 0.170.0"}, "cli.agent.version 'codex-cli 0.170.0' is not "
                                                               "cli.cliVersion 'codex-cli 0.171.0'"),
                            ({"features": None}, "cli.agent.features is recorded for Codex and only for Codex")):
        tampered = json.loads(json.dumps(ledger))
        tampered["cli"]["agent"].update(change)
        if tampered["cli"]["agent"]["features"] is None:
            del tampered["cli"]["agent"]["features"]
        assert problem in verify_ledger(seal_ledger(tampered)).problems


def test_no_parent_api_key_reaches_the_codex_child(tmp_path: Path) -> None:
    # A wrapper as the agent binary writes its own /proc/self/environ, then execs the real binary. It runs
    # without bubblewrap (--containment restricted) so that it can write the log; the environment a child
    # gets is built the same way under both mechanisms (the allowlist, io.environment).
    log = tmp_path / "environ.log"
    wrapper = tmp_path / "codex-wrapper"
    wrapper.write_text(f"#!/bin/sh\n{{ printf 'ARGS %s\\n' \"$1\"; tr '\\0' '\\n' < /proc/self/environ; "
                       f"printf 'END\\n'; }} >> '{log}'\nexec '{codex_binary()}' \"$@\"\n")
    wrapper.chmod(0o755)
    subprocess.run([str(wrapper), "--version"], env={**SENTINELS, "PATH": "/usr/bin:/bin"}, check=True,
                   capture_output=True)
    assert SENTINELS["OPENAI_API_KEY"] in log.read_text()  # the wrapper does see what it is given
    log.unlink()
    ledger = _demo(tmp_path / "demo", "--containment", "restricted", "--agent-bin", str(wrapper))
    assert [o["status"] for o in ledger["observations"]] == ["completed", "completed"]
    entries = [entry for entry in log.read_text().split("END\n") if entry.strip()]
    assert [entry.splitlines()[0] for entry in entries].count("ARGS exec") == 2
    assert "ARGS --version" in log.read_text() and "ARGS features" in log.read_text()
    for value in SENTINELS.values():
        assert value not in log.read_text()
    for entry in entries:
        names = {line.split("=", 1)[0] for line in entry.splitlines()[1:]}
        assert not names & {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
        if entry.startswith("ARGS exec"):
            assert "AGENTSTUDY_REHEARSAL_KEY=rehearsal-dummy-key" in entry
            home = next(line for line in entry.splitlines() if line.startswith("CODEX_HOME="))
            assert not home.startswith(("CODEX_HOME=/tmp/", "CODEX_HOME=/var/tmp/"))
