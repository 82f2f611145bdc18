"""``agentstudy adjudicate-controlled LEDGER SUITE``: independent adjudication of a controlled ledger (digest 5.10).

The issue names this ``agentstudy adjudicate LEDGER SUITE --adjudicator FILE --output FILE``;
``agentstudy adjudicate`` currently serves minimal-study ledgers, so the controlled form lives
here until the two are merged (dispatch on the ledger's ``type``), behind the plain function
``adjudicate_controlled_command``.

Exit codes: 0 every selected observation was adjudicated (``automated``); 1 the output was
written but some stayed ``pending`` (the adjudicator failed for them) or the command stopped
after it started; 2 bad input or a refusal before any adjudicator started (nothing written).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentstudy.commands.common import EXIT_BLOCKED, EXIT_OK, fail, stops_on_signals
from agentstudy.commands.contract_files import text_or_json
from agentstudy.commands.run_options import concurrency_option, executor_options

if TYPE_CHECKING:
    from agentstudy.controlled.adjudicate import Verdict
    from agentstudy.protocol.controlled.ledger import Ledger

_FILE = click.Path(path_type=Path, dir_okay=False)


def adjudicate_controlled_command(ledger_path: Path, suite_path: Path, adjudicator_path: Path, output_path: Path,
                                  run_id: str | None = None, offset: int = 0, limit: int | None = None, *,
                                  show_progress: bool = False, concurrency: int = 1, executor: str = "local",
                                  ray_address: str | None = None) -> tuple[dict[str, Any], int]:
    """Verify the inputs, adjudicate the selection, write ``output_path`` (new, 0600); return the summary
    and the exit code. Exits 2 with one line on bad input, 1 when stopped after starting.

    The output file is created exclusively before the first adjudicator starts (holding the
    unchanged ledger) and rewritten atomically after each verdict, so an interrupted run leaves
    a valid ledger with every verdict so far. The input ledger is only read. ``concurrency``
    adjudicators run at once (issue 19); verdicts are applied and persisted in ledger order. With
    ``executor="ray"`` the children run on the cluster at ``ray_address`` (issue 20; ``controlled.remote``).
    """
    from agentstudy.commands.contract_files import read_contract
    from agentstudy.controlled.adjudicate import (
        AdjudicationInputError,
        Selection,
        adjudicate_ledger,
        prepare_adjudication,
    )
    from agentstudy.controlled.ledger_file import LedgerFileError, create_ledger_file, persist_ledger
    from agentstudy.controlled.remote import WorkerDiedError, open_controlled_executor
    from agentstudy.io.signals import StopRequested
    from agentstudy.protocol.controlled.config import StudyProviderCliConfigV1
    from agentstudy.protocol.controlled.contracts import ContractError
    from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
    from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
    from agentstudy.runners.preflight import PreflightError
    ledger = read_contract(ledger_path, ControlledStudyObservationLedgerV1)
    suite = read_contract(suite_path, StudyTaskSuiteV1)
    config = read_contract(adjudicator_path, StudyProviderCliConfigV1)
    target = output_path.absolute()
    if target.exists() or target.is_symlink():
        fail(f"--output {output_path} already exists; the output must be a new file")
    if not target.parent.is_dir():
        fail(f"--output directory does not exist: {target.parent}")
    results: Counter[str] = Counter()
    adjudications: Counter[str] = Counter()

    def record(verdict: Verdict, current: Ledger) -> None:
        persist_ledger(target, current)
        results[verdict.result] += 1
        adjudications[verdict.status] += 1
        if show_progress:
            click.echo(f"[{sum(results.values())}] observation {verdict.index + 1} ({verdict.task_id}): "
                       f"{verdict.result} → {verdict.status}", err=True)

    with ExitStack() as stack:
        try:
            prepared = prepare_adjudication(ledger, suite, config, Selection(run_id, offset, limit),
                                            environ=os.environ, base=Path.cwd())
            remote = None if executor != "ray" else open_controlled_executor(
                stack, ray_address=ray_address, concurrency=concurrency, commands=(prepared.command,), directories=())
            create_ledger_file(target, ledger)
        except (AdjudicationInputError, LedgerFileError, PreflightError) as error:
            fail(str(error))
        try:
            result = adjudicate_ledger(prepared, environ=os.environ, on_verdict=record, concurrency=concurrency,
                                       executor=remote)
            persist_ledger(target, result)
        except StopRequested as stop:
            raise StopRequested(stop.signum, f"--output {target} holds every verdict made before the stop") from None
        except (ContractError, OSError, WorkerDiedError) as error:
            fail(f"adjudication stopped: {error}", EXIT_BLOCKED)
    selected = sum(results.values())
    summary = {"status": "completed", "runId": run_id, "selected": selected, "byResult": dict(results),
               "byAdjudication": dict(adjudications), "output": str(target), "ledgerHash": result.content_hash,
               "inputLedgerHash": ledger.content_hash, "configurationHash": config.content_hash}
    return summary, EXIT_OK if adjudications["automated"] == selected else EXIT_BLOCKED


def render_adjudication(summary: dict[str, Any]) -> list[str]:
    """Aligned text lines of an adjudication summary."""
    from agentstudy.commands.contract_files import aligned, counts
    return aligned([("Adjudicated", f"{summary['selected']} observation(s)"
                                    + (f" of run {summary['runId']}" if summary["runId"] else "")),
                    ("Adjudicator", counts(summary["byResult"])),
                    ("Adjudication", counts(summary["byAdjudication"])),
                    ("Output", summary["output"]), ("Output hash", summary["ledgerHash"]),
                    ("Input hash", f"{summary['inputLedgerHash']} (unchanged)"),
                    ("Configuration", summary["configurationHash"])])


@click.command("adjudicate-controlled")
@click.argument("ledger", type=_FILE)
@click.argument("suite", type=_FILE)
@click.option("--adjudicator", "adjudicator_path", type=_FILE, required=True,
              help="Provider CLI config whose `adjudicator` entry names the independent adjudicator.")
@click.option("--output", "output_path", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="New ledger file to write (never overwritten; the input ledger is left untouched).")
@click.option("--run-id", help="Adjudicate only observations of this run id.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True,
              help="Skip this many matching observations (they are copied unchanged).")
@click.option("--limit", type=click.IntRange(min=1), help="Adjudicate at most this many matching observations.")
@concurrency_option("Adjudicators", "the output holds the same verdicts as with 1.")
@executor_options
@text_or_json
@stops_on_signals
def adjudicate_controlled(ledger: Path, suite: Path, adjudicator_path: Path, output_path: Path, run_id: str | None,
                          offset: int, limit: int | None, concurrency: int, executor: str, ray_address: str | None,
                          as_text: bool) -> None:
    """Have an independent adjudicator judge the observations of a controlled LEDGER against SUITE.

    The adjudicator runs as a separate process per observation and sees only the task and an
    anonymised, bounded candidate record: no paths, prompts, raw output or credentials. A
    failure leaves the observation pending, never approved. Actor, method, configuration
    hash, tokens, latency and cost are recorded; the result is written to --output.
    """
    from agentstudy.commands.run_options import executor_choice
    chosen = executor_choice(executor, ray_address, concurrency)
    sys.exit(run_and_print(ledger, suite, adjudicator_path, output_path, run_id, offset, limit, as_text,
                           concurrency, chosen, ray_address))


def run_and_print(ledger: Path, suite: Path, adjudicator_path: Path, output_path: Path, run_id: str | None,
                  offset: int, limit: int | None, as_text: bool, concurrency: int = 1, executor: str = "local",
                  ray_address: str | None = None) -> int:
    """Adjudicate a controlled ledger, print the summary (text or JSON) and return the exit code.

    Shared by ``agentstudy adjudicate`` (which dispatches here on a controlled ledger) and
    ``agentstudy adjudicate-controlled``.
    """
    summary, code = adjudicate_controlled_command(ledger, suite, adjudicator_path, output_path, run_id, offset, limit,
                                                  show_progress=sys.stderr.isatty(), concurrency=concurrency,
                                                  executor=executor, ray_address=ray_address)
    if as_text:
        click.echo("\n".join(render_adjudication(summary)))
    else:
        click.echo(json.dumps({"ok": code == EXIT_OK, "summary": summary}, ensure_ascii=False, indent=2))
    return code
