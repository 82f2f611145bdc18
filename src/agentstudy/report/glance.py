"""The report's first section, "Result at a glance" (issue 17, item 4): the answer before anything else.

Per metric — correctness first (when adjudicated), then input tokens, tool calls, wall time and
charged USD — one row: the direction in words ("1,250 more input tokens per task with
doc-bridge-mcp"), the task-level difference (mean over tasks of each task's arm-mean
difference, :mod:`agentstudy.report.inference`), its interval at the study's level, its p-value and the design
"k tasks × r repetitions". Below the table: whether the ledger is a rehearsal (and unverified),
the containment each arm achieved, and the caveats line. Provenance is in the appendix
(:func:`agentstudy.report.content.provenance_section`). Pure: no IO.
"""

from __future__ import annotations

from agentstudy.report import fmt
from agentstudy.report.analysis import CHARGED, CORRECTNESS, INPUT, TOOLS, WALL, Analysis, Metric
from agentstudy.report.containment import containment_rows, containment_sentences
from agentstudy.report.content_inference import level, primary_paragraph
from agentstudy.report.document import Block, Paragraph, Section, Table
from agentstudy.report.in_words import direction
from agentstudy.report.inference import TaskLevelSummary
from agentstudy.report.inference_endpoints import EXPLORATORY, PRIMARY, SECONDARY
from agentstudy.report.model import BASELINE, TREATMENT
from agentstudy.report.sentences import PARTIAL_CHAIN_SENTENCE, REHEARSAL_SENTENCE, UNVERIFIED_SENTENCE
from agentstudy.report.sequential import OPTIONALLY_STOPPED, sequential_sentences
from agentstudy.report.treatment import first_screen_blocks, summarize_treatment

TITLE = "Result at a glance"
STOPPED_APPENDIX_TITLE = "Appendix: fixed-design figures (optionally stopped)"
GLANCE_METRICS = (CORRECTNESS, INPUT, TOOLS, WALL, CHARGED)
"""The metrics of the glance table, in display order (correctness only when adjudicated)."""
CAVEATS = ("Caveats: only the primary endpoint answers the study's question; the task is the unit of analysis; "
           "small samples support no general claim; token or latency reductions alone do not establish correctness.")

NO_FINDING = ("The comparison table is left out: with the treatment not delivered, a difference between the arms "
              "says nothing about the server. The statistics below describe the attempts only.")



def favours(metric: Metric) -> str:
    """Which direction of the difference favours the treatment arm: ``"higher"`` for correctness, ``"lower"``
    for the costs (tokens, calls, ms, USD)."""
    return "higher" if metric.kind == "score" else "lower"


def _row(metric: Metric, summary: TaskLevelSummary, treatment: str, role: str = PRIMARY,
         adjusted: float | None = None, better_when: str | None = None) -> tuple[str, ...]:
    """One metric's cells; an interval or p that is not computable is ``—`` (the reasons follow the table). A
    secondary metric's raw p never stands alone: its Holm-adjusted p is beside it (issue 41 item 10). "better
    when" is ``better_when`` (the declared primary's direction) or else the metric's default (:func:`favours`)."""
    p_text = fmt.p_value(summary.p_value, None)
    if summary.p_monte_carlo_se is not None:
        p_text += f" (Monte Carlo SE {summary.p_monte_carlo_se:.4f})"
    if summary.p_value is not None and role == SECONDARY:
        p_text += f"; Holm-adjusted {fmt.p_value(adjusted, None)}"
    elif summary.p_value is not None and role == EXPLORATORY:
        p_text += " (exploratory, unadjusted)"
    return (metric.label, direction(summary, metric, treatment), fmt.statistic(summary.estimate, metric.kind),
            fmt.interval(summary.ci_low, summary.ci_high, None, metric.kind), p_text, summary.design,
            better_when or favours(metric))


def _not_computable(summaries: list[tuple[Metric, TaskLevelSummary]]) -> str | None:
    """One sentence naming why intervals or p-values are ``—``, each reason once with its metrics."""
    reasons: dict[str, list[str]] = {}
    for metric, summary in summaries:
        if summary.estimate is None:
            continue
        for note in (summary.ci_note, summary.p_note):
            if note and metric.label not in reasons.setdefault(note, []):
                reasons[note].append(metric.label)
    if not reasons:
        return None
    return "— : " + "; ".join(f"{note} ({', '.join(labels)})" for note, labels in reasons.items()) + "."


def _plural(attempts: int) -> str:
    return "1 attempt" if attempts == 1 else f"{attempts} attempts"


def _containment_line(analysis: Analysis) -> str:
    rows = containment_rows(analysis.study.attempts, analysis.study.arm_name)
    if not rows:
        return "Containment: no attempt was observed."
    arms = "; ".join(f"{row.label} {row.mechanism_cell()}" for row in rows)
    if all(row.bubblewrapped for row in rows):
        return f"Containment achieved: {arms}; every attempt ran in bubblewrap."
    line = f"Containment achieved: {arms}; not all ran in bubblewrap (see Containment)."
    confounded = [s for s in containment_sentences(rows) if s.startswith("The arms were contained differently")]
    return line + (f" {confounded[0]}" if confounded else "")


def _table(analysis: Analysis, shown: list[tuple[Metric, TaskLevelSummary]], treatment: str) -> Table:
    """The glance table of the ``shown`` metrics: one row each (:func:`_row`), titled with the design it holds for."""
    study = analysis.study
    results = {r.metric.key: r for r in analysis.results}
    primary = analysis.plan.primary  # the study's declared direction for its primary (issue 41), else the default
    rows = tuple(_row(m, summary, treatment, results[m.key].role, results[m.key].p_adjusted,
                      primary.better_when if m.key == primary.metric else None) for m, summary in shown)
    fixed = "; fixed design, not the stopping rule" if study.sequential is not None else ""
    if study.sequential is not None and study.sequential.stop_reason is not None:
        fixed = f"; {OPTIONALLY_STOPPED}"  # issue 41 item 7
    return Table("glance", f"{study.arm_name(TREATMENT)} compared with {study.arm_name(BASELINE)}, "
                 f"task level (exploratory{fixed})",
                 ("metric", "in words", "Δ per task", f"{level(analysis)} % interval", "p (test of the mean)",
                  "design", "better when"),
                 rows, frozenset({2, 3, 4}))


def stopped_appendix(analysis: Analysis, *, minimum_use: float | None = None) -> Section | None:
    """After a sequential stop, the appendix of the fixed-design figures (issue 41 item 7): the primary's estimate,
    interval and p and the glance table, each labelled as computed on an optionally stopped sample (``None`` for a
    fixed design, before a stop, or when the treatment was not delivered). The first screen shows the stop, the
    confidence sequence and the design only."""
    study = analysis.study
    if study.sequential is None or study.sequential.stop_reason is None:
        return None
    if not summarize_treatment(study, minimum_use).delivered:
        return None
    summaries = {r.metric.key: r.task_level for r in analysis.results}
    shown = [(m, summaries[m.key]) for m in GLANCE_METRICS if m.key in summaries]
    blocks: list[Block] = [Paragraph(
        f"These are the fixed-design figures ({OPTIONALLY_STOPPED}): the study stopped when its sequential test "
        "decided, so their p-values and intervals do not hold at their level; the answer is the stopping rule's "
        "decision and the confidence sequence in the first section."),
        primary_paragraph(analysis, fixed_design=True), _table(analysis, shown, study.arm_name(TREATMENT))]
    why = _not_computable(shown)
    if why:
        blocks.append(Paragraph(why))
    return Section(STOPPED_APPENDIX_TITLE, tuple(blocks))


def glance_section(analysis: Analysis, *, primary: str | None = None, minimum_use: float | None = None,
                   alpha: float | None = None) -> Section:
    """The first section of every minimal report: the verdict for the ``primary`` metric and the treatment's
    fidelity (:mod:`agentstudy.report.treatment`, issue 28), then one row per metric of :data:`GLANCE_METRICS`
    the analysis has (correctness only when adjudicated), from each result's ``task_level`` summary. When the
    treatment was not delivered (fewer than ``minimum_use`` of the treatment attempts used the server) the
    verdict is a warning box and the comparison table is not shown."""
    study = analysis.study
    fidelity = summarize_treatment(study, minimum_use)
    summaries = {r.metric.key: r.task_level for r in analysis.results}
    present = set(summaries)
    shown = [(m, summaries[m.key]) for m in GLANCE_METRICS if m.key in present]
    treatment = study.arm_name(TREATMENT)  # a study file's own label (issue 18), else the default one
    stopped = study.sequential is not None and study.sequential.stop_reason is not None
    table = _table(analysis, shown, treatment)
    blocks: list[Block] = [Paragraph(text) for text in sequential_sentences(study)]  # issue 35: the stop first
    blocks.extend(first_screen_blocks(analysis, fidelity, primary=primary, alpha=alpha))
    if study.chain_missing:
        blocks.insert(0, Paragraph(PARTIAL_CHAIN_SENTENCE + " " + "; ".join(
            f"run {link['runId']} (ledger SHA-256 {link['ledgerSha256']})" for link in study.chain_missing) + "."))
    if study.unverified:
        blocks.append(Paragraph(UNVERIFIED_SENTENCE))  # the failed checks: About this report
    run = study.mode or "mode not recorded"
    status = study.status or "no status recorded"
    blocks.append(Paragraph(
        f"{'REHEARSAL' if study.rehearsal else 'Real run'} ({run}, {status}, {_plural(len(study.attempts))}"
        f"{', transport ' + study.transport if study.transport else ''}). "
        + (REHEARSAL_SENTENCE if study.rehearsal else "Not a rehearsal: a model answered.")))
    if study.status == "blocked" or study.stop_reason:
        blocks.append(Paragraph(f"The run ended {study.status or 'without a status'}: "
                                f"{study.stop_reason or 'no stop reason recorded'}."))
    if fidelity.delivered:
        blocks.append(primary_paragraph(analysis))
        if not stopped:  # after a sequential stop the fixed-design table is an appendix (issue 41 item 7)
            blocks.append(table)
    else:
        blocks.append(Paragraph(NO_FINDING))
    why = _not_computable(shown) if fidelity.delivered and not stopped else None
    if why:
        blocks.append(Paragraph(why))
    primary_key = analysis.plan.primary.metric if primary is None else primary
    if CORRECTNESS.key not in present and not (fidelity.delivered and primary_key == CORRECTNESS.key):
        # with correctness primary, the verdict and the primary-endpoint paragraph already say it is not reported
        blocks.append(Paragraph("Correctness: not adjudicated, so not reported."))
    blocks.append(Paragraph(_containment_line(analysis)))
    blocks.append(Paragraph(CAVEATS))
    return Section(TITLE, tuple(blocks))
