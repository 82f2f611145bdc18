"""A report over a chain of runs (issue 33 item 7): ``report A.json B.json`` where B continues A.

Each ledger is read and verified on its own (``report.load.load_study``, the shared verifier); the chain is
checked link by link (``protocol.continuation.chain_problems``: each names the one before it by the SHA-256
of its bytes and its ``runId``, and no cell is ``completed`` twice). The chain is then one :class:`Study`:
every attempt of every run in order, each with its run id; an attempt whose cell a later run observed again
is ``superseded`` (a failure kept as evidence: counted in statuses and spend, left out of the intention-to-
treat view, and the later attempt is the one the paired analysis uses). Money adds up over the runs; the
status, stop reason and header are the last run's.

With companions (``report A.json B.json --adjudication A.adjudication.json --adjudication B.adjudication.json``,
as ``agentstudy adjudicate A.json B.json`` writes them) each is joined to its own ledger first (bound to that
ledger's SHA-256), and the chain's adjudication is their sum (:func:`chain_adjudication`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.io.ledger_journal import LedgerJournalError, read_ledger
from agentstudy.pricing.sums import sum_usd
from agentstudy.protocol.continuation import chain_problems, missing_links
from agentstudy.report.input_bytes import read_input
from agentstudy.report.load import load_study
from agentstudy.report.model import AdjudicationInfo, Attempt, ChainRun, ReportInputError, Study


def _document(path: Path) -> dict[str, Any]:
    try:
        data = read_ledger(path, read_input(path, "ledger")).data
    except LedgerJournalError as error:
        raise ReportInputError(str(error)) from None
    document: dict[str, Any] = json.loads(data)
    return document


def _total(values: Sequence[Decimal | None]) -> Decimal | None:
    return None if any(v is None for v in values) else sum_usd([v for v in values if v is not None])


def _run_line(run: ChainRun) -> str:
    span = f"attempts {run.attempts[0]}-{run.attempts[-1]}" if run.attempts else "no attempts"
    return f"run {run.run_id or 'without id'} ({run.file_name}, {run.status}): {span}"


def chain_adjudication(infos: Sequence[AdjudicationInfo]) -> AdjudicationInfo:
    """The adjudication of a chain: one companion per run, in the runs' order (at least one).

    Status ``adjudicated`` only when every companion is, else the first other status; spend and the scored
    and pending counts add up; the cap is the largest sum of a companion's cap and what the ones before it
    spent (``agentstudy adjudicate A.json B.json`` gives each run what the earlier runs left of one cap, so
    this is that one cap; never below the spend).
    """
    status = next((info.status for info in infos if info.status != "adjudicated"), "adjudicated")
    spent_before = Decimal(0)
    cap = Decimal(0)
    for info in infos:
        cap = max(cap, info.cap_usd + spent_before)
        spent_before += info.spent_usd
    return AdjudicationInfo(
        file_name=" + ".join(info.file_name for info in infos),
        ledger_sha256=" + ".join(info.ledger_sha256 for info in infos),
        status=status,
        adjudicator_models=tuple(sorted({m for info in infos for m in info.adjudicator_models})),
        spent_usd=spent_before,
        cap_usd=cap,
        scored=sum(info.scored for info in infos),
        pending=sum(info.pending for info in infos),
    )


def chain_json(missing: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``chain`` block every reader of a chain prints (``report``, ``power``, ``adjudicate``; issue 40):
    ``{"complete": bool, "missing": [{"ledgerSha256", "runId"}, ...]}``, ``missing`` the runs not given
    (:func:`agentstudy.protocol.continuation.missing_links`), oldest first."""
    return {"complete": not missing, "missing": [dict(link) for link in missing]}


def partial_chain_refusal(file_name: str, missing: Sequence[Mapping[str, Any]], what: str = "read") -> str:
    """The one line refusing part of a chain without ``--partial-chain`` (issue 40); ``what`` the command's verb."""
    return (f"{file_name} continues another run ({len(missing)} earlier run(s) not given, the last run "
            f"{missing[-1]['runId']}): a chain is one study; give every ledger of it, oldest first, or "
            f"--partial-chain to {what} this part alone")


def partial_chain_note(missing: Sequence[Mapping[str, Any]]) -> str:
    """The first-screen words of part of a chain: ``PARTIAL CHAIN: N earlier run(s) not given (run …; …)``."""
    runs = "; ".join(f"run {link['runId']}" for link in missing)
    return f"PARTIAL CHAIN: {len(missing)} earlier run(s) not given ({runs})"


def load_chain(ledgers: Sequence[Path], *, allow_unverified: bool = False,
               adjudications: Sequence[Path] = (), partial_chain: bool = False,
               keep_documents: list[Any] | None = None) -> Study:
    """One :class:`Study` of the runs in ``ledgers`` (oldest first; one path: that ledger's study).

    ``adjudications`` is empty or one companion per ledger, in the same order, each joined to its own ledger.
    A first ledger that continues runs not given (issue 40: a chain is one study) is refused unless
    ``partial_chain``; then the study names them in ``chain_missing``. ``keep_documents``, when given,
    receives each ledger's parsed JSON in order (:func:`load_study`).

    Raises:
        ReportInputError: a ledger that cannot be read or does not verify (as :func:`load_study`), a chain
            whose links do not hold (the message names the first problem), part of a chain without
            ``partial_chain``, as many companions as ledgers not given, or a companion not bound to its
            ledger (as :func:`load_study`).
    """
    if adjudications and len(adjudications) != len(ledgers):
        raise ReportInputError(f"a chain of {len(ledgers)} runs takes one --adjudication per ledger, in the same "
                               f"order (got {len(adjudications)})")
    companions: Sequence[Path | None] = adjudications or [None] * len(ledgers)
    studies = [load_study(path, companion, allow_unverified=allow_unverified, documents=keep_documents)
               for path, companion in zip(ledgers, companions, strict=True)]
    documents = [_document(path) for path in ledgers]
    missing = tuple(missing_links(documents[0]))
    if missing and not partial_chain:
        raise ReportInputError(partial_chain_refusal(studies[0].file_name, missing))
    if len(studies) == 1:
        return replace(studies[0], chain_missing=missing)
    problems = chain_problems([(s.file_name, s.sha256, d) for s, d in zip(studies, documents, strict=True)],
                              partial=partial_chain)
    if problems:
        raise ReportInputError(f"the ledgers are not one chain of runs: {problems[0]}")
    later: set[tuple[str, str, int, str]] = set()
    merged: list[list[Any]] = []
    for study, document in reversed(list(zip(studies, documents, strict=True))):
        run_id = document.get("runId") if isinstance(document.get("runId"), str) else None
        attempts = []
        for attempt in study.attempts:
            cell = (attempt.task_id, attempt.scenario, attempt.repetition, attempt.agent)
            attempts.append(replace(attempt, run_id=run_id or study.sha256[:16], superseded=cell in later))
        later.update((a.task_id, a.scenario, a.repetition, a.agent) for a in study.attempts)
        merged.insert(0, attempts)
    everything: list[Attempt] = []
    runs = []
    for study, document, attempts in zip(studies, documents, merged, strict=True):
        start = len(everything)
        everything.extend(replace(a, index=start + i) for i, a in enumerate(attempts))
        run_id = document.get("runId") if isinstance(document.get("runId"), str) else None
        runs.append(ChainRun(run_id=run_id, file_name=study.file_name, sha256=study.sha256, status=study.status,
                             attempts=tuple(range(start + 1, len(everything) + 1))))
    last = studies[-1]
    planned = [s.planned for s in studies]
    return replace(
        last,
        file_name=" + ".join(s.file_name for s in studies),
        attempts=tuple(everything),
        planned=None if any(p is None for p in planned) else sum(p for p in planned if p is not None),
        cap_usd=_total([s.cap_usd for s in studies]),
        spent_usd=_total([s.spent_usd for s in studies]),
        reserved_usd=_total([s.reserved_usd for s in studies]),
        measured_usd=_total([s.measured_usd for s in studies]),
        cumulative_cap_exceeded=any(s.cumulative_cap_exceeded for s in studies),
        unverified=tuple(p for s in studies for p in s.unverified),
        header={**last.header, "runs": "; ".join(_run_line(run) for run in runs)},
        runs=tuple(runs),
        chain_missing=missing,
        adjudication=chain_adjudication([s.adjudication for s in studies if s.adjudication is not None])
        if adjudications else None,
    )
