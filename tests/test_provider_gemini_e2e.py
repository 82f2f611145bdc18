"""The controlled example study (12 tasks) end to end with the real Gemini CLI binary in rehearsal: the bundled
provider adapter ``agentstudy provider gemini`` answers every task, ``--adjudicator`` adjudicates two."""

from __future__ import annotations

import pytest

from provider_e2e import ExampleRun, check_example_run, run_example


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    return run_example("gemini", tmp_path_factory.mktemp("gemini-controlled"))


def test_the_example_study_runs_end_to_end_with_gemini(done: ExampleRun) -> None:
    check_example_run(done, "gemini")
