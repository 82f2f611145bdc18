"""``agentstudy demo``: the pilot of the bundled example study, real Claude Code, zero spend.

Builds the three example corpora into git repositories, starts the scripted Messages API
server on 127.0.0.1, and runs the 2-attempt pilot with the CLI transport and the bundled
read-only MCP server. The child gets a dummy token and a private HOME; no credential is read.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

from agentstudy.io.claude_cli import project_root
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.minimal import CliRunRequest, run_cli_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.runners.progress import RunProgress
from agentstudy.runners.summary import RunSummary
from agentstudy.transports.cli import CliSettings

DEMO_MODEL = "claude-haiku-5-5"
DEMO_CAP_USD = Decimal("1.00")
DEMO_ATTEMPT_BUDGET_USD = Decimal("0.10")
DEMO_CLI_VERSION = "2.1.296"


def run_demo(directory: Path, binary: Path, progress: RunProgress) -> RunSummary:
    """Build the example study under ``directory`` and run its pilot; the ledger is ``directory/ledger.json``.

    Raises:
        PreflightError, OutputPathError: the pilot was refused before any reservation.
    """
    study = build_example_study(directory / "study")
    loaded = load_manifest(study.manifest_path)
    with RehearsalServer() as server:
        request = CliRunRequest(
            loaded=loaded,
            mode="pilot",
            roots=study.roots,
            output=directory / "ledger.json",
            settings=CliSettings(
                binary=binary,
                model=DEMO_MODEL,
                mcp=DEFAULT_MCP_SERVER,
                rehearsal_base_url=server.base_url,
                private_home=True,
            ),
            cap_usd=DEMO_CAP_USD,
            attempt_budget_usd=DEMO_ATTEMPT_BUDGET_USD,
            expected_cli_version=DEMO_CLI_VERSION,
            parent_env=dict(os.environ),
            forbidden_output_roots=(project_root(),),
            progress=progress,
        )
        return run_cli_study(request)
