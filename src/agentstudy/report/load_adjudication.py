"""Join a minimal-study ledger's adjudication companion to the study read by ``report.load``.

The companion must be a valid :class:`~agentstudy.protocol.adjudication.MinimalAdjudication`
whose ``ledgerSha256`` is the SHA-256 of the ledger file's bytes, whose ``adjudicationHash`` is its
content's (issue 29: a forged score is refused), whose integrity holds
(``protocol.adjudication_integrity``), and whose items point at observations with the same
task and repetition. Split from ``report.load`` (issue 19 housekeeping: one job per module).
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import ValidationError

from agentstudy.pricing.sums import usd_from_json
from agentstudy.protocol.adjudication import RUBRIC_SCORES, MinimalAdjudication, companion_hash_problem
from agentstudy.protocol.adjudication_integrity import companion_problems
from agentstudy.report.input_bytes import json_document
from agentstudy.report.model import COMPLETED, AdjudicationInfo, ReportInputError, Study


def join_adjudication(study: Study, data: bytes, file_name: str) -> Study:
    """Join a companion's bytes to ``study``: scores onto scored items, ``pending`` or ``missing`` elsewhere.

    Raises:
        ReportInputError: the companion is not a valid adjudication record, its ``ledgerSha256``
            is not the ledger's SHA-256, its ``adjudicationHash`` is absent or not its content's, its
            money or timing invariants break (``protocol.adjudication_integrity``), or an item points at
            no observation, at one of another task or repetition, or twice at the same one.
    """
    document = json_document(data, "adjudication companion")
    try:
        companion = MinimalAdjudication.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        place = ".".join(str(p) for p in first["loc"])
        raise ReportInputError(f"the adjudication companion is not valid: {place}: {first['msg']}") from None
    if companion.ledger_sha256 != study.sha256:
        raise ReportInputError(f"the adjudication companion is bound to ledger SHA-256 {companion.ledger_sha256}, "
                               f"not to this ledger ({study.sha256})")
    forged = companion_hash_problem(document)
    if forged is not None:
        raise ReportInputError(f"the adjudication companion does not verify: {forged}")
    problems = companion_problems(companion)
    if problems:
        raise ReportInputError(f"the adjudication companion does not hold together: {problems[0]}")
    attempts = list(study.attempts)
    joined: set[int] = set()
    for item in companion.items:
        index = item.observation_index
        if not 0 <= index < len(attempts) or index in joined:
            raise ReportInputError(f"adjudication item {item.item_id} points at no observation or at one twice")
        target = attempts[index]
        if (target.task_id, target.repetition) != (item.task_id, item.repetition):
            raise ReportInputError(f"adjudication item {item.item_id} does not match observation {index + 1}")
        joined.add(index)
        if item.status == "scored":
            score = item.score if item.score is not None else RUBRIC_SCORES.get(item.rubric or "")
            if score is None or not 0 <= score <= 1:
                raise ReportInputError(f"adjudication item {item.item_id} is scored without a score in [0, 1]")
            attempts[index] = replace(target, correctness=float(score), rubric=item.rubric, adjudication="scored")
        else:
            reason = " ".join((item.pending_reason or "no reason recorded").split())[:160]
            attempts[index] = replace(target, adjudication="pending", pending_reason=reason)
    for index, attempt in enumerate(attempts):
        if index not in joined:
            state = "pending" if attempt.status == COMPLETED else "missing"
            attempts[index] = replace(attempt, adjudication=state,
                                       pending_reason="no adjudication item" if state == "pending" else None)
    try:
        spent = usd_from_json(companion.budget.spent, what="the adjudication's spent")
        cap = usd_from_json(companion.budget.cap, what="the adjudication's cap")
    except ValueError as error:
        raise ReportInputError(str(error)) from None
    info = AdjudicationInfo(
        file_name=file_name,
        ledger_sha256=companion.ledger_sha256,
        status=companion.status,
        adjudicator_models=tuple(sorted({item.adjudicator_model for item in companion.items})),
        spent_usd=spent,
        cap_usd=cap,
        scored=sum(a.adjudication == "scored" for a in attempts),
        pending=sum(a.adjudication == "pending" for a in attempts),
    )
    return replace(study, attempts=tuple(attempts), adjudication=info)
