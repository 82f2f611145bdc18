"""``agentstudy demo``: the pilot of the bundled example study against a scripted server, zero spend.

Builds the three example corpora into git repositories, starts the scripted Messages API
server on 127.0.0.1, and runs the 2-attempt pilot with the bundled read-only MCP server:
with the ``cli`` transport the real Claude Code binary is the agent (a dummy token and a
private HOME); with ``http`` the Messages API loop is (a dummy key). No credential is read.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

from agentstudy.agents.registry import DEFAULT_AGENT, agent_cli
from agentstudy.io.claude_cli import project_root
from agentstudy.io.containment import ContainmentMode
from agentstudy.pricing.http import rehearsal_prices
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.minimal import CliRunRequest, run_cli_study
from agentstudy.runners.minimal_http import REHEARSAL_KEY, HttpRunRequest, run_http_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.runners.progress import RunProgress
from agentstudy.runners.summary import RunSummary
from agentstudy.transports.cli import CliSettings

DEMO_MODEL = "claude-haiku-5-5"
DEMO_CAP_USD = Decimal("1.00")
DEMO_ATTEMPT_BUDGET_USD = Decimal("0.10")
DEMO_CLI_VERSION = "2.1.296"
DEMO_PRICES = rehearsal_prices(DEMO_MODEL)
"""The http demo's nominal prices, USD per million tokens: those of every rehearsal of its model (0.10 / 0.50)."""


def run_demo(
    directory: Path, binary: Path, progress: RunProgress, containment: ContainmentMode = "bwrap", latency_ms: int = 0,
    agent: str = DEFAULT_AGENT, faults: str | None = None, version: str | None = None,
) -> RunSummary:
    """Build the example study under ``directory`` and run its pilot with the real ``binary`` of ``agent``
    (whose ``--version`` must be ``version``, default the agent's pin; e.g. Claude Code 2.1.328 beside 2.1.296).

    The ledger is ``directory/ledger.json``; the agent's scripted server (``AgentCli.rehearsal_endpoint``:
    Messages for Claude Code, Responses for Codex; issue 21) answers after ``latency_ms`` ms, refuses
    requests as the fault SPEC ``faults`` schedules (issue 33), and the model is the agent's ``rehearsal_model``.

    Raises:
        PreflightError, OutputPathError: the pilot was refused before any reservation.
    """
    study = build_example_study(directory / "study")
    loaded = load_manifest(study.manifest_path)
    chosen = agent_cli(agent)
    with chosen.rehearsal_endpoint(latency_ms, faults) as base_url:
        request = CliRunRequest(
            loaded=loaded,
            mode="pilot",
            roots=study.roots,
            output=directory / "ledger.json",
            settings=CliSettings(
                binary=binary,
                model=chosen.rehearsal_model,
                mcp=DEFAULT_MCP_SERVER,
                rehearsal_base_url=base_url,
                containment=containment,
                agent=chosen.name,
            ),
            cap_usd=DEMO_CAP_USD,
            attempt_budget_usd=DEMO_ATTEMPT_BUDGET_USD,
            expected_cli_version=version or chosen.pinned_version,
            parent_env=dict(os.environ),
            forbidden_output_roots=(project_root(),),
            progress=progress,
        )
        return run_cli_study(request)


def run_http_demo(directory: Path, progress: RunProgress, containment: ContainmentMode = "bwrap",
                  latency_ms: int = 0, faults: str | None = None) -> RunSummary:
    """Build the example study under ``directory`` and run its pilot with the Messages API loop.

    The rehearsal server answers every request after ``latency_ms`` ms (issue 19) and refuses requests as
    the fault SPEC ``faults`` schedules (issue 33).

    The loop talks over real HTTP to the scripted server on 127.0.0.1 with a dummy key, at the
    nominal rehearsal prices (``DEMO_PRICES``, 0.10 / 0.50 USD per million) under a 1 USD cap; the ledger
    (``directory/ledger.json``) says ``"rehearsal": true``.

    Raises:
        PreflightError, OutputPathError: the pilot was refused before any reservation.
    """
    study = build_example_study(directory / "study")
    loaded = load_manifest(study.manifest_path)
    schedule = None if faults is None else parse_fault_schedule(faults)
    with RehearsalServer(latency_ms=latency_ms, faults=schedule) as server:
        request = HttpRunRequest(
            loaded=loaded,
            mode="pilot",
            roots=study.roots,
            output=directory / "ledger.json",
            model=DEMO_MODEL,
            prices=DEMO_PRICES,
            nominal_prices=True,
            cap_usd=DEMO_CAP_USD,
            api_key=REHEARSAL_KEY,
            base_url=server.base_url,
            mcp=DEFAULT_MCP_SERVER,
            rehearsal=True,
            forbidden_output_roots=(project_root(),),
            progress=progress,
            containment=containment,
            parent_env=dict(os.environ),
        )
        return run_http_study(request)
