"""A study's attempts with what the report does not carry: the raw observation, its ledger and its steps (issue 43).

``agentstudy export`` and ``agentstudy view`` read a chain of ledgers through the report's own reader
(``report.chain.load_chain``: verified, joined with the companions), then pair each attempt with its
observation as the ledger holds it and, on demand, the steps of its private transcript
(``stream.steps``, through the agent's own mapper; the http transport's exchange through
``stream.steps.http_steps``). Transcripts are found only through ``io.transcripts``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.io.transcripts import TranscriptError, open_transcript
from agentstudy.report.chain import load_chain
from agentstudy.report.model import Attempt, ReportInputError, Study
from agentstudy.stream.steps import Step, http_steps


@dataclass(frozen=True)
class LedgerRun:
    """One ledger of the chain: its path, run id (``runId``, else the first 16 hex of its SHA-256) and its
    top-level fields without ``observations``."""

    path: Path
    run_id: str
    header: Mapping[str, Any]


@dataclass(frozen=True)
class ObservedAttempt:
    """One attempt: the report's :class:`Attempt`, the observation as recorded, the run it belongs to, and its
    1-based position in the chain's schedule order."""

    attempt: Attempt
    observation: Mapping[str, Any]
    run: LedgerRun
    position: int


@dataclass(frozen=True)
class ObservedStudy:
    """The study (the report's view of the chain), its attempts in order and its runs (oldest first)."""

    study: Study
    attempts: tuple[ObservedAttempt, ...]
    runs: tuple[LedgerRun, ...]

    @property
    def last_header(self) -> Mapping[str, Any]:
        """The newest run's top-level fields (its status, open reservations, start time)."""
        return self.runs[-1].header if self.runs else {}


def load_observed(ledgers: Sequence[Path], adjudications: Sequence[Path] = (), *,
                  allow_unverified: bool = False, partial_chain: bool = False) -> ObservedStudy:
    """The chain of ``ledgers`` (oldest first) with one companion per ledger when given; a ledger that does
    not verify (a running one, say) is read on only with ``allow_unverified`` (its problems in
    ``study.unverified``); the first ledger may continue runs not given only with ``partial_chain``.

    Raises:
        ReportInputError: as :func:`agentstudy.report.chain.load_chain` (unreadable, unverified, not one chain).
        NotSupportedYet: a controlled-study ledger.
    """
    documents: list[Any] = []
    study = load_chain(ledgers, adjudications=adjudications, allow_unverified=allow_unverified,
                       partial_chain=partial_chain, keep_documents=documents)
    observed: list[ObservedAttempt] = []
    runs: list[LedgerRun] = []
    for number, (path, document) in enumerate(zip(ledgers, documents, strict=True)):
        if not isinstance(document, dict) or not isinstance(document.get("observations"), list):
            raise ReportInputError(f"{path.name} is not a minimal-study ledger")
        run_id = document.get("runId")
        fallback = study.runs[number].sha256 if len(study.runs) == len(ledgers) else study.sha256
        run = LedgerRun(path, run_id if isinstance(run_id, str) else fallback[:16],
                        {k: v for k, v in document.items() if k != "observations"})
        runs.append(run)
        for observation in document["observations"]:
            index = len(observed)
            if index >= len(study.attempts):
                raise ReportInputError(f"{path.name} changed while it was read")
            observed.append(ObservedAttempt(study.attempts[index], observation, run, index + 1))
    if len(observed) != len(study.attempts):
        raise ReportInputError("a ledger changed while it was read")
    return ObservedStudy(study, tuple(observed), tuple(runs))


def server_tool_names(header: Mapping[str, Any]) -> frozenset[str]:
    """The names the http transport's model saw for the server's tools (``doc.get`` -> ``doc_get``)."""
    server = header.get("mcpServer")
    listed = server.get("listedTools") if isinstance(server, dict) else None
    return frozenset(str(name).replace(".", "_") for name in listed or [] if isinstance(name, str))


def transcript_bytes(item: ObservedAttempt) -> bytes | None:
    """The attempt's private transcript (checked against its SHA-256), ``None`` when the run kept none.

    Raises:
        TranscriptError: the file named is missing or altered.
    """
    name = item.observation.get("transcriptFile")
    if not isinstance(name, str):
        return None
    sha = item.observation.get("transcriptSha256")
    return open_transcript(item.run.path, name, sha if isinstance(sha, str) else None)


def attempt_steps(item: ObservedAttempt) -> tuple[Step, ...] | None:
    """The attempt's steps in the one step model, ``None`` without a transcript.

    Raises:
        TranscriptError: the transcript named is missing or altered.
    """
    data = transcript_bytes(item)
    if data is None:
        return None
    if item.attempt.transport == "http":
        server = item.run.header.get("mcpServer")
        name = server.get("name") if isinstance(server, dict) else None
        return http_steps(data, server_tool_names(item.run.header), name if isinstance(name, str) else "mcp")
    from agentstudy.agents.registry import agent_cli  # the agent's own mapper (one module per agent)

    return agent_cli(item.attempt.agent).transcript_steps(data)


__all__ = ["LedgerRun", "ObservedAttempt", "ObservedStudy", "TranscriptError", "attempt_steps", "load_observed",
           "server_tool_names", "transcript_bytes"]
