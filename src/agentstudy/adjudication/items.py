"""Preparing one blind item for the adjudicator: citation checks, scrubbing and the prompt.

Citations are checked on the raw answer; the answer is then scrubbed, except the citations
whose path exists at the pin (corpus paths are evidence either arm can cite, and a path such
as ``docs/doc-bridge-index.md`` must stay openable). Failed citations are shown scrubbed too.
A prompt over 8 KiB leaves the item pending before anything is reserved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentstudy.adjudication.blinding import BlindItem
from agentstudy.adjudication.citations import (
    check_citations,
    citation_problem,
    extract_citations,
    strip_export_prefixes,
)
from agentstudy.adjudication.prompt import PromptTooLarge, adjudicator_prompt, citation_section
from agentstudy.adjudication.scrub import Scrubber
from agentstudy.protocol.adjudication import CitationChecks
from agentstudy.protocol.manifest import Task


@dataclass(frozen=True)
class PreparedItem:
    """An item ready for its adjudicator attempt.

    Attributes:
        blind: the opaque item and the observation behind it.
        task: the manifest task (question and expected propositions).
        citations: the mechanical citation checks of the raw answer.
        scrubbed_mentions: how many scenario-revealing mentions were replaced.
        prompt: the adjudicator prompt, or ``None`` when it would be too large.
        prompt_problem: why there is no prompt (``None`` when there is one).
    """

    blind: BlindItem
    task: Task
    citations: CitationChecks
    scrubbed_mentions: int
    prompt: str | None
    prompt_problem: str | None


def prepare_item(
    blind: BlindItem, task: Task, line_count: Callable[[str], int | None], scrubber: Scrubber
) -> PreparedItem:
    """Check the answer's citations, scrub it and build the prompt.

    Args:
        blind: the item.
        task: its task from the manifest.
        line_count: lines of a path in the task's repository at its pin (``None``: not a blob there).
        scrubber: built from the ledger's MCP server and the scenario labels.

    Raises:
        GitError: a blob of the pinned corpus cannot be read.
    """
    answer = strip_export_prefixes(blind.observation.answer)  # an arm-revealing path prefix (issue 18)
    found = extract_citations(answer)
    checks = check_citations(found, line_count)
    keep = [c.span for c in found if line_count(c.path) is not None]
    scrubbed, count = scrubber.scrub(answer, keep)
    failure_lines: list[str] = []
    seen: set[tuple[str, int, int]] = set()
    for citation in found:
        key = (citation.path, citation.start, citation.end)
        lines = line_count(citation.path)
        problem = citation_problem(citation, lines)
        if key in seen or problem is None:
            continue
        seen.add(key)
        shown = citation.text if lines is not None else scrubber.scrub(citation.text)[0]
        failure_lines.append(f"{shown}: {problem}")
    section = citation_section(checks.total, checks.valid, failure_lines)
    try:
        prompt: str | None = adjudicator_prompt(task.question, task.expected, scrubbed, section)
        problem_text: str | None = None
    except PromptTooLarge as error:
        prompt, problem_text = None, str(error)
    return PreparedItem(blind, task, checks, count, prompt, problem_text)
