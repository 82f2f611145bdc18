"""``agentstudy export LEDGER… --format atif|parquet|csv --output PATH``: a study's attempts for other tools."""

from __future__ import annotations

from pathlib import Path

import click

from agentstudy.commands.common import fail
from agentstudy.commands.run_options import partial_chain_option


@click.command()
@click.argument("ledgers", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "output_format", type=click.Choice(["atif", "parquet", "csv"]), required=True,
              help="atif: a directory of ATIF v1.8 trajectories, one per attempt; parquet or csv: one tidy table, "
                   "one row per attempt.")
@click.option("--output", type=click.Path(path_type=Path), required=True,
              help="A new path (a directory for atif, a file otherwise); never an existing one.")
@click.option("--adjudication", "adjudications", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The adjudication companion (one per ledger of a chain): adds correctness.")
@click.option("--manifest", type=click.Path(path_type=Path, dir_okay=False),
              help="The study file the run used: adds each task's repository (when the ledger does not record "
                   "it) and category.")
@click.option("--with-answers", is_flag=True, help="Add the agents' answers to the table (column `answer`).")
@partial_chain_option
def export(ledgers: tuple[Path, ...], output_format: str, output: Path, adjudications: tuple[Path, ...],
           manifest: Path | None, with_answers: bool, partial_chain: bool) -> None:
    """Export a study's attempts: ATIF trajectories or a tidy table (Parquet, CSV).

    Several ledgers are a chain of runs, oldest first, as for `agentstudy report`. Every ledger must verify.

    atif writes one trajectory per attempt (`attempt-NNNNN.json`, NNNNN its position in the schedule)
    from the private transcript beside the ledger: steps, tool calls with their ids, arguments and results,
    per-step and final token metrics, and the study's facts under `extra.agentstudy`. Trajectories hold
    the transcript's text, answers included: they are private.

    parquet and csv write one row per attempt; the columns and their types are in docs/export.md. The
    table carries no answer text unless --with-answers.

    Every file is new, mode 0600 (a directory 0700), and appears whole or not at all. Exit codes: 0
    written; 2 bad input (an unreadable or unverified ledger, a missing or altered transcript, an existing
    --output).
    """
    from agentstudy.io.export_files import ExportError, write_csv, write_json_directory, write_parquet
    from agentstudy.io.transcripts import TranscriptError
    from agentstudy.protocol.manifest import ManifestError, load_manifest
    from agentstudy.report.atif import trajectory
    from agentstudy.report.model import NotSupportedYet, ReportInputError
    from agentstudy.report.observed import attempt_steps, load_observed
    from agentstudy.report.tidy import columns, tidy_rows

    if output.exists() or output.is_symlink():
        fail(f"--output {output} already exists; an export never replaces anything")
    tasks: dict[str, tuple[str, str]] = {}
    if manifest is not None:
        try:
            loaded = load_manifest(manifest)
        except ManifestError as error:
            fail(f"--manifest {manifest}: {error}")
        tasks = {task.id: (task.repository, task.category) for task in loaded.manifest.tasks}
    try:
        study = load_observed(list(ledgers), list(adjudications), partial_chain=partial_chain)
        if study.study.chain_missing:
            click.echo(f"agentstudy: warning: PARTIAL CHAIN: {len(study.study.chain_missing)} earlier run(s) of "
                       "this study were not given; the export holds this part only", err=True)
        if output_format == "atif":
            documents = [(f"attempt-{item.position:05d}.json", trajectory(study, item, attempt_steps(item)))
                         for item in study.attempts]
            count = write_json_directory(output, documents)
        else:
            rows = tidy_rows(study, tasks, with_answers)
            if output_format == "csv":
                write_csv(output, [name for name, _, _ in columns(with_answers)], rows)
            else:
                write_parquet(output, [(name, kind) for name, kind, _ in columns(with_answers)], rows)
            count = len(rows)
    except (ReportInputError, NotSupportedYet, TranscriptError, ExportError) as error:
        fail(str(error))
    except OSError as error:
        fail(f"cannot write {output}: {error.strerror or error}")
    click.echo(f"{count} attempts -> {output}")
