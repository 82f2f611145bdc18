"""The controlled runner and the adjudications on the executor seam, without Ray (issue 20).

A worker that died under a controlled execution or adjudicator: nothing of it is recorded, it
is not run again, admission stops and the command ends with ``WorkerDiedError``. The local
executor runs the same adjudicator jobs to the same verdicts as the runner's own threads. Every
runner with ``--concurrency`` refuses executor flags that cannot mean anything (exit 2, one line).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import agentstudy.controlled.run as controlled_run
from agentstudy.commands.contract_files import read_contract
from agentstudy.controlled.adjudicate import Selection, adjudicate_ledger, prepare_adjudication
from agentstudy.controlled.preflight import RunInputs
from agentstudy.controlled.remote import WorkerDiedError
from agentstudy.controlled.run import RunOptions, run_controlled_study
from agentstudy.protocol.controlled.config import StudyProviderCliConfigV1, StudyRepositoryConfigV1
from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
from agentstudy.rehearsal.controlled.example import ControlledExample, build_controlled_example
from agentstudy.runners.executor import LocalExecutor
from test_controlled_run_support import cli, one_error_line, run_args
from test_executor import DeadWorkers


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[ControlledExample, Path]:
    base = tmp_path_factory.mktemp("remote-runners")
    example = build_controlled_example(base / "study")
    ledger = base / "ledger.json"
    assert cli(*run_args(example, ledger)).exit_code == 0
    return example, ledger


def _prepared(example: ControlledExample, ledger: Path) -> Any:
    return prepare_adjudication(read_contract(ledger, ControlledStudyObservationLedgerV1),
                                read_contract(example.suite, StudyTaskSuiteV1),
                                read_contract(example.providers, StudyProviderCliConfigV1),
                                Selection(None, 0, None), environ=os.environ, base=Path.cwd())


def test_the_local_executor_judges_as_the_runner_does(study: tuple[ControlledExample, Path]) -> None:
    example, ledger = study
    own = adjudicate_ledger(_prepared(example, ledger), environ=os.environ, concurrency=2)
    executor = LocalExecutor(2, {})
    try:
        seam = adjudicate_ledger(_prepared(example, ledger), environ=os.environ, concurrency=2, executor=executor)
    finally:
        executor.close(cancel=False)
    outcome = [(o.adjudication.status, o.adjudication.outcome) for o in own.model.observations]
    assert [(o.adjudication.status, o.adjudication.outcome) for o in seam.model.observations] == outcome
    assert {status for status, _ in outcome} == {"automated"}


def test_a_dead_adjudicator_worker_is_not_recorded_and_stops_admission(study: tuple[ControlledExample, Path]) -> None:
    example, ledger = study
    verdicts: list[Any] = []
    dead = DeadWorkers()
    with pytest.raises(WorkerDiedError, match="worker of its adjudicator died"):
        adjudicate_ledger(_prepared(example, ledger), environ=os.environ, concurrency=2, executor=dead,
                          on_verdict=lambda verdict, _: verdicts.append(verdict))
    assert verdicts == [] and dead.submitted <= 2  # of 12: admission stopped at the first death


def test_a_dead_execution_worker_is_not_recorded_and_stops_admission(study: tuple[ControlledExample, Path],
                                                                     tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    example, _ = study
    dead = DeadWorkers()
    monkeypatch.setattr(controlled_run, "open_controlled_executor", lambda *args, **kwargs: dead)
    inputs = RunInputs(read_contract(example.plan, ControlledStudyRunPlanV1), read_contract(example.suite,
                                                                                            StudyTaskSuiteV1),
                       read_contract(example.providers, StudyProviderCliConfigV1),
                       read_contract(example.repositories, StudyRepositoryConfigV1))
    ledger = tmp_path / "ledger.json"
    with pytest.raises(WorkerDiedError, match=r"execution 1 .*not recorded and was not run again"):
        run_controlled_study(inputs, RunOptions(ledger, concurrency=2, executor="ray", ray_address="127.0.0.1:1"),
                             environ=os.environ)
    assert not ledger.exists() and dead.submitted <= 2


@pytest.mark.parametrize(("flags", "said"), [
    (["--executor", "ray", "--concurrency", "4"], "--executor ray needs --concurrency above 1 and --ray-address"),
    (["--executor", "ray", "--ray-address", "127.0.0.1:6379"], "--executor ray needs --concurrency above 1"),
    (["--ray-address", "127.0.0.1:6379", "--concurrency", "2"], "--ray-address goes with --executor ray"),
])
@pytest.mark.parametrize("command", ["run", "adjudicate", "adjudicate-controlled"])
def test_every_runner_refuses_executor_flags_that_cannot_mean(study: tuple[ControlledExample, Path], tmp_path: Path,
                                                              command: str, flags: list[str], said: str) -> None:
    example, ledger = study
    output = tmp_path / "out.json"
    argv = {"run": run_args(example, output),
            "adjudicate": ["adjudicate", str(ledger), str(example.suite), "--adjudicator", str(example.providers),
                           "--output", str(output)],
            "adjudicate-controlled": ["adjudicate-controlled", str(ledger), str(example.suite), "--adjudicator",
                                      str(example.providers), "--output", str(output)]}[command]
    assert said in one_error_line(cli(*argv, *flags))
    assert not output.exists()
