"""What a sequential study's report says first (issue 35): where it stopped, why, and the money not spent. Pure.

The first screen of a sequential ledger opens with one line, e.g. "stopped after 8 of 20 tasks: more input
tokens with Repository tools + doc-bridge MCP (e-value 29.7 ≥ 20); 0.006 USD of the planned 0.010 USD not
spent", and says that the task-level statistics beside it are the fixed-design ones for the tasks observed,
not the stopping rule. The planned spend is the average charge per observed attempt times the planned
attempts (every block up to ``maxTasks``); not spent is the planned spend minus the spend. The e-value path
is drawn by :mod:`agentstudy.report.sequential_plot` (HTML only).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from agentstudy.pricing.sums import sum_usd
from agentstudy.protocol.sequential import LEGACY_CONSTRUCTION
from agentstudy.protocol.sequential_confidence import ConfidenceSequence, confidence_sequence
from agentstudy.protocol.sequential_record import SequentialRecord
from agentstudy.report import fmt
from agentstudy.report.model import BASELINE, TREATMENT, Study

FIXED_DESIGN_NOTE = ("The task-level statistics below are the fixed-design ones for the tasks observed; they are "
                     "not the stopping rule (the sequential e-value is, valid however often it was looked at).")
_NOUNS = {"inputTokens": ("input tokens", "more", "fewer"), "outputTokens": ("output tokens", "more", "fewer"),
          "toolCalls": ("tool calls", "more", "fewer"), "wallTimeMs": ("wall time", "more", "less"),
          "chargedUsd": ("USD charged", "more", "less")}


def sequential_record(value: Any) -> SequentialRecord | None:
    """The ledger's ``sequential`` block, or ``None`` when absent or malformed (the report's reader is tolerant;
    the verifier has judged it already)."""
    if not isinstance(value, dict):
        return None
    try:
        return SequentialRecord.model_validate(value)
    except ValidationError:
        return None


@dataclass(frozen=True)
class MoneyNotSpent:
    """The planned spend (USD: average charge per observed attempt × planned attempts) and what was not spent."""

    planned_usd: Decimal
    not_spent_usd: Decimal


def planned_attempts(study: Study) -> int | None:
    """The attempts the study planned: for a sequential one, ``maxTasks`` blocks of the size its decided tasks
    show (so a chain of runs, issue 40, counts the study's blocks once, not each run's plan); else
    ``study.planned``."""
    record = study.sequential
    if record is None:
        return study.planned
    decided = set(record.task_order[:record.tasks_completed])
    counts: dict[str, int] = {}
    for attempt in study.attempts:
        if attempt.task_id in decided and not attempt.superseded:
            counts[attempt.task_id] = counts.get(attempt.task_id, 0) + 1
    return max(counts.values()) * record.max_tasks if counts else study.planned


def money_not_spent(study: Study) -> MoneyNotSpent | None:
    """:class:`MoneyNotSpent` of ``study``; ``None`` without a spend, attempts or a planned count."""
    charges = [a.charged_usd for a in study.attempts if a.charged_usd is not None]
    count = planned_attempts(study)
    if study.spent_usd is None or not charges or count is None:
        return None
    planned = sum_usd(charges) / len(charges) * count
    return MoneyNotSpent(planned, max(planned - study.spent_usd, Decimal(0)))


def _e(value: float) -> str:
    return f"{value:.3g}" if value < 10 else f"{value:,.1f}"


def verdict(record: SequentialRecord, treatment: str) -> str:
    """The decision in words, with the e-value against its bound: ``more input tokens with X (e-value 29.7 ≥ 20)``,
    ``no clear difference in input tokens (e-value 0.08 ≤ 0.1)`` (one-sided: ``X not shown better on input
    tokens (…)``), ``no decision at maxTasks (e-value 3.1 < 20)``,
    or ``still running`` / ``stopped before a decision`` when no look decided."""
    noun, more, less = _NOUNS.get(record.metric, (record.metric, "more", "less"))
    threshold = 1 / record.alpha
    e = record.looks[-1].e_value if record.looks else 1.0
    if record.stop_reason == "efficacy":
        worse = record.direction == "worse"
        word = (more if record.better_when == "lower" else less) if worse else (
            less if record.better_when == "lower" else more)
        return f"{word} {noun} with {treatment} (e-value {_e(e)} ≥ {threshold:g})"
    if record.stop_reason == "futility":
        what = (f"no clear difference in {noun}" if record.construction is None else  # one-sided: "not better"
                f"{treatment} not shown better on {noun}")
        if record.futility is not None and e <= record.futility:
            return f"{what} (e-value {_e(e)} ≤ {record.futility:g}, the futility bound)"
        return f"{what} (e-value {_e(e)}; {threshold:g} is out of reach within {record.max_tasks} tasks)"
    if record.stop_reason == "maxTasks":
        return f"no decision at maxTasks (e-value {_e(e)} < {threshold:g})"
    return f"no decision yet (e-value {_e(e)} < {threshold:g})"


def sequential_line(study: Study) -> str | None:
    """The first screen's sequential line (see the module docstring); ``None`` for a fixed-design ledger."""
    record = study.sequential
    if record is None:
        return None
    treatment = study.arm_name(TREATMENT)
    done = record.tasks_completed
    if record.stop_reason is None:
        head = f"ran {done} of {record.max_tasks} tasks, stopped before a decision ({study.stop_reason or 'running'})"
        head += f": {verdict(record, treatment)}"
    elif record.stopped_early:
        head = f"stopped after {done} of {record.max_tasks} tasks: {verdict(record, treatment)}"
    else:
        head = f"ran all {record.max_tasks} tasks: {verdict(record, treatment)}"
    money = money_not_spent(study)
    if money is not None:
        head += f"; {fmt.usd(money.not_spent_usd)} USD of the planned {fmt.usd(money.planned_usd)} USD not spent"
    return head


def sequential_sentences(study: Study) -> tuple[str, ...]:
    """The glance's sequential paragraphs: the line, how the planned spend was counted and what the attempts in
    flight at the stop were, and the fixed-design note; ``()`` for a fixed-design ledger."""
    line = sequential_line(study)
    record = study.sequential
    if line is None or record is None:
        return ()
    beyond = len([a for a in study.attempts if a.task_id not in set(record.task_order[:record.tasks_completed])])
    detail = (f"Sequential design: {_test_words(record)}, alpha {record.alpha:g}, futility "
              f"{record.futility if record.futility else 'none'}, primary {record.metric} ({record.better_when} is "
              f"better), task order seeded {record.seed}; the planned spend is the average charge per attempt times "
              "the planned attempts.")
    if beyond and record.stop_reason is not None:
        detail += (f" {beyond} attempt{'s' if beyond > 1 else ''} already running at the stop "
                   f"{'were' if beyond > 1 else 'was'} recorded and reported, outside the decision.")
    sequence = confidence_sentence(study)
    return (line[0].upper() + line[1:] + ".", *((sequence,) if sequence else ()), detail, FIXED_DESIGN_NOTE)


def _test_words(record: SequentialRecord) -> str:
    """The test in words: its sidedness, null and construction (issue 41 item 7)."""
    if record.construction is None:
        return "two-sided sign-weighted e-process (null: no effect on any task)"
    bets = ("a mixture of bets on standardized task differences" if record.bet_size is None else
            f"one bet of size {record.bet_size:g} on task differences standardized by their mean size, fixed from "
            "maxTasks before any data")
    return (f"one-sided magnitude-aware e-process ({record.construction}: {bets}; null: the treatment is not better "
            f"on {record.metric}; a worse treatment stops for futility, never for efficacy)")


OPTIONALLY_STOPPED = "fixed design on an optionally stopped sample, not the answer"
"""How the fixed-design figures are labelled after a sequential stop (issue 41 item 7)."""


def stopped_answer(study: Study, metric: str) -> str | None:
    """After the sequential test stopped, the clause the primary's verdict says instead of the fixed-design p,
    when ``metric`` is the stopping rule's (``None`` otherwise): ``the sequential test decided: <verdict>``."""
    record = study.sequential
    if record is None or record.stop_reason is None or record.metric != metric:
        return None
    return f"the sequential test decided: {verdict(record, study.arm_name(TREATMENT))}"


def stopped_sequence(study: Study) -> ConfidenceSequence | None:
    """After a stop, the anytime-valid confidence sequence of the stopping metric's mean task difference
    (``protocol.sequential_confidence``, issue 41 item 7); ``None`` for a fixed design or before a stop."""
    record = study.sequential
    if record is None or record.stop_reason is None or not study.sequential_differences:
        return None
    return confidence_sequence(study.sequential_differences, record.better_when, record.alpha,
                               record.construction or LEGACY_CONSTRUCTION, record.bet_size)


def confidence_sentence(study: Study) -> str | None:
    """The stopped study's answer: the confidence sequence in words (before the fixed-design figures)."""
    sequence, record = stopped_sequence(study), study.sequential
    if sequence is None or record is None or sequence.estimate is None:
        return None
    low = "unbounded" if sequence.low is None else f"{sequence.low:.4g}"
    high = "unbounded" if sequence.high is None else f"{sequence.high:.4g}"
    return (f"Anytime-valid {1 - sequence.alpha:.0%} confidence sequence for the mean task difference in "
            f"{record.metric} ({study.arm_name(TREATMENT)} − {study.arm_name(BASELINE)}), valid at the stop: "
            f"{sequence.estimate:.4g} [{low}, {high}]. The fixed-design p and interval, computed on an optionally "
            "stopped sample, are not the answer: they are in the appendix.")


__all__ = ["FIXED_DESIGN_NOTE", "OPTIONALLY_STOPPED", "MoneyNotSpent", "confidence_sentence", "money_not_spent",
           "planned_attempts", "sequential_line", "sequential_record", "sequential_sentences", "stopped_answer",
           "stopped_sequence",
           "verdict"]
