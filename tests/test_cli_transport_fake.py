"""The CLI transport against the seed's fake ``claude``: each behaviour maps to its status and charge.

The fake reads a behaviour file, records its argv, whether it saw an API key and what its
working directory held, then emits canned stream-json. Everything else is real: git corpora,
the export, the bounded child, stream checks, pricing and settlement.
"""

from __future__ import annotations

import os
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.agents.registry import agent_cli
from agentstudy.io.git import head
from agentstudy.pricing.budget import settle_attempt
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.protocol.mcp_spec import ServerPaths
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools

from fakes import FakeClaude

RESERVATION = Decimal("0.1")
MODEL = "claude-haiku-5-5"


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def _attempt(
    fake: FakeClaude, study: ExampleStudy, scenario: str = REPOSITORY_ONLY, **settings: Any
) -> tuple[str, Decimal, Any]:
    root = next(iter(study.roots.values()))
    pin = head(root)
    cli = replace(CliSettings(binary=fake.path, model=MODEL, mcp=DEFAULT_MCP_SERVER, containment="restricted"),
                  **settings)
    result = run_cli_attempt(
        cli,
        agent=agent_cli(cli.agent),
        scenario=scenario,
        tools=arm_tools(scenario, DEFAULT_MCP_SERVER, ("mcp__doc-bridge__doc_write",)),
        root=root,
        pin=str(pin),
        prompt="Where is the sweeper described?\nCite path:line.",
        reservation_usd=RESERVATION,
        parent_env={**os.environ, "ANTHROPIC_API_KEY": "sk-ant-must-not-pass"},
        server=ServerPaths(root=str(root), pin=str(pin)) if scenario == DOC_BRIDGE_MCP else None,
    )
    computed = result.computed_cost.usd if result.computed_cost else None
    status, charged = settle_attempt(result.status, RESERVATION, result.reported_cost_usd, computed)
    return status, charged, result


def test_ok_is_completed_and_charged_its_cost(fake_claude: FakeClaude, study: ExampleStudy) -> None:
    fake_claude.behave(mode="ok", inputTokens=1000, outputTokens=100)
    status, charged, result = _attempt(fake_claude, study)
    assert status == "completed"
    assert charged == Decimal("0.00015")  # 1000 x 0.10 + 100 x 0.50 per million
    [record] = fake_claude.records
    assert record["apiKeyPresent"] is False
    assert "ANTHROPIC_API_KEY" not in record["env"]
    assert record["cwdWritable"] is False
    assert "README.md" in record["cwdFiles"]
    assert not any(f.startswith(".") or "/." in f for f in record["cwdFiles"])
    assert not Path(record["cwd"]).exists(), "the export is removed after the attempt"
    assert result.fields["answer_text"]


def test_malformed_first_line_is_invalid_setup_charged_the_reservation(
    fake_claude: FakeClaude, study: ExampleStudy
) -> None:
    fake_claude.behave(mode="ok", malformedFirstLine=True)
    status, charged, result = _attempt(fake_claude, study)
    assert status == "invalid-setup"
    assert any("not JSON" in p for p in result.setup_problems)
    assert charged == RESERVATION
    assert result.reported_cost_usd is not None, "the last result is still read for its cost"


def test_non_zero_exit_is_failed(fake_claude: FakeClaude, study: ExampleStudy) -> None:
    fake_claude.behave(mode="exit", exitCode=3)
    status, charged, _ = _attempt(fake_claude, study)
    assert (status, charged) == ("failed", RESERVATION)


def test_sleep_past_the_timeout_is_timed_out(fake_claude: FakeClaude, study: ExampleStudy) -> None:
    fake_claude.behave(mode="sleep", sleepSeconds=60)
    status, charged, result = _attempt(fake_claude, study, timeout_s=1.0)
    assert (status, charged) == ("timed-out", RESERVATION)
    assert result.setup_problems == (), "a killed child's missing result is no extra setup problem"


def test_output_past_the_bound_is_failed(fake_claude: FakeClaude, study: ExampleStudy) -> None:
    fake_claude.behave(mode="flood", floodBytes=300_000)
    status, charged, _ = _attempt(fake_claude, study, stdout_limit=100_000)
    assert (status, charged) == ("failed", RESERVATION)


def test_garbage_is_invalid_setup(fake_claude: FakeClaude, study: ExampleStudy) -> None:
    fake_claude.behave(mode="garbage")
    status, charged, _ = _attempt(fake_claude, study)
    assert (status, charged) == ("invalid-setup", RESERVATION)


def test_error_max_budget_is_budget_exceeded_and_charged_the_larger_cost(
    fake_claude: FakeClaude, study: ExampleStudy
) -> None:
    fake_claude.behave(mode="ok", subtype="error_max_budget_usd", isError=True, exitCode=1,
                       inputTokens=1_000_000, outputTokens=100_000)
    status, charged, _ = _attempt(fake_claude, study)
    assert status == "budget-exceeded"
    # The prompt of 1,000,000 tokens is above 100,000, so every token is priced in tier 2:
    # 1e6 x 0.50 + 1e5 x 2.50 per million = 0.75, more than the CLI's own 0.15 and the reservation.
    assert charged == Decimal("0.75")


def test_success_above_the_reservation_is_budget_exceeded(fake_claude: FakeClaude, study: ExampleStudy) -> None:
    fake_claude.behave(mode="ok", reportedCost=0.25)
    status, charged, _ = _attempt(fake_claude, study)
    assert (status, charged) == ("budget-exceeded", Decimal("0.25"))


def test_unknown_model_is_invalid_cost(fake_claude: FakeClaude, study: ExampleStudy) -> None:
    fake_claude.behave(mode="events", events=[
        {"type": "system", "subtype": "init", "model": MODEL, "tools": ["Glob", "Grep", "Read"], "mcp_servers": []},
        {"type": "result", "subtype": "success", "is_error": False, "result": "x", "total_cost_usd": 0.001,
         "modelUsage": {"claude-unknown-9": {"inputTokens": 10, "outputTokens": 1}}, "permission_denials": []},
    ])
    status, charged, result = _attempt(fake_claude, study)
    assert status == "invalid-cost"
    assert result.cost_problem is not None and "claude-unknown-9" in result.cost_problem
    assert charged == RESERVATION


def test_both_arms_differ_only_in_allowed_tools_and_mcp_config(fake_claude: FakeClaude, study: ExampleStudy) -> None:
    fake_claude.behave(mode="ok")
    assert _attempt(fake_claude, study, scenario=REPOSITORY_ONLY)[0] == "completed"
    assert _attempt(fake_claude, study, scenario=DOC_BRIDGE_MCP)[0] == "completed"
    first, second = (r["argv"] for r in fake_claude.records)
    assert len(first) == len(second)
    differing = [first[i - 1] for i in range(1, len(first)) if first[i] != second[i]]
    assert differing == ["--allowedTools", "--mcp-config"]
    assert "--restricted" in first and "--restricted" in second, "file tools confined in both arms (issue 15)"
    assert first[-2] == "--" and second[-2] == "--"
    assert first[first.index("--max-budget-usd") + 1] == "0.100000"
    assert "--setting-sources" in first and first[first.index("--setting-sources") + 1] == ""
