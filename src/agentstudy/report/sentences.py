"""The fixed sentences of every report (seed 000: "every published report must say so")."""

from __future__ import annotations

from agentstudy.report.model import Study

ADJUDICATED_SENTENCE = "Adjudication was by an agent with no human review."
NOT_ADJUDICATED_SENTENCE = (
    "No adjudication companion was given, so correctness is not reported; adjudication, when done, "
    "is by an agent with no human review."
)
REDUCTION_SENTENCE = "Token or latency reductions alone do not establish correctness."
SMALL_SAMPLE_SENTENCE = "Small samples support no general claim."
EXPLORATORY_SENTENCE = (
    "Every interval and p-value in this report is exploratory: it tests no pre-registered hypothesis."
)
ENDPOINT_SENTENCE = (
    "Only the primary endpoint (declared in the study file, or the stated default) answers the study's question; "
    "the secondary metrics' p-values are Holm-adjusted, and everything else is exploratory."
)
COMPLETED_SENTENCE = "Completed means an answer returned, not that it was correct; no run status means approval."
REHEARSAL_SENTENCE = (
    "This ledger is a rehearsal: a scripted API server on 127.0.0.1 (the Messages API for Claude Code, the "
    "Responses API for Codex, the Gemini API for Gemini CLI) answered instead of a model, so its numbers exercise "
    "the machinery and say nothing about agents."
)
PARTIAL_CHAIN_SENTENCE = (
    "PARTIAL CHAIN: these ledgers continue earlier runs that were not given (read with --partial-chain), so this "
    "report is part of a study, not its answer. Missing runs:"
)
"""The first screen of a report over part of a chain of runs (issue 40)."""

UNVERIFIED_SENTENCE = (
    "UNVERIFIED: this ledger's hashes or invariants do not hold (read with --allow-unverified), so any number "
    "here may have changed after the run wrote it."
)
PILOT_SENTENCE = "This is a pilot: its observations never count toward the full study."
WALL_TIME_SENTENCE = (
    "Wall time (ms) runs from an attempt's first action (spawning the agent on cli; on http, preparing its tools) "
    "to its end, the MCP server's start-up included, on both transports."
)
"""The one definition of wall time (issue 17 item 5), the same for cli and http."""


def fixed_sentences(study: Study) -> tuple[str, ...]:
    """The sentences every report carries (the definition of wall time among them), plus the rehearsal and
    pilot warnings when they apply."""
    sentences = [ADJUDICATED_SENTENCE if study.adjudication is not None else NOT_ADJUDICATED_SENTENCE,
                 REDUCTION_SENTENCE, SMALL_SAMPLE_SENTENCE, ENDPOINT_SENTENCE, COMPLETED_SENTENCE,
                 WALL_TIME_SENTENCE]
    if study.rehearsal:
        sentences.append(REHEARSAL_SENTENCE)
    if study.mode == "pilot":
        sentences.append(PILOT_SENTENCE)
    return tuple(sentences)
