"""Treatment fidelity on the report's first screen (issue 28 items 2-5): was the server delivered and used?

From the observations' treatment records (``protocol.treatment``): how many treatment attempts
used the server (at least one call that did not error), their calls, errored calls, attempts where
every call failed; the control arm's proof that no server tool was offered; the models that
answered each arm (arms must differ only in the server); and the server's tool-definition overhead
(first request of a treatment attempt minus its task's control, per task, averaged over tasks).

The study is *delivered* when at least ``minimum_use`` (a fraction, default
:data:`DEFAULT_MINIMUM_USE`) of the treatment attempts used the server; otherwise the verdict says
the study cannot answer whether the server helps, and no comparison is shown as a finding.

The verdict sentence answers the study's question for its primary metric (a parameter:
``None`` means correctness when adjudicated, else input tokens), intention to treat (every attempt
as assigned); a per-protocol line (tasks whose every treatment attempt used the server) follows,
labelled. Pure: no IO.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from agentstudy.protocol.arm_configurations import Configurations, configuration_sentences, configurations
from agentstudy.protocol.arm_differences import arm_differences, arm_facts
from agentstudy.protocol.arm_fidelity import (
    ARM_WORDS,
    ArmFidelity,
    AttemptUse,
    arm_fidelity,
    arm_not_delivered_sentence,
    control_sentence,
    record_use,
    use_clause,
)
from agentstudy.protocol.treatment import DEFAULT_MINIMUM_USE, is_delivered, not_delivered_sentence, used_server
from agentstudy.report.analysis import CORRECTNESS, Analysis, MetricResult
from agentstudy.report.clusters import scope_sentence
from agentstudy.report.document import Block, Paragraph, WarningBox
from agentstudy.report.in_words import direction
from agentstudy.report.model import BASELINE, TREATMENT, Attempt, Study
from agentstudy.report.sequential import stopped_answer


@dataclass(frozen=True)
class TreatmentSummary:
    """The study's treatment fidelity (counts of attempts and calls; tokens per request).

    ``recorded`` counts treatment attempts that carry a treatment record (older ledgers have none: their
    calls are counted from ``toolCallsByName``, errors unknown). ``control_offered`` counts control attempts
    that were offered a server tool (must be 0). ``models`` maps each arm's scenario to the models that
    answered it (from the streams). ``tool_definition_tokens`` is the mean over tasks of the first request's
    prompt tokens, treatment minus control (``None`` when no task has both).
    """

    treatment_attempts: int
    attempts_using_server: int
    server_calls: int
    server_call_errors: int
    attempts_all_calls_failed: int
    median_calls: float | None
    tool_definition_tokens: float | None
    control_attempts: int
    control_offered: int
    recorded: int
    models: dict[str, tuple[str, ...]]
    minimum_use: float
    per_protocol_tasks: tuple[str, ...]
    differences: tuple[str, ...] = ()
    """Every way the arms differed besides the server, one sentence each (``protocol.arm_differences``)."""
    configurations: Configurations = field(default_factory=Configurations)
    """Both arms' server configurations and tool calls by name (issue 44, ``protocol.arm_configurations``)."""
    arms: tuple[ArmFidelity, ...] = ()
    """Each arm's fidelity, control first (issue 44, ``protocol.arm_fidelity``): a control arm with a server of its
    own is counted and judged exactly like the treatment's."""
    overhead_note: str | None = None
    """Why ``tool_definition_tokens`` is ``None`` (one clause), ``None`` when it was measured."""

    @property
    def control(self) -> ArmFidelity | None:
        """The control arm's fidelity (``None`` when not summarised)."""
        return next((arm for arm in self.arms if arm.scenario == BASELINE), None)

    @property
    def delivered(self) -> bool:
        """At least ``minimum_use`` of the treatment attempts used the server (never with none), and, when the
        control arm runs a server of its own, at least ``minimum_use`` of its attempts used that one (issue 44)."""
        control = self.control
        return (is_delivered(self.attempts_using_server, self.treatment_attempts, self.minimum_use)
                and (control is None or control.delivered is not False))


def _fallback_calls(attempt: Attempt) -> int:
    """Server calls of an attempt without a record: ``mcp__`` names (cli) or names not ``repo_*`` (http)."""
    if attempt.transport == "http":
        return sum(n for name, n in attempt.tool_calls_by_name.items() if not name.startswith("repo_"))
    return sum(n for name, n in attempt.tool_calls_by_name.items() if name.startswith("mcp__"))


def _used(attempt: Attempt) -> bool:
    record = attempt.treatment
    if record is None:
        return _fallback_calls(attempt) > 0
    return used_server(record)


def _treatment_use(attempt: Attempt) -> AttemptUse:
    """A treatment attempt's use of the server: its record's, else counted by tool name (an older ledger)."""
    if attempt.treatment is not None:
        return record_use(attempt.treatment)
    calls = _fallback_calls(attempt)
    return AttemptUse(calls > 0, calls, 0, False, False)


def summarize_treatment(study: Study, minimum_use: float | None = None) -> TreatmentSummary:
    """The treatment fidelity of ``study``'s attempts (see the module docstring); ``minimum_use`` defaults to the
    study file's ``analysis.minimumTreatmentUse`` (:data:`DEFAULT_MINIMUM_USE` when none is declared)."""
    if minimum_use is None:
        minimum_use = study.analysis.minimum_treatment_use if study.analysis is not None else DEFAULT_MINIMUM_USE
    treated = [a for a in study.attempts if a.scenario == TREATMENT]
    control = [a for a in study.attempts if a.scenario == BASELINE]
    found = configurations(list(study.arm_records), [(a.scenario, a.treatment.server_calls_by_tool)
                                                     for a in study.attempts if a.treatment],
                           [(a.scenario, a.treatment.first_request_input_tokens)
                            for a in study.attempts if a.treatment])
    served = found.servers.get(BASELINE)
    arms = (arm_fidelity(BASELINE, str(served["name"]) if served is not None else None,
                         [record_use(a.treatment) for a in control], minimum_use),
            arm_fidelity(TREATMENT, study.server, [_treatment_use(a) for a in treated], minimum_use))
    treatment = arms[1]
    models: dict[str, tuple[str, ...]] = {}
    for scenario, group in ((BASELINE, control), (TREATMENT, treated)):
        models[scenario] = tuple(dict.fromkeys(m for a in group if a.treatment for m in a.treatment.answering_models))
    per_protocol = tuple(t for t, group in _by_task(treated).items() if all(_used(a) for a in group))
    return TreatmentSummary(
        treatment_attempts=treatment.attempts, attempts_using_server=treatment.using, server_calls=treatment.calls,
        server_call_errors=treatment.errors, attempts_all_calls_failed=treatment.all_failed,
        median_calls=treatment.median_calls,
        tool_definition_tokens=_overhead(treated, control), overhead_note=_overhead_note(treated, control),
        control_attempts=len(control),
        control_offered=sum(1 for a in control if a.treatment and a.treatment.server_offered),
        recorded=sum(1 for a in treated if a.treatment), models=models, minimum_use=minimum_use,
        per_protocol_tasks=per_protocol,
        differences=arm_differences([arm_facts(a.scenario, a.task_id, a.agent, a.treatment, a.agent_version)
                                     for a in study.attempts], study.arm_name),
        configurations=found, arms=arms,
    )


def _by_task(attempts: Iterable[Attempt]) -> dict[str, list[Attempt]]:
    """``attempts`` grouped by task id, tasks in order of first appearance, each task's attempts in their order
    (one pass: the per-task sums below stay linear in attempts on a 50,000-observation ledger, issue 29)."""
    grouped: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        grouped.setdefault(attempt.task_id, []).append(attempt)
    return grouped


def _first(attempts: list[Attempt]) -> list[int]:
    """The first request's prompt tokens recorded for one task's ``attempts``, in their order."""
    return [a.treatment.first_request_input_tokens for a in attempts
            if a.treatment and a.treatment.first_request_input_tokens is not None]


def _overhead(treated: list[Attempt], control: list[Attempt]) -> float | None:
    """Mean over tasks of (mean first-request prompt tokens, treatment − control); ``None`` without a pair."""
    differences = []
    controls = _by_task(control)
    for task, group in _by_task(treated).items():
        with_server, without = _first(group), _first(controls.get(task, []))
        if with_server and without:
            differences.append(statistics.fmean(with_server) - statistics.fmean(without))
    return statistics.fmean(differences) if differences else None


def _overhead_note(treated: list[Attempt], control: list[Attempt]) -> str | None:
    """Why no tool-definition overhead is shown: the agent reports no per-request usage (its records carry no
    first request's prompt size), or no task has that size in both arms; ``None`` when it is measured."""
    if _overhead(treated, control) is not None:
        return None
    recorded = [a for a in (*treated, *control) if a.treatment is not None]
    if recorded and all(a.treatment is not None and a.treatment.first_request_input_tokens is None
                        for a in recorded):
        return "not measurable for this agent (its output reports no request's own usage)"
    return "not measured (no task has the first request's prompt size in both arms)"


def fidelity_line(summary: TreatmentSummary, server: str) -> str:
    """"the server was used in 17 of 18 treatment attempts (median 3 calls; 2 calls errored; 0 attempts where
    every call failed)", plus the control arm's (its own server's use in the same words, or the proof that no
    server tool was offered: ``protocol.arm_fidelity``) and the tool-definition overhead."""
    treatment = next((arm for arm in summary.arms if arm.scenario == TREATMENT), None)
    if treatment is None:  # a summary built by hand: the treatment's counts
        treatment = arm_fidelity(TREATMENT, server, [], summary.minimum_use)
        treatment = replace(treatment, attempts=summary.treatment_attempts, using=summary.attempts_using_server,
                            errors=summary.server_call_errors, all_failed=summary.attempts_all_calls_failed,
                            median_calls=summary.median_calls)
    line = f"Fidelity: {server} was {use_clause(treatment)}."
    if summary.recorded < summary.treatment_attempts:
        line += (f" {summary.treatment_attempts - summary.recorded} treatment attempts carry no treatment record "
                 "(an older ledger): their calls are counted by tool name, their errors are unknown.")
    control = summary.control
    if control is None:
        control = replace(arm_fidelity(BASELINE, None, [], summary.minimum_use), attempts=summary.control_attempts,
                          offered=summary.control_offered)
    said = control_sentence(control)
    line += f" {said}" if said else ""
    if summary.tool_definition_tokens is not None:
        line += f" The server's tools add ~{round(summary.tool_definition_tokens):,} input tokens to every request."
    elif summary.overhead_note is not None:
        line += f" Tokens the server's tools add per request: {summary.overhead_note}."
    return line


def primary_result(analysis: Analysis, primary: str | None = None) -> MetricResult | None:
    """The result of the primary metric ``primary`` (a metric key); ``None`` means the study's primary endpoint
    (``analysis.primary`` as declared, or its default, correctness: issue 30). ``None`` when that metric is not
    in the report (correctness before adjudication)."""
    key = analysis.plan.primary.metric if primary is None else primary
    return next((r for r in analysis.results if r.metric.key == key), None)


def not_delivered(summary: TreatmentSummary, server: str) -> str:
    """The verdict of a study whose treatment was not delivered (``protocol.treatment.not_delivered_sentence``),
    or whose treatment was but whose control arm's own server was not (``protocol.arm_fidelity``; issue 44)."""
    control = summary.control
    if (is_delivered(summary.attempts_using_server, summary.treatment_attempts, summary.minimum_use)
            and control is not None and control.delivered is False):
        return arm_not_delivered_sentence(control, server)
    return not_delivered_sentence(server, summary.attempts_using_server, summary.treatment_attempts,
                                  summary.minimum_use)


def verdict(analysis: Analysis, summary: TreatmentSummary, *, primary: str | None = None,
            alpha: float | None = None) -> str:
    """One sentence answering "does the server help?" for the primary metric, intention to treat; ``alpha``
    defaults to the study's (``analysis.alpha``)."""
    alpha = analysis.alpha if alpha is None else alpha
    study = analysis.study
    server = study.server
    if not summary.delivered:
        return not_delivered(summary, server)
    result = primary_result(analysis, primary)
    key = analysis.plan.primary.metric if primary is None else primary
    if result is None and key == CORRECTNESS.key:
        return (f"The study cannot yet say whether {server} helps: its primary endpoint, correctness, is known "
                "only once the answers are adjudicated (agentstudy adjudicate).")
    if result is None or result.task_level.estimate is None:
        return f"The study cannot yet say whether {server} helps: its primary metric has no task with both arms."
    level = result.task_level
    treatment = study.arm_name(TREATMENT)
    words = direction(level, result.metric, treatment)
    p = level.p_value if result.p_adjusted is None else result.p_adjusted  # the primary's: Holm across agents
    if result.repositories is not None and result.repositories.level is not None:  # issue 41: that test answers
        p = result.repositories.level.p_value
    judged = ("not distinguishable from no difference" if p is None or p >= alpha
              else f"a difference at α = {alpha:g}")
    p_text = "p not computable" if p is None else f"p {p:.3g}"
    answer = stopped_answer(study, result.metric.key)
    design = f"{p_text}, {level.design}"
    if answer is not None:  # issue 41 item 7: after a sequential stop the stopping rule answers; the fixed-design
        judged, design = answer, level.design  # p is in the appendix (optionally stopped)
    return (f"{not_a_finding(study)}Does {server} help? On the primary metric, {result.metric.label}: {words} "
            f"({design}; intention to treat), {judged}"
            f"{'' if analysis.plan_declared else '; exploratory (default endpoint)'}; "
            f"{scope_sentence(analysis.scope)}.")


def not_a_finding(study: Study) -> str:
    """The sentence a rehearsal's or pilot's verdict opens with (issue 41 item 10), ``""`` for a full study."""
    if study.rehearsal:
        return "A rehearsal (scripted agents), not a finding. "
    if study.mode == "pilot":
        return "A pilot, not a finding. "
    return ""


def per_protocol_line(analysis: Analysis, summary: TreatmentSummary, primary: str | None = None) -> str | None:
    """The per-protocol reading (tasks whose every treatment attempt used the server), labelled; ``None`` when
    it is the same set as intention to treat or no task qualifies."""
    from agentstudy.report.analysis import analyse
    tasks = set(summary.per_protocol_tasks)
    all_tasks = {a.task_id for a in analysis.study.attempts if a.scenario == TREATMENT}
    if not tasks or tasks == all_tasks:
        return None
    study = replace(analysis.study, attempts=tuple(a for a in analysis.study.attempts if a.task_id in tasks))
    result = primary_result(analyse(study, analysis.prices, seed=analysis.seed, resamples=analysis.resamples),
                            primary)
    if result is None:
        return None
    treatment = study.arm_name(TREATMENT)
    return (f"Per protocol (secondary; only the {len(tasks)} of {len(all_tasks)} tasks whose every treatment attempt "
            f"used the server): {direction(result.task_level, result.metric, treatment)}.")


def first_screen_blocks(analysis: Analysis, summary: TreatmentSummary, *, primary: str | None = None,
                        alpha: float | None = None) -> tuple[Block, ...]:
    """The report's opening: the verdict (a warning box when not delivered), the fidelity line, a model difference
    (a warning box), and the per-protocol line when it differs."""
    server = analysis.study.server
    sentence = verdict(analysis, summary, primary=primary, alpha=alpha)
    said_first = [Paragraph(line) for line in configuration_sentences(summary.configurations,
                                                                       analysis.study.arm_name)]  # issue 44
    blocks: list[Block] = [*said_first, WarningBox(sentence) if not summary.delivered else Paragraph(sentence),
                           Paragraph(fidelity_line(summary, server))]
    blocks.extend(WarningBox(difference) for difference in summary.differences)
    if summary.delivered:
        line = per_protocol_line(analysis, summary, primary)
        if line:
            blocks.append(Paragraph(line))
    return tuple(blocks)


def treatment_json(summary: TreatmentSummary) -> dict[str, Any]:
    """``report --format json``'s ``treatment`` object (camelCase)."""
    return {
        "delivered": summary.delivered, "treatmentAttempts": summary.treatment_attempts,
        "attemptsUsingServer": summary.attempts_using_server, "serverCalls": summary.server_calls,
        "serverCallErrors": summary.server_call_errors, "attemptsAllCallsFailed": summary.attempts_all_calls_failed,
        "toolDefinitionTokens": summary.tool_definition_tokens, "toolDefinitionTokensNote": summary.overhead_note,
        "minimumTreatmentUse": summary.minimum_use,
        "controlAttemptsOffered": summary.control_offered,
        "answeringModels": {scenario: list(models) for scenario, models in summary.models.items()},
        "perProtocolTasks": list(summary.per_protocol_tasks),
        "armDifferences": list(summary.differences),
        "arms": {ARM_WORDS[arm.scenario]: arm.to_json() for arm in summary.arms},
    }
