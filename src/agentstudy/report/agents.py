"""A study of several agents (issue 21 item 6): each agent analysed alone, shown side by side, never pooled.

:func:`agent_analyses` splits the study by the attempts' ``agent`` and analyses each part with
:func:`agentstudy.report.analysis.analyse` (so a pair, a task-level difference and a p-value are
always one agent's). :func:`agents_section` is the side-by-side table that opens a multi-agent
report: one row per metric, per agent its task-level difference, interval at the study's level (95 % at
alpha 0.05), p and design.
:func:`multi_agent_document` follows it with each agent's whole one-agent report, every section
and table labelled with the agent, and one provenance appendix for the ledger. There is no
overall line: a difference between agents is not a paired comparison. Pure: no IO.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from agentstudy.pricing.price_file import PriceFile
from agentstudy.report import fmt
from agentstudy.report.analysis import Analysis, MetricResult, analyse
from agentstudy.report.content import PROVENANCE_TITLE, provenance_section, report_title
from agentstudy.report.content_inference import level
from agentstudy.report.document import Block, Document, Figure, Paragraph, Section, Table
from agentstudy.report.glance import GLANCE_METRICS
from agentstudy.report.in_words import direction
from agentstudy.report.inference_endpoints import PRIMARY, holm
from agentstudy.report.model import BASELINE, TREATMENT, Study
from agentstudy.report.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

TITLE = "Paired results by agent"
NOT_POOLED = ("Pairs are formed within an agent: each paired difference compares one agent's two arms on the "
              "same task and repetition, and the task-level statistics are computed for each agent alone. "
              "No number in this report pools agents, and there is no overall line: a difference between "
              "agents is not a paired comparison.")


def for_agent(study: Study, agent: str) -> Study:
    """``study`` restricted to ``agent``'s attempts (indices kept, so attempt numbers match the ledger);
    the planned and full schedule sizes are divided by the number of agents (each agent runs an equal
    share of a crossed schedule, ``protocol.schedule``)."""
    share = max(len(study.agents), 1)
    planned = study.planned // share if study.planned is not None else None
    return replace(study, attempts=tuple(a for a in study.attempts if a.agent == agent), planned=planned,
                   full_attempts=max(study.full_attempts // share, 1))


def agent_analyses(
    study: Study, prices: PriceFile | None = None, *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict[str, Analysis]:
    """Agent name -> the analysis of that agent's attempts alone, in order of first appearance; each agent's primary
    ``p_adjusted`` is Holm's over the agents' primary p-values (issue 41 item 2: one question asked per agent)."""
    analyses = {agent: analyse(for_agent(study, agent), prices, seed=seed, resamples=resamples)
                for agent in study.agents}
    return holm_across_agents(analyses) if len(analyses) > 1 else analyses


def _primary(analysis: Analysis) -> MetricResult | None:
    return next((r for r in analysis.results if r.role == PRIMARY), None)


def holm_across_agents(analyses: Mapping[str, Analysis]) -> dict[str, Analysis]:
    """``analyses`` with each agent's primary ``p_adjusted`` replaced by Holm's adjustment over the agents' primary
    p-values (agents without a primary p keep ``None``)."""
    family = {agent: result.task_level.p_value for agent, a in analyses.items()
              if (result := _primary(a)) is not None and result.task_level.p_value is not None}
    adjusted = holm(family)
    updated: dict[str, Analysis] = {}
    for agent, analysis in analyses.items():
        results = tuple(replace(r, p_adjusted=adjusted.get(agent)) if r.role == PRIMARY else r
                        for r in analysis.results)
        updated[agent] = replace(analysis, results=results)
    return updated


def holm_sentence(analyses: Mapping[str, Analysis]) -> str:
    """The multi-agent report's sentence on the primary's multiplicity, with each agent's raw and adjusted p."""
    parts = []
    for agent, analysis in analyses.items():
        result = _primary(analysis)
        if result is not None and result.task_level.p_value is not None and result.p_adjusted is not None:
            parts.append(f"{agent} p {result.task_level.p_value:.3g}, adjusted {result.p_adjusted:.3g}")
    listed = f" ({'; '.join(parts)})" if parts else ""
    return (f"Each agent's primary endpoint is tested at alpha, and its p-value is Holm-adjusted across the "
            f"{len(analyses)} agents of the study{listed}; an agent's answer is read from its adjusted p.")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _cell(analysis: Analysis, key: str) -> tuple[str, str, str]:
    result = next((r for r in analysis.results if r.metric.key == key), None)
    if result is None:
        return (fmt.MISSING, fmt.MISSING, "not computed")
    summary, metric = result.task_level, result.metric
    treatment = analysis.study.arm_name(TREATMENT)
    estimate = f"{fmt.statistic(summary.estimate, metric.kind)} " \
               f"{fmt.interval(summary.ci_low, summary.ci_high, None, metric.kind)}"
    return (estimate, f"{fmt.p_value(summary.p_value, None)}; {summary.design}",
            direction(summary, metric, treatment))


def agents_section(analyses: Mapping[str, Analysis]) -> Section:
    """The side-by-side table: per metric of the glance (correctness when every agent is adjudicated),
    per agent ``Δ per task [<level> % interval]`` (the first agent's study level), ``p; design`` and the
    difference in words."""
    agents = list(analyses)
    keys = [m for m in GLANCE_METRICS if all(any(r.metric.key == m.key for r in a.results) for a in analyses.values())]
    shown = level(next(iter(analyses.values())))
    columns = (f"Δ per task [{shown} % interval]", "p (test of the mean); design", "in words")
    header = ("metric", *(f"{agent}: {what}" for agent in agents for what in columns))
    rows = tuple((m.label, *(c for agent in agents for c in _cell(analyses[agent], m.key))) for m in keys)
    first = next(iter(analyses.values())).study
    caption = (f"{first.arm_name(TREATMENT)} compared with {first.arm_name(BASELINE)}, task level, "
               f"each agent alone (exploratory)")
    right = frozenset(i for i in range(1, len(header)) if (i - 1) % 3 == 0)
    counts = "; ".join(f"{agent}: {_plural(len(a.study.attempts), 'attempt')}, {_plural(len(a.pairs), 'pair')}"
                       for agent, a in analyses.items())
    blocks: list[Block] = [Table("agents", caption, header, rows, right), Paragraph(NOT_POOLED),
                           Paragraph(holm_sentence(analyses)), Paragraph(f"Observed: {counts}.")]
    return Section(TITLE, tuple(blocks))


def _labelled(agent: str, section: Section) -> Section:
    blocks: list[Block] = []
    for block in section.blocks:
        if isinstance(block, Figure):  # the SVG's own ids are prefixed with the figure's key (report.plots)
            svg = block.svg.replace(f' id="{block.key}-', f' id="{agent}-{block.key}-').replace(
                f"#{block.key}-", f"#{agent}-{block.key}-")
            blocks.append(Figure(f"{agent}-{block.key}", f"{agent}: {block.caption}", svg))
        elif isinstance(block, Table):
            blocks.append(replace(block, key=f"{agent}-{block.key}", caption=f"{agent}: {block.caption}"))
        else:
            blocks.append(block)
    return Section(f"Agent {agent}: {section.title}", tuple(blocks))


def multi_agent_document(
    study: Study, analyses: Mapping[str, Analysis], document_of: Callable[[Analysis], Document],
) -> Document:
    """The report of a several-agent study: :func:`agents_section`, then each agent's one-agent report
    (``document_of(analysis)``, its provenance left out) with every section, table and figure labelled
    ``Agent NAME``, then one provenance appendix of the whole ledger naming the agents."""
    title = report_title(study, "Paired report by agent")
    sections = [agents_section(analyses)]
    for agent, analysis in analyses.items():
        document = document_of(analysis)
        sections.extend(_labelled(agent, s) for s in document.sections if s.title != PROVENANCE_TITLE)
    first = next(iter(analyses.values()))
    appendix = provenance_section(replace(first, study=study))
    table = next(b for b in appendix.blocks if isinstance(b, Table))
    agents_row = ("agents", "; ".join(f"{agent} ({_plural(len(a.study.attempts), 'attempt')})"
                                      for agent, a in analyses.items()))
    sections.append(Section(appendix.title, (replace(table, rows=(*table.rows, agents_row)),)))
    return Document(title, tuple(sections))
