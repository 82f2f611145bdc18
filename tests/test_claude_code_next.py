"""The newest 2.1.x Claude Code beside the pinned one (issue 33 item 8): the demo pilot in rehearsal, its stream
accepted (the line's newer event types and ``result`` fields), and a 429 ridden out with the retry counted.

The binary is ``AGENTSTUDY_CLAUDE_NEXT_BIN`` or ``.tools/claude-code-next`` (``scripts/setup.sh`` installs
``CLAUDE_CODE_NEXT_VERSION`` there).
"""

from __future__ import annotations

import json
import os
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from agentstudy.io.ledger_journal import read_ledger
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.cli_request import CliRunRequest
from agentstudy.runners.minimal import run_cli_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings

REPO = Path(__file__).resolve().parents[1]
NEXT_VERSION = "2.1.328"
"""scripts/setup.sh's CLAUDE_CODE_NEXT_VERSION: the newest 2.1.x on the registry when it was pinned."""


@pytest.fixture(scope="module")
def next_bin() -> Path:
    explicit = os.environ.get("AGENTSTUDY_CLAUDE_NEXT_BIN")
    binary = Path(explicit) if explicit else REPO / ".tools" / "claude-code-next" / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        pytest.fail(f"Claude Code {NEXT_VERSION} missing at {binary}: run scripts/setup.sh")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert version.stdout.split()[0] == NEXT_VERSION, version.stdout
    return binary


def test_the_newest_claude_code_completes_the_pilot_and_its_retry_is_counted(tmp_path: Path, next_bin: Path) -> None:
    study = build_example_study(tmp_path / "study")
    output = tmp_path / "ledger.json"
    with RehearsalServer(faults=parse_fault_schedule("1:429")) as server:
        summary = run_cli_study(CliRunRequest(
            loaded=load_manifest(study.manifest_path), mode="pilot", roots=study.roots, output=output,
            settings=CliSettings(binary=next_bin, model="claude-haiku-5-5", mcp=DEFAULT_MCP_SERVER,
                                 rehearsal_base_url=server.base_url),
            cap_usd=Decimal("1"), attempt_budget_usd=Decimal("0.10"), expected_cli_version=NEXT_VERSION,
            parent_env=dict(os.environ)))
        refused = [r for r in server.requests if r.fault is not None]
    ledger = json.loads(read_ledger(output, output.read_bytes()).data)
    observations = ledger["observations"]
    assert summary.status == "awaiting-adjudication", [o.get("statusReason") or o.get("setupProblem")
                                                        for o in observations]
    assert [o["status"] for o in observations] == ["completed", "completed"]
    assert all("setupProblem" not in o for o in observations)
    assert [r.status for r in refused] == [429]
    assert observations[0]["apiRetries"] == 1 and observations[0]["apiRetryStatuses"] == [429]
    assert verify_ledger_bytes(output.read_bytes()).problems == ()
