"""The controlled example study (12 tasks) end to end with the real Claude Code binary in rehearsal (issue 34)."""

from __future__ import annotations

import pytest

from provider_e2e import ExampleRun, check_example_run, run_example


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    return run_example("claude-code", tmp_path_factory.mktemp("claude-code-controlled"))


def test_the_example_study_runs_end_to_end_with_claude_code(done: ExampleRun) -> None:
    check_example_run(done, "claude-code")


def test_claude_codes_own_init_tool_list_has_the_server_only_in_the_doc_bridge_arms(done: ExampleRun) -> None:
    # Claude Code's stream-json init event lists the tools it loaded; the adapter counts its mcp__ tools.
    for observation in done.ledger["observations"]:
        listed = observation["measurements"]["agentMcpToolsListed"]
        if observation["task"]["scenarioId"] == "repository-only":
            assert listed == 0
        else:
            assert listed == 3  # doc.search, doc.get, handoff.resolve of the bundled read-only server
