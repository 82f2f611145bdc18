"""One definition of wall time (issue 17 item 5): an http attempt's clock includes its MCP server's start-up.

A real MCP server (the bundled one) behind a wrapper that sleeps before serving: the doc-bridge
attempt's ``wallTimeMs`` covers that sleep, and its clock started before the server was launched.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.pricing.http import UpperPrices
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.runners.http_request import REHEARSAL_KEY, HttpRunRequest
from agentstudy.runners.minimal_http import run_http_study

SLEEP_MS = 300


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("wall") / "study")


def _answer_at_once(body: Mapping[str, Any]) -> ScriptedReply:
    return ScriptedReply([{"type": "text", "text": "the answer"}], "end_turn", {"input_tokens": 10, "output_tokens": 2})


def test_http_wall_time_includes_a_slow_mcp_server_start(study: ExampleStudy, tmp_path: Path) -> None:
    launches = tmp_path / "launches.jsonl"
    script = (
        "import sys, time\n"
        "from agentstudy.rehearsal.mcp_server import main\n"
        f"with open({str(launches)!r}, 'a') as f:\n"
        "    f.write('launched\\n')\n"
        f"time.sleep({SLEEP_MS / 1000})\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    command = (sys.executable, "-c", script, "--root", "{root}", "--pin", "{pin}")
    spec = McpServerSpec(name="doc-bridge", command=command)
    output = tmp_path / "ledger.json"
    with RehearsalServer(policy=_answer_at_once) as server:
        summary = run_http_study(HttpRunRequest(
            loaded=load_manifest(study.manifest_path), mode="pilot", roots=study.roots, output=output,
            model="claude-haiku-5-5", prices=UpperPrices(Decimal("0.50"), Decimal("2.50")), cap_usd=Decimal("1"),
            api_key=REHEARSAL_KEY, base_url=server.base_url, mcp=spec, containment="restricted",
            rehearsal=True,
        ))
    assert summary.status == "awaiting-adjudication"
    observations = {o["scenario"]: o for o in json.loads(output.read_text(encoding="utf-8"))["observations"]}
    assert len(launches.read_text().splitlines()) == 2, "the preflight probe and the attempt's own server"
    # The scripted model answers at once, so the loop itself takes a few ms; the server's sleep is inside.
    assert observations["doc-bridge-mcp"]["wallTimeMs"] >= SLEEP_MS
    assert observations["doc-bridge-mcp"]["status"] == "completed"
