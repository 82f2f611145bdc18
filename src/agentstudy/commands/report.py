"""``agentstudy report LEDGER``: the paired report of a minimal study in text, Markdown, HTML or JSON."""

from __future__ import annotations

from pathlib import Path

import click

from agentstudy.commands.common import fail
from agentstudy.commands.run_options import partial_chain_option


@click.command()
@click.argument("ledgers", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--adjudication", "adjudications", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The adjudication companion; its ledgerSha256 must be the SHA-256 of LEDGER's bytes (a chain "
                   "of runs: one per ledger, in the same order).")
@click.option("--format", "output_format", type=click.Choice(["text", "md", "html", "json"]), default="text",
              show_default=True, help="text and md carry the tables; html adds inline SVG plots; json holds every "
                                      "number of the report, machine-readable.")
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report to FILE (atomically, mode 0600, replacing it) instead of stdout; "
                   "never one of the inputs (nor the ledger's journal).")
@click.option("--prices", type=click.Path(path_type=Path, dir_okay=False),
              help="Re-price every attempt's recorded usage with this price table (format below).")
@click.option("--manifest", type=click.Path(path_type=Path, dir_okay=False),
              help="The study file the ledger was run from: names each task's repository for a ledger written "
                   "before observations recorded it (its SHA-256 must be the ledger's manifestSha256).")
@click.option("--allow-unverified", is_flag=True,
              help="Report even when the ledger does not verify (its hashes or, for a minimal ledger, its "
                   "invariants); the problems are printed as a warning and the report says UNVERIFIED.")
@partial_chain_option
def report(ledgers: tuple[Path, ...], adjudications: tuple[Path, ...], output_format: str, output: Path | None,
           prices: Path | None, manifest: Path | None, allow_unverified: bool, partial_chain: bool) -> None:
    """Report a minimal-study LEDGER: every attempt's status, paired differences, spend.

    Several ledgers are a chain of runs, oldest first (`report A.json B.json`, where B's run continued A's
    with --continue-from): each must verify and name the one before it; the report covers the whole study,
    says which attempts came from which run (json: `runs`) and keeps an attempt that failed in an earlier
    run as evidence, its cell answered by the later run. With a chain, --adjudication is given once per
    ledger in the same order (as `agentstudy adjudicate A.json B.json` writes them), or not at all.

    The task is the unit of analysis: per task, each arm's mean over its repetitions and their
    difference (the arm with the server minus the arm without it) in input and output tokens, tool calls,
    wall time, charged USD and (with --adjudication) correctness; per metric the mean task
    difference with its design ("6 tasks × 3 repetitions"), the p-value of the test of the mean over
    the task differences (the sign-flip test and, from 10 tasks, the skewness-corrected bootstrap-t)
    and the interval that test does not reject (Holm-adjusted p for secondary
    metrics, the declared primary endpoint first), ratios for tokens, time and money,
    correctness as intention to treat with per-arm rates, and the variance components
    (between-task, task × arm, within-task per arm, ICC). --format json writes every number as
    JSON. Answers are never printed.
    A pilot shows charged spend x 18 for the seed's 2-attempt pilot (in general x full attempts /
    pilot attempts, e.g. x 4.5; not an upper bound) beside the dearest attempt x the full attempts.

    \b
    --prices FILE is JSON (numbers in USD per million tokens; unknown keys refused):
      {"priceAs": "claude-sonnet-5-5",
       "models": {"claude-sonnet-5-5": {"source": "list price 2026-11-30",
                                        "tiers": [{"input": 2, "output": 10}],
                                        "tierThresholdTokens": 100000}}}
    "priceAs" names the model every attempt is priced as; one or two tiers (the second
    applies to every token of an attempt whose largest prompt exceeds tierThresholdTokens,
    default 100000, and is never cheaper); rates are numbers or decimal strings >= 0; cache
    reads cost 0.1 x input, 5-minute writes 1.25 x, 1-hour writes 2 x.

    The ledger must verify (`agentstudy ledger` names the checks): its ledgerHash and every
    observationHash, and the invariants (spent = charges + open reservations, each task,
    scenario and repetition once, finite money >= 0, the status consistent with the
    observations, rehearsal with the base URL). A ledger that does not, or one written before
    ledgers were hashed, is refused naming the first problem; --allow-unverified reports it
    anyway, UNVERIFIED in the title and the first section.

    A controlled-study ledger is reported as its `agentstudy metrics` text (json: as `agentstudy metrics --json`
    writes it), or in md/html as a
    document: groups with Wilson intervals and the columns explained, tasks per scenario (a
    warning where scenarios ran different tasks), round comparisons, the task-level paired
    analysis where tasks ran in two scenarios, and (html) plots; --allow-unverified as for
    `agentstudy ledger`. Exit codes: 0 written; 2 bad
    input (unreadable, invalid or unverified ledger, companion or price file, a companion
    bound to another ledger).
    """
    from agentstudy.io.ledger_store import journal_path
    from agentstudy.report.build import render_study, write_report
    from agentstudy.report.chain import load_chain
    from agentstudy.report.load_repositories import with_manifest_repositories
    from agentstudy.report.model import NotSupportedYet, ReportInputError

    ledger = ledgers[-1]
    if adjudications and len(adjudications) != len(ledgers):
        fail(f"{len(ledgers)} ledgers take {len(ledgers)} --adjudication companions, one per ledger in the same "
             f"order (got {len(adjudications)})")
    if output is not None:
        target = output.expanduser().resolve()
        inputs = [path.expanduser().resolve() for path in (*ledgers, *adjudications, prices) if path is not None]
        inputs.extend(journal_path(each.expanduser().resolve()) for each in ledgers)
        if target in inputs:
            fail(f"--output {output} is one of the inputs; the ledger, its journal and its companion are never "
                 "overwritten")
    try:
        study = load_chain(ledgers, allow_unverified=allow_unverified, adjudications=adjudications,
                           partial_chain=partial_chain)
        if manifest is not None:
            study = with_manifest_repositories(study, manifest)
        if study.unverified:
            from agentstudy.protocol.ledger_integrity import few_problems

            click.echo(f"agentstudy: warning: unverified: {ledger}: {few_problems(study.unverified)}", err=True)
        text = render_study(study, prices, output_format)
    except NotSupportedYet:
        text = controlled_report(ledger, output_format, allow_unverified)
    except ReportInputError as error:
        fail(str(error))
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        write_report(output.expanduser().resolve(), text)
    except OSError as error:
        fail(f"cannot write {output}: {error.strerror or error}")
    click.echo(f"report written: {output}", err=True)


def controlled_report(ledger: Path, output_format: str, allow_unverified: bool) -> str:
    """A controlled-study ledger's report: ``agentstudy metrics``' text, or a document in Markdown or HTML
    (tables, Wilson intervals, the columns explained, a warning where scenarios ran different tasks, the
    task-level paired analysis where tasks ran in two scenarios, and in HTML SVG plots; issue 17 item 6).

    Exits 2 with one line when the ledger cannot be read or does not verify (without
    ``allow_unverified``).
    """
    from agentstudy.commands.metrics import metrics_and_observations, render_metrics
    from agentstudy.controlled.report_document import controlled_document
    from agentstudy.report.render import render

    if output_format == "json":
        from agentstudy.commands.metrics import metrics_report
        from agentstudy.protocol.controlled.hashing import js_json

        return js_json({"metrics": metrics_report(ledger, allow_unverified=allow_unverified)}, indent=2) + "\n"
    report, observations = metrics_and_observations(ledger, allow_unverified=allow_unverified)
    if output_format == "text":
        return "\n".join(render_metrics(report)) + "\n"
    title = f"Controlled-study metrics: {ledger.name}"
    document = controlled_document(title, report, observations, figures=output_format == "html")
    return render(document, output_format)
