"""``agentstudy run PLAN SUITE``: run a controlled study with provider commands (seed 004; digest 5.8).

Exit codes: 0 the run (or dry run) finished — every selected execution is in the ledger,
whatever its status; 1 the run stopped after it started (the ledger holds every observation
made so far); 2 bad input or a refusal before any provider started (nothing written); 128 + n stopped by signal n
(the ledger holds every observation recorded before it).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentstudy.commands.common import EXIT_BLOCKED, fail, stops_on_signals
from agentstudy.commands.contract_files import text_or_json
from agentstudy.commands.run_options import concurrency_option, executor_options

if TYPE_CHECKING:
    from agentstudy.controlled.command import AttemptReport
    from agentstudy.controlled.preflight import PlannedExecution
    from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1

_FILE = click.Path(path_type=Path, dir_okay=False)


class TerminalProgress:
    """One stderr line per attempt and per recorded observation (identities and statuses only): a
    ``controlled.run.RunProgress``."""

    def execution_started(self, index: int, total: int, planned: PlannedExecution) -> None:
        """Name the execution about to run."""
        item = planned.execution
        click.echo(f"[{index}/{total}] {item['taskId']} · {item['scenarioId']} · {item['modelId']} · "
                   f"replicate {item['replicate']}", err=True)

    def attempt_settled(self, report: AttemptReport) -> None:
        """Show an attempt that did not complete (a retry may follow)."""
        if report.status != "completed":
            reason = f" ({report.error_code})" if report.error_code else ""
            click.echo(f"        attempt {report.number}: {report.status}{reason}", err=True)

    def execution_recorded(self, index: int, total: int, observation: ControlledStudyObservationV1) -> None:
        """Show the recorded status and the rubric's outcome."""
        execution = observation.execution
        click.echo(f"        {execution.status}, rubric {observation.adjudication.outcome}, "
                   f"{execution.duration_ms} ms", err=True)


def render_run(summary: dict[str, Any]) -> list[str]:
    """Aligned text lines of a run summary."""
    from agentstudy.commands.contract_files import aligned, counts
    rows = [("Run", f"{summary['runId']}  ({summary['status']})"),
            ("Planned", str(summary["planned"])),
            ("Executed", str(summary["executed"])),
            ("Skipped", f"{summary['skipped']} (already in the ledger for this run)")]
    if summary["status"] != "dry-run":
        rows += [("Status", counts(summary["byStatus"])), ("Rubric", counts(summary["byOutcome"])),
                 ("Ledger", summary["ledgerPath"]), ("Ledger hash", summary["ledgerHash"])]
    rows += [("Plan hash", summary["planHash"]), ("Suite hash", summary["taskSuiteHash"]),
             ("Provider config", summary["providerConfigHash"]),
             ("Repository config", summary["repositoryConfigHash"])]
    return aligned(rows)


def run_command(plan_path: Path, suite_path: Path, providers_path: Path, repositories_path: Path, ledger_path: Path,
                round_id: str | None, dry_run: bool, *, show_progress: bool, concurrency: int = 1,
                executor: str = "local", ray_address: str | None = None) -> dict[str, Any]:
    """Read and verify the four inputs, then run (or dry-run) the study; exit 2/1 with one line on failure.

    Returns:
        The run summary (see ``agentstudy.controlled.run.run_controlled_study``).
    """
    from agentstudy.commands.contract_files import read_contract
    from agentstudy.controlled.ledger_file import LedgerFileError
    from agentstudy.controlled.preflight import RunInputError, RunInputs
    from agentstudy.controlled.remote import WorkerDiedError
    from agentstudy.controlled.run import RunOptions, SilentRunProgress, run_controlled_study
    from agentstudy.protocol.controlled.config import StudyProviderCliConfigV1, StudyRepositoryConfigV1
    from agentstudy.protocol.controlled.contracts import ContractError
    from agentstudy.protocol.controlled.formats import REFERENCE_PATTERN
    from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1
    from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
    if round_id is not None and not re.fullmatch(REFERENCE_PATTERN, round_id):
        fail(f"--round {round_id!r} is not a reference (lowercase letters, digits, '.', '_', ':' or '-')")
    inputs = RunInputs(read_contract(plan_path, ControlledStudyRunPlanV1), read_contract(suite_path, StudyTaskSuiteV1),
                       read_contract(providers_path, StudyProviderCliConfigV1),
                       read_contract(repositories_path, StudyRepositoryConfigV1))
    progress = TerminalProgress() if show_progress else SilentRunProgress()
    try:
        options = RunOptions(ledger_path, round_id, dry_run, concurrency, "ray" if executor == "ray" else "local",
                             ray_address)
        return run_controlled_study(inputs, options, environ=os.environ, progress=progress)
    except (RunInputError, LedgerFileError) as error:
        fail(str(error))
    except (ContractError, OSError, WorkerDiedError) as error:
        fail(f"the run stopped: {error}", EXIT_BLOCKED)


@click.command("run")
@click.argument("plan", type=_FILE)
@click.argument("suite", type=_FILE)
@click.option("--providers", "providers_path", type=_FILE, required=True,
              help="Provider CLI config (study-provider-cli-config): the command of each model and scenario.")
@click.option("--repositories", "repositories_path", type=_FILE, required=True,
              help="Repository config (controlled-study-repository-config): one root per population id.")
@click.option("--ledger", "ledger_path", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="Observation ledger to create or extend (mode 0600), outside every repository root.")
@click.option("--round", "round_id", help="Round id recorded on every new observation.")
@click.option("--dry-run", is_flag=True, help="Check everything and print the planned count; start nothing.")
@concurrency_option("Executions", "a stop signal ends the running ones and records those that finished.")
@executor_options
@text_or_json
@stops_on_signals
def run(plan: Path, suite: Path, providers_path: Path, repositories_path: Path, ledger_path: Path,
        round_id: str | None, dry_run: bool, concurrency: int, executor: str, ray_address: str | None,
        as_text: bool) -> None:
    """Run the executions a controlled-study PLAN selects from SUITE, one provider child each.

    Before any provider starts, every file's content hash is verified and the plan, suite,
    providers and repositories are cross-checked (roots, commands, request sizes). Each
    execution runs with its repository root as working directory, bounded in time and output,
    with at most the plan's attempts; the deterministic rubric adjudicates it and the ledger is
    written after every observation. Executions already in the ledger for this run id are
    skipped; a ledger holding the run id under another plan hash is refused. Raw output,
    prompts, repository content and credentials are never recorded.
    """
    from agentstudy.commands.run_options import executor_choice
    chosen = executor_choice(executor, ray_address, concurrency)
    summary = run_command(plan, suite, providers_path, repositories_path, ledger_path, round_id, dry_run,
                          show_progress=not dry_run and sys.stderr.isatty(), concurrency=concurrency,
                          executor=chosen, ray_address=ray_address)
    if as_text:
        click.echo("\n".join(render_run(summary)))
    else:
        click.echo(json.dumps({"ok": True, "summary": summary}, ensure_ascii=False, indent=2))
