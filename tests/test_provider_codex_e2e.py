"""The controlled example study (12 tasks) end to end with the real Codex binary in rehearsal (issue 34)."""

from __future__ import annotations

import pytest

from provider_e2e import ExampleRun, check_example_run, run_example


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    return run_example("codex", tmp_path_factory.mktemp("codex-controlled"))


def test_the_example_study_runs_end_to_end_with_codex(done: ExampleRun) -> None:
    check_example_run(done, "codex")


def test_codex_reports_reasoning_tokens_and_its_answer_as_provider_measurements(done: ExampleRun) -> None:
    for observation in done.ledger["observations"]:
        assert observation["measurements"]["reasoningOutputTokens"] == 0  # the scripted server reports none
        assert observation["measurements"]["stderrBytes"] > 0  # Codex logs to stderr; only the count is kept
