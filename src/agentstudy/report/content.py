"""The report's content, following the protocol's reporting rules, as a format-neutral document.

Sections: the result at a glance (:mod:`agentstudy.report.glance`); what the report is and the
fixed sentences; containment by arm (mechanism, what was not achieved, refused out-of-export
reads); every attempt's status (attempts that did not complete listed with reasons, never
dropped); the task-level statistics per metric (design, estimate, test-inverted interval,
sign-flip p), per task, variance components, then the descriptive per-pair differences;
correctness; distributions per scenario; usage, spend and (for a pilot) extrapolations;
re-pricing; the appendix of provenance (hashes, pins, versions);
power planning (:mod:`report.power_section`) before it. No answer text is ever included.
"""

from __future__ import annotations

from agentstudy.protocol.ledger_integrity import few_problems
from agentstudy.report import fmt
from agentstudy.report.analysis import CORRECTNESS, REPRICED, Analysis, Metric, Pair
from agentstudy.report.containment import LEGEND, containment_rows, containment_sentences
from agentstudy.report.content_inference import inference_blocks
from agentstudy.report.content_money import correctness_section, distribution_section, money_section
from agentstudy.report.document import Block, Bullets, Document, Figure, Paragraph, Section, Table, WarningBox
from agentstudy.report.glance import glance_section, stopped_appendix
from agentstudy.report.infrastructure import (
    any_recorded,
    infrastructure_rows,
    infrastructure_sentences,
    infrastructure_table_rows,
)
from agentstudy.report.methods import METHOD_REFERENCES, order_note
from agentstudy.report.model import BASELINE, SCENARIOS, TREATMENT, Attempt, Study
from agentstudy.report.power_section import MetricPlan, power_section
from agentstudy.report.sentences import (
    ADJUDICATED_SENTENCE,
    REDUCTION_SENTENCE,
    UNVERIFIED_SENTENCE,
    fixed_sentences,
)
from agentstudy.report.treatment import not_delivered, summarize_treatment


def run_status(study: Study) -> str:
    """The run's status as a reader should take it (issue 42): a run that ended ``awaiting-adjudication`` and is
    reported with its companion reads "adjudicated (complete: 2 scored, 0 pending; the run ended
    awaiting-adjudication)"; otherwise the ledger's own status."""
    status = study.header.get("status", fmt.MISSING)
    companion = study.adjudication
    if companion is None or status != "awaiting-adjudication":
        return status
    return (f"adjudicated ({companion.status}: {companion.scored} scored, {companion.pending} pending; "
            f"the run ended {status})")


def provenance_section(analysis: Analysis) -> Section:
    """The appendix: the study's and this report's inputs (ledger hash, pins, versions, times, adjudication,
    interval settings), one row each."""
    study = analysis.study
    head = study.header
    rows: list[tuple[str, str]] = [("ledger", study.file_name), ("ledger SHA-256", study.sha256)]
    for key, label in (("version", "version"), ("transport", "transport"), ("model", "model"), ("mode", "mode"),
                       ("status", "run status"), ("plannedAttempts", "planned attempts")):
        rows.append((label, run_status(study) if key == "status" else head.get(key, fmt.MISSING)))
    rows.append(("observed attempts", str(len(study.attempts))))
    rows.append(("verification", f"NOT VERIFIED: {few_problems(study.unverified)}" if study.unverified else
                 "verified: ledgerHash and every observationHash match; the invariants hold"))
    rows.append(("rehearsal", "yes" if study.rehearsal else "no"))
    rows.append(("MCP server", study.server_name or fmt.MISSING))
    rows.append(("arms", "; ".join(f"{study.arm_name(s)} (ledger scenario {s})" for s in SCENARIOS)))
    for key in ("cliVersion", "upperPrices", "repositories", "mcpPreparation", "protocolHash", "manifestSha256",
                "runnerHash", "engineRevision", "engineBundleHash", "startedAt", "finishedAt", "runs"):
        if key in head:
            rows.append((key, head[key]))
    adjudication = study.adjudication
    if adjudication is None:
        rows.append(("adjudication", "none given"))
    else:
        models = ", ".join(adjudication.adjudicator_models) or fmt.MISSING
        binding = "each bound to its run's ledger SHA-256" if study.runs else "bound to this ledger's SHA-256"
        rows.append(("adjudication", f"{adjudication.file_name}: {binding} (verified); "
                                     f"status {adjudication.status}; adjudicator {models}; method agent, "
                                     f"no human review"))
    rows.append(("interval", f"the test of the mean inverted at alpha {analysis.alpha:g}: the exact sign-flip "
                             f"test's (Monte Carlo above 16 tasks, seed {analysis.seed}), from 10 tasks joined with "
                             "the skewness-corrected bootstrap-t's (Hall 1992)"))
    table = Table("about", "The study and this report's inputs", ("field", "value"), tuple(rows))
    return Section(PROVENANCE_TITLE, (table,))


def _about(analysis: Analysis) -> Section:
    study = analysis.study
    warning = (Paragraph(UNVERIFIED_SENTENCE + " First: " + study.unverified[0]),) if study.unverified else ()
    where = Paragraph(f"Provenance (ledger hash, pins, versions, times) is in the last section, {PROVENANCE_TITLE}.")
    methods = Paragraph("Methods and their references:")
    return Section("About this report", (*warning, Bullets(fixed_sentences(study)), where, methods,
                                         Bullets((*METHOD_REFERENCES, order_note(study.order, study.order_seed)))))


def _containment(analysis: Analysis) -> Section:
    rows = containment_rows(analysis.study.attempts, analysis.study.arm_name)
    table = Table("containment", "Containment by arm",
                  ("arm", "attempts", "mechanism", "not achieved", "refused out-of-export reads"),
                  tuple((r.label, str(r.attempts), r.mechanism_cell(), r.not_achieved_cell(), r.refused_cell())
                        for r in rows), frozenset({1, 4}))
    blocks: list[Block] = [table, *(Paragraph(s) for s in containment_sentences(rows)), Paragraph(LEGEND)]
    return Section("Containment", tuple(blocks))


def _infrastructure(analysis: Analysis) -> Section | None:
    """Retries and infrastructure failures by arm (issue 33); ``None`` when no attempt records its retries."""
    rows = infrastructure_rows(analysis.study.attempts, analysis.study.arm_name)
    if not any_recorded(rows):
        return None
    table = Table("infrastructure", "Retries and infrastructure failures by arm",
                  ("arm", "attempts", "API retries", "retry wait s", "infrastructure failures", "wall time s",
                   "wall time s without retry wait"), infrastructure_table_rows(rows), frozenset({1, 2, 3, 5, 6}))
    return Section("Retries and infrastructure failures",
                   (table, *(Paragraph(s) for s in infrastructure_sentences(rows))))


def _correctness_cell(attempt: Attempt) -> str:
    if attempt.adjudication == "scored" and attempt.correctness is not None:
        return f"{attempt.correctness:.2f} ({attempt.rubric})" if attempt.rubric else f"{attempt.correctness:.2f}"
    return attempt.adjudication


def _repriced_cell(analysis: Analysis, attempt: Attempt) -> str:
    entry = analysis.repriced.get(attempt.index)
    if entry is None or entry.usd is None:
        return fmt.MISSING
    return fmt.usd(entry.usd) + (" (lower bound)" if entry.lower_bound else "")


def _notes(attempt: Attempt) -> str:
    notes = list(attempt.reasons) + list(attempt.notes)
    if attempt.adjudication == "pending" and attempt.pending_reason:
        notes.append(f"adjudication pending: {attempt.pending_reason}")
    return "; ".join(notes)


def _attempts(analysis: Analysis) -> Section:
    study = analysis.study
    header = ["#", "task", "rep", "arm", "status", "input tokens", "output tokens", "tool calls", "wall ms",
              "charged USD"]
    if analysis.prices is not None:
        header.append("re-priced USD")
    if study.adjudication is not None:
        header.append("correctness")
    header.append("notes")
    rows = []
    for a in study.attempts:
        row = [str(a.index + 1), a.task_id, str(a.repetition), study.arm_name(a.scenario), a.status,
               fmt.count(a.input_tokens), fmt.count(a.output_tokens), fmt.count(a.tool_calls),
               fmt.count(a.wall_time_ms), fmt.usd(a.charged_usd)]
        if analysis.prices is not None:
            row.append(_repriced_cell(analysis, a))
        if study.adjudication is not None:
            row.append(_correctness_cell(a))
        row.append(_notes(a))
        rows.append(tuple(row))
    blocks: list[Block] = [Table("attempts", "Every attempt in execution order (— : not recorded)", tuple(header),
                                 tuple(rows), frozenset(range(5, 10)))]
    failed = [a for a in study.attempts if not a.completed]
    if failed:
        blocks.append(Table(
            "not-completed", "Attempts that did not complete (kept, never dropped)",
            ("#", "task", "rep", "arm", "status", "charged USD", "reasons"),
            tuple((str(a.index + 1), a.task_id, str(a.repetition), study.arm_name(a.scenario), a.status,
                   fmt.usd(a.charged_usd), "; ".join(a.reasons + a.notes) or "no further reason recorded")
                  for a in failed),
            frozenset({5}),
        ))
    else:
        blocks.append(Paragraph(f"Every one of the {len(study.attempts)} observed attempts completed."))
    if study.planned is not None and study.planned > len(study.attempts):
        missing = study.planned - len(study.attempts)
        blocks.append(Paragraph(f"{missing} of {study.planned} planned attempts were not run."))
    if study.status == "blocked" or study.stop_reason:
        blocks.append(Paragraph(f"The run ended {study.status or 'without a status'}: "
                                f"{study.stop_reason or 'no stop reason recorded'}."))
    if study.open_reservation_usd is not None:
        blocks.append(Paragraph(f"An attempt's reservation of {fmt.usd(study.open_reservation_usd)} USD was never "
                                "settled (the run was interrupted); it stays charged."))
    return Section("Attempts", tuple(blocks))


def _left_out(pair: Pair, metrics: tuple[Metric, ...]) -> str:
    if pair.unusable is not None:
        return f"all metrics: {pair.unusable}"
    return "; ".join(f"{m.label}: {pair.excluded[m.key]}" for m in metrics if m.key in pair.excluded)


def _attempt_number(attempt: Attempt | None) -> str:
    return fmt.MISSING if attempt is None else str(attempt.index + 1)


def _pairs(analysis: Analysis) -> Section:
    metrics, study = analysis.metrics, analysis.study
    base, treat = study.arm_name(BASELINE), study.arm_name(TREATMENT)
    header = ("task", "rep", f"{base} #", f"{treat} #", *(f"Δ {m.label}" for m in metrics), "left out")
    rows = tuple(
        (p.task_id, str(p.repetition), _attempt_number(p.baseline), _attempt_number(p.treatment),
         *(fmt.signed(p.differences.get(m.key), m.kind) for m in metrics), _left_out(p, metrics))
        for p in analysis.pairs
    )
    per_pair = Table("pairs", f"Per task and repetition, descriptive only: {treat} − {base} "
                              f"(negative: the {treat} attempt used less; repetition numbers "
                              "pair attempts arbitrarily, so no statistic uses these pairs)",
                     header, rows, frozenset(range(2, 4 + len(metrics))))
    fidelity = summarize_treatment(analysis.study)
    warning: list[Block] = [] if fidelity.delivered else [WarningBox(
        not_delivered(fidelity, study.server))]
    blocks: list[Block] = [*warning, *inference_blocks(analysis), per_pair]
    if any(r.metric is CORRECTNESS for r in analysis.results):
        blocks.append(Paragraph(ADJUDICATED_SENTENCE + " " + REDUCTION_SENTENCE))
    if any(r.metric is REPRICED for r in analysis.results):
        blocks.append(Paragraph("Re-priced USD prices each attempt's recorded usage under the --prices table; "
                                "it is what the study would have cost there, not what was charged."))
    return Section(f"Paired differences ({treat} − {base})", tuple(blocks))



PROVENANCE_TITLE = "Appendix: provenance"
FIGURE_PLACES = {"plot-sequential": 0, "plot-status": 3, "plot-differences": 4, "plot-distributions": 6}
"""Which section (index) each figure ends: a sequential study's e-value path the first screen (issue 35), the
status strip under the attempts, the task differences under their statistics, the distributions under their
table."""


def report_title(study: Study, kind: str = "Paired report") -> str:
    """The report's title (issue 42): the server studied and the study's repositories, then the mode, e.g.
    "Paired report: doc-bridge on lantern-cache (pilot)"; "UNVERIFIED " first for a ledger that did not verify.
    The contract's name (``agentstudy-study-v1``) stays in the provenance table."""
    names = [part.partition("@")[0] for part in study.header.get("repositories", "").split(", ") if part]
    mode = f" ({study.mode})" if study.mode else ""
    title = f"{kind}: {study.server}" + (f" on {', '.join(names)}" if names else "") + mode
    return f"UNVERIFIED {title}" if study.unverified else title


def build_document(analysis: Analysis, figures: tuple[Figure, ...] = (), *,
                   plans: tuple[MetricPlan, ...] | None = None) -> Document:
    """The whole report of ``analysis``; each of ``figures`` (HTML only) ends the section it illustrates
    (:data:`FIGURE_PLACES`; an unknown key ends the last section). ``plans``: :func:`power_plans` of ``analysis``
    when the caller already holds them (else the power section simulates them)."""
    study = analysis.study
    title = report_title(study)
    if study.chain_missing:
        title = f"PARTIAL CHAIN {title}"
    infrastructure = _infrastructure(analysis)
    sections = [glance_section(analysis), _about(analysis), _containment(analysis),
                _attempts(analysis), _pairs(analysis), correctness_section(analysis), distribution_section(analysis),
                money_section(analysis), power_section(analysis, plans),
                *([infrastructure] if infrastructure is not None else []),  # after the figures' places
                provenance_section(analysis)]
    for figure in figures:
        index = FIGURE_PLACES.get(figure.key, len(sections) - 1)
        sections[index] = Section(sections[index].title, (*sections[index].blocks, figure))
    stopped = stopped_appendix(analysis)  # after a sequential stop: the fixed-design figures, last (issue 41 item 7)
    return Document(title, (*sections, *([stopped] if stopped is not None else [])))
