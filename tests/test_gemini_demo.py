"""``agentstudy demo --agent gemini``: free, 2 completed observations with the real pinned binary, MCP only in
the treatment arm, and none of the parent's credentials in what the Gemini child saw."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes

from gemini_attempts import SENTINELS, gemini_binary


def _demo(directory: Path, *extra: str) -> dict[str, Any]:
    env = {**os.environ, **SENTINELS}
    result = CliRunner().invoke(main, ["demo", "--agent", "gemini", "--output-dir", str(directory), *extra], env=env)
    assert result.exit_code == 0, result.output
    ledger: dict[str, Any] = json.loads((directory / "ledger.json").read_text())
    return ledger


def test_the_gemini_demo_completes_both_arms_for_free(tmp_path: Path) -> None:
    ledger = _demo(tmp_path / "demo", "--adjudicate")
    observations = ledger["observations"]
    assert [o["status"] for o in observations] == ["completed", "completed"]
    by_arm = {o["scenario"]: o for o in observations}
    assert sum(n for name, n in by_arm["doc-bridge-mcp"]["toolCallsByName"].items()
               if name.startswith("mcp__doc-bridge__")) >= 1
    assert not any(name.startswith("mcp") for name in by_arm["repository-only"]["toolCallsByName"])
    assert all(o["containment"] == "bwrap" and o["cliReportedCostUsd"] is None for o in observations)
    assert all(o["computedCostUsd"] > 0 and o["costBasis"]["pricing"] == "gemini" for o in observations)
    assert ledger["cli"]["agent"] == {"name": "gemini", "version": "0.61.0"}
    assert ledger["rehearsal"] is True and ledger["cli"]["prices"]["source"].startswith("nominal rehearsal price")
    assert verify_ledger_bytes((tmp_path / "demo" / "ledger.json").read_bytes()).problems == ()
    # --adjudicate: the same agent adjudicates blind against its scripted server (the key-term adjudicator)
    companion = json.loads((tmp_path / "demo" / "ledger.adjudication.json").read_text())
    assert companion["status"] == "adjudicated" and companion["adjudicator"]["agent"] == "gemini"
    assert companion["adjudicator"]["cliVersion"] == "0.61.0" and companion["adjudicator"]["mcpServers"] == []
    assert [item["attemptStatus"] for item in companion["items"]] == ["completed", "completed"]
    assert all(item["status"] == "scored" and item["computedCostUsd"] > 0 for item in companion["items"])


def test_no_parent_credential_reaches_the_gemini_child(tmp_path: Path) -> None:
    # A wrapper as the agent binary writes its own /proc/self/environ, then execs the real binary. It runs
    # without bubblewrap (--containment restricted) so that it can write the log; the environment a child gets
    # is built the same way under both mechanisms (the allowlist, io.environment).
    log = tmp_path / "environ.log"
    wrapper = tmp_path / "gemini-wrapper"
    wrapper.write_text(f"#!/bin/sh\n{{ printf 'ARGS %s\\n' \"$1\"; tr '\\0' '\\n' < /proc/self/environ; "
                       f"printf 'END\\n'; }} >> '{log}'\nexec '{gemini_binary()}' \"$@\"\n")
    wrapper.chmod(0o755)
    subprocess.run([str(wrapper), "--version"], env={**SENTINELS, "PATH": "/usr/bin:/bin"}, check=True,
                   capture_output=True)
    assert SENTINELS["GEMINI_API_KEY"] in log.read_text()  # the wrapper does see what it is given
    log.unlink()
    ledger = _demo(tmp_path / "demo", "--containment", "restricted", "--agent-bin", str(wrapper))
    assert [o["status"] for o in ledger["observations"]] == ["completed", "completed"]
    entries = [entry for entry in log.read_text().split("END\n") if entry.strip()]
    attempts = [entry for entry in entries if entry.startswith("ARGS -p")]
    assert len(attempts) == 2
    for value in SENTINELS.values():
        assert value not in log.read_text()
    for entry in attempts:
        names = {line.split("=", 1)[0] for line in entry.splitlines()[1:]}
        assert not names & {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY"}
        assert "GEMINI_API_KEY=rehearsal-dummy-key" in entry and "GEMINI_CLI_TRUST_WORKSPACE=true" in entry
