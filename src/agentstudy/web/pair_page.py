"""The pair page of ``agentstudy view``: one task × repetition (× agent), the two arms side by side.

One row per step (``stream.steps``): assistant text, a tool call with its arguments, a tool result; long
texts are cut with a link to the whole. A call to the server under study and its result are highlighted,
a failed call is marked, and the first step where the arms differ (``stream.steps.first_divergence``) is
marked. Each side shows its status, tokens, USD, wall time, the adjudicator's verdict when a companion was
given, and the server's stderr when the run kept it. Blind: the sides are "A" and "B" in an order drawn
per pair from the view's seed, and no arm id or label is written.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentstudy.io.transcripts import TranscriptError
from agentstudy.report.model import BASELINE, TREATMENT
from agentstudy.report.observed import ObservedAttempt, ObservedStudy
from agentstudy.stream.steps import Step, first_divergence
from agentstudy.web.study_page import ViewOptions, count, link, page, usd

CUT_CHARS = 1200
"""Step texts longer than this are cut on the pair page (the whole text is one link away)."""


@dataclass(frozen=True)
class Side:
    """One side of a pair: the attempt (``None`` when that arm has not settled), its steps (``None``: no
    transcript) and the name shown (the arm's label, or "A"/"B" when blind)."""

    name: str
    item: ObservedAttempt | None
    steps: tuple[Step, ...] | None
    stderr: str | None = None
    problem: str | None = None
    """Why the transcript the observation names cannot be shown (missing, altered)."""


def pair_key(task: str, repetition: int, agent: str) -> str:
    """The pair's seed key (the same pair always gets the same blind order under one seed)."""
    return f"{agent}\x1f{task}\x1f{repetition}"


def blind_order(seed: int, task: str, repetition: int, agent: str) -> tuple[str, str]:
    """The two scenarios in the order the blind page shows them (A first): a seeded draw per pair (the low bit
    of SHA-256 of the seed and the pair's key)."""
    flip = hashlib.sha256(f"{seed}\x1f{pair_key(task, repetition, agent)}".encode()).digest()[-1] & 1 == 1
    return (TREATMENT, BASELINE) if flip else (BASELINE, TREATMENT)


def pair_items(observed: ObservedStudy, task: str, repetition: int, agent: str) -> dict[str, ObservedAttempt]:
    """The pair's attempts by scenario (an arm not yet settled is missing)."""
    return {item.attempt.scenario: item for item in observed.attempts
            if (item.attempt.task_id, item.attempt.repetition, item.attempt.agent) == (task, repetition, agent)}


def sides_for(observed: ObservedStudy, options: ViewOptions, task: str, repetition: int, agent: str,
              steps_of: Callable[[ObservedAttempt], tuple[Step, ...] | None],
              stderr_of: Callable[[ObservedAttempt], str | None]) -> list[Side]:
    """The two sides in display order, with their steps (a ``TranscriptError`` of ``steps_of`` becomes the
    side's ``problem``) and the server's stderr read."""
    items = pair_items(observed, task, repetition, agent)
    order = blind_order(options.seed, task, repetition, agent) if options.blind else (BASELINE, TREATMENT)
    sides = []
    for index, scenario in enumerate(order):
        item = items.get(scenario)
        name = "AB"[index] if options.blind else observed.study.arm_name(scenario)
        steps, problem = None, None
        if item is not None:
            try:
                steps = steps_of(item)
            except TranscriptError as error:
                problem = str(error)
        sides.append(Side(name, item, steps, stderr_of(item) if item else None, problem))
    return sides


def _cut(text: str, whole: str) -> str:
    if len(text) <= CUT_CHARS:
        return f"<pre>{html.escape(text)}</pre>"
    return (f"<pre>{html.escape(text[:CUT_CHARS])}…</pre>"
            f'<a href="{html.escape(whole)}">the whole text ({len(text):,} characters)</a>')


def step_html(step: Step | None, whole: str) -> tuple[str, str]:
    """One step's cell: its CSS classes and HTML (``whole``: the link to its whole text)."""
    if step is None:
        return "", ""
    classes = " ".join(c for c in ("server" if step.server else "", "error" if step.error else "") if c)
    if step.kind == "text":
        return classes, f'<span class="kind">assistant</span>{_cut(step.text, whole)}'
    if step.kind == "call":
        arguments = json.dumps(dict(step.arguments), ensure_ascii=False, indent=1, default=str)
        where = " (server)" if step.server else ""
        return classes, (f'<span class="kind">tool call{where}</span> <b>{html.escape(step.tool or "")}</b>'
                         f"{_cut(arguments, whole)}")
    mark = ' <span class="mark">✗ error</span>' if step.error else ""
    return classes, f'<span class="kind">tool result</span>{mark}{_cut(step.text, whole)}'


def _facts(side: Side) -> str:
    if side.item is None:
        return "<p>not settled yet</p>"
    attempt = side.item.attempt
    seconds = "—" if attempt.wall_time_ms is None else f"{attempt.wall_time_ms / 1000:.1f} s"
    tokens = (f"{count(attempt.input_tokens)} input / {count(attempt.output_tokens)} output tokens"
              f" ({count(attempt.cache_read_tokens)} cache read)")
    verdict = ""
    if attempt.correctness is not None:
        verdict = f"<br>adjudicator: correctness {attempt.correctness:g}"
        if attempt.rubric:
            verdict += f" — {html.escape(attempt.rubric)}"
    elif attempt.adjudication != "not adjudicated":
        verdict = f"<br>adjudicator: {html.escape(attempt.adjudication)}"
    calls = "" if side.steps is not None else (
        f"<br>its transcript cannot be shown: {html.escape(side.problem)}" if side.problem
        else "<br>no transcript was kept")
    return (f"<p>status <b>{html.escape(attempt.status)}</b> · {tokens} · {usd(attempt.charged_usd)} USD · "
            f"{seconds}{verdict}{calls}</p>")


def pair_page(observed: ObservedStudy, options: ViewOptions, task: str, repetition: int, agent: str,
              sides: Sequence[Side]) -> str:
    """The whole pair page for ``sides`` (from :func:`sides_for`)."""
    left, right = (side.steps or () for side in sides)
    divergence = first_divergence(tuple(left), tuple(right))
    head = "".join(f"<th>{html.escape(side.name)}{_facts(side)}</th>" for side in sides)
    rows = []
    for index in range(max(len(left), len(right))):
        cells = []
        for position, steps in enumerate((left, right)):
            whole = link("text", options, agent=agent, task=task, repetition=repetition, side=position, step=index)
            classes, content = step_html(steps[index] if index < len(steps) else None, whole)
            cells.append(f'<td class="{classes}">{content}</td>' if classes else f"<td>{content}</td>")
        marker = '<br><span class="diverge-mark">first divergence</span>' if index == divergence else ""
        row_class = ' class="diverge"' if index == divergence else ""
        rows.append(f"<tr{row_class}><td>{index + 1}{marker}</td>{''.join(cells)}</tr>")
    stderr = "".join(f"<h3>{html.escape(side.name)}: the server's stderr</h3><pre>{html.escape(side.stderr)}</pre>"
                     for side in sides if side.stderr)
    where = "" if divergence is None else f" The arms first differ at step {divergence + 1}."
    back = f'<p><a href="{html.escape(link(".", options))}">back to the study</a>.{where}</p>'
    table = (f'<table id="steps"><thead><tr><th>step</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
             "</table>")
    title = f"{task} · repetition {repetition}" + (f" · {agent}" if len(observed.study.agents) > 1 else "")
    return page(title, back + table + stderr, options)


__all__ = ["CUT_CHARS", "Side", "blind_order", "pair_items", "pair_page", "sides_for", "step_html"]
