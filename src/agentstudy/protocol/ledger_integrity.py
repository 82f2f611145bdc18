"""Tamper evidence of the minimal-study ledger (issue 16, deliverable 6): its hashes and the checks every reader makes.

**Hashes.** The algorithm is the controlled ledger's ``sha256-normalized-v1``
(:mod:`agentstudy.protocol.controlled.hashing`): SHA-256 of the JavaScript-exact canonical JSON,
every object's keys sorted, so a number reads the same whether it was written ``1`` or ``1.0``.

- ``observations[i].observationHash`` covers that observation exactly as written, minus its own
  ``observationHash`` key.
- ``ledgerHash`` covers the whole document exactly as written, minus ``ledgerHash``: the header,
  ``hashAlgo`` (always ``"sha256-normalized-v1"``), the budget, the open reservation, the status and
  stop reason, and every observation *with* its ``observationHash`` in order — the observation
  hashes are chained into it, so dropping, duplicating or reordering one changes it.

Both cover whatever keys are written, so an optional field added later is covered without a
change here. Writers call :func:`seal_ledger` on the document they are about to write (after any
redaction), at every checkpoint.

**Checks**, in this order (:func:`verify_ledger_bytes`); each problem is one line naming a field:

1. the text is strict JSON (no NaN or Infinity, no duplicated key) and a valid
   :class:`~agentstudy.protocol.records.MinimalLedger`;
2. every USD amount (``budget``, its optional ``worstTurnUsd`` and ``largestOvershootUsd`` (that one
   may be ``null``), ``prices``, ``cli.attemptBudgetUsd``, ``http.attemptBudgetUsd``, ``openReservation``,
   each observation's money) is a finite JSON number >= 0;
3. ``hashAlgo``, ``ledgerHash`` and every ``observationHash`` are present and match;
4. the invariants: ``spent`` = the observations' ``chargedUsd`` + the open reservation's
   ``reservedUsd`` + its ``chargedUsd`` (what an http attempt's settled calls already charged),
   compared exactly after undoing the float conversion
   (:func:`agentstudy.protocol.ledger_invariants.spent_matches`, where check 4 lives);
   ``cumulativeCapExceeded`` is ``spent > cap``; each (task, scenario, repetition) once, the open
   reservation's included; every observation of the ledger's transport, with a status of it;
   at most ``plannedAttempts``; no observation after one that stops the run (cli: anything but
   ``completed``; http: ``failed``, ``budget-exceeded``) — in a concurrent run (``concurrency``,
   issue 19) no observation started (``startedAt``) after the earliest ``endedAt`` of one that
   stops the run, never more than ``concurrency`` attempts ran at once (their ``startedAt`` ..
   ``endedAt`` intervals), and every entry of ``openReservations`` is counted in ``spent``; the
   status consistent with them:
   ``running`` has no ``finishedAt`` and no ``stopReason`` (a crashed run: honest, it verifies);
   ``blocked`` has both; ``awaiting-adjudication`` has ``finishedAt``, no ``stopReason``, no
   open reservation, and every planned attempt observed and ``completed``; and ``rehearsal``
   consistent with the recorded base URL: a rehearsal's (``http.apiBaseUrl``, ``cli.baseUrl``) is
   a plain-``http`` loopback URL, where the rehearsal server listens (the runners refuse any
   other). The converse cannot be checked — a paid run may go through a loopback gateway — so
   ``rehearsal`` flipped to false is caught by ``ledgerHash`` alone. A study file's ``arms``
   (issue 18; optional) are the two scenarios in order with distinct ids, the treatment's
   ``mcpServer`` the ledger's ``mcpServer.name``; ``fullAttempts`` (optional) at least
   ``plannedAttempts`` plus a continuation's ``continues.completedBefore`` (issue 40), and equal to that sum
   in a full run; the reservation rule (issue 19; optional,
   :mod:`agentstudy.protocol.ledger_budget_rule`) matches every recorded reservation, and
   ``largestOvershootUsd`` what the observations say; a sequential run's ``sequential`` block (issue 35;
   optional, :mod:`agentstudy.protocol.ledger_sequential`) agrees with its observations, and a run the
   sequential test stopped early ends ``awaiting-adjudication`` with every observation completed.

Everything here is pure.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agentstudy.protocol.controlled.contracts import describe_validation_error
from agentstudy.protocol.controlled.hashing import (
    CONTENT_HASH_ALGO,
    JsonDocumentError,
    canonical_json,
    canonical_object,
    parse_json_text,
    sha256_normalized_v1,
)
from agentstudy.protocol.ledger_invariants import invariant_problems, observation_name
from agentstudy.protocol.records import MinimalLedger

HASH_ALGO = CONTENT_HASH_ALGO
HASH_ALGO_KEY = "hashAlgo"
LEDGER_HASH_KEY = "ledgerHash"
OBSERVATION_HASH_KEY = "observationHash"
OBSERVATION_MONEY = ("attemptBudgetUsd", "cliReportedCostUsd", "computedCostUsd", "reservedUsd", "measuredUsd",
                     "chargedUsd")


def observation_hash(observation: Mapping[str, Any]) -> str:
    """``observationHash``: of the observation as written, without its own ``observationHash``.

    Raises:
        ValueError, TypeError: a value JSON cannot hold (a non-finite number included).
    """
    return sha256_normalized_v1({k: v for k, v in observation.items() if k != OBSERVATION_HASH_KEY})


def ledger_hash(document: Mapping[str, Any]) -> str:
    """``ledgerHash``: of the document as written, without ``ledgerHash`` (observation hashes included).

    Raises:
        ValueError, TypeError: as :func:`observation_hash`.
    """
    return sha256_normalized_v1({k: v for k, v in document.items() if k != LEDGER_HASH_KEY})


def seal_ledger(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with every observation's ``observationHash``, then ``hashAlgo`` and ``ledgerHash``, set.

    Existing hashes are recomputed; key order is kept, the new keys come last.

    Raises:
        ValueError, TypeError: as :func:`observation_hash` (a ledger never holds a non-finite number).
    """
    sealed = {k: v for k, v in document.items() if k not in (LEDGER_HASH_KEY, HASH_ALGO_KEY)}
    sealed["observations"] = [{**{k: v for k, v in o.items() if k != OBSERVATION_HASH_KEY},
                               OBSERVATION_HASH_KEY: observation_hash(o)} for o in document["observations"]]
    sealed[HASH_ALGO_KEY] = HASH_ALGO
    sealed[LEDGER_HASH_KEY] = ledger_hash(sealed)
    return sealed


FEW_PROBLEMS = 3
"""How many problems a warning quotes before it only counts the rest (issue 42: a changed 50,000-observation
ledger would otherwise print one clause per observation)."""


def few_problems(problems: tuple[str, ...] | list[str], shown: int = FEW_PROBLEMS) -> str:
    """``problems`` for one line: all of them when there are at most ``shown``, else how many and the first
    ``shown`` and how many more ("400 problems, the first 3: a; b; c; and 397 more")."""
    if len(problems) <= shown:
        return "; ".join(problems)
    return (f"{len(problems)} problems, the first {shown}: " + "; ".join(problems[:shown])
            + f"; and {len(problems) - shown} more")


@dataclass(frozen=True)
class LedgerVerification:
    """The result of :func:`verify_ledger_bytes`: every problem found (none: verified), first one first."""

    problems: tuple[str, ...]

    @property
    def verified(self) -> bool:
        """No problem: hashes match and every invariant holds."""
        return not self.problems

    def first(self) -> str:
        """The first problem, followed by how many more there are."""
        more = len(self.problems) - 1
        return self.problems[0] + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def verify_ledger_bytes(data: bytes | str) -> LedgerVerification:
    """Verify a minimal-study ledger's text: strict JSON, its shape, money, hashes and invariants."""
    return parse_and_verify(data)[1]


def parse_and_verify(data: bytes | str) -> tuple[Any, LedgerVerification]:
    """The ledger's text parsed strictly (``None`` when it is not strict JSON) and its verification: what
    :func:`verify_ledger_bytes` does, with the parsed document kept, so a reader parses a large ledger once."""
    try:
        document = parse_json_text(data.decode("utf-8") if isinstance(data, bytes) else data)
    except UnicodeDecodeError:
        return None, LedgerVerification(("the ledger is not UTF-8",))
    except JsonDocumentError as error:
        return None, LedgerVerification((f"the ledger is not strict JSON: {error}",))
    return document, verify_ledger(document)


def verify_ledger(document: Any) -> LedgerVerification:
    """Verify a parsed minimal-study ledger (see the module's checks)."""
    if not isinstance(document, dict):
        return LedgerVerification(("the ledger is not a JSON object",))
    problems = list(_money_problems(document))
    try:
        ledger = MinimalLedger.model_validate(document)
    except ValidationError as error:
        return LedgerVerification((*problems, f"not a valid minimal-study ledger: {describe_validation_error(error)}"))
    if problems:
        return LedgerVerification(tuple(problems))
    try:
        problems.extend(_hash_problems(document))
    except (TypeError, ValueError) as error:
        problems.append(f"the ledger cannot be hashed: {error}")
    problems.extend(invariant_problems(ledger, document))
    return LedgerVerification(tuple(problems))


def _is_money(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 and (
        isinstance(value, int) or math.isfinite(value))


def _money_problems(document: Mapping[str, Any]) -> Iterator[str]:
    def amounts(block: Any, keys: tuple[str, ...], where: str, optional: bool = False) -> Iterator[str]:
        if not isinstance(block, Mapping):
            return
        for key in keys:
            if key in block and not (_is_money(block[key]) or (optional and block[key] is None)):
                yield f"{where}.{key}: {block[key]!r} is not a finite amount >= 0"

    yield from amounts(document.get("budget"), ("cap", "spent", "reserved", "measured"), "budget")
    yield from amounts(document.get("budget"), ("largestOvershootUsd",), "budget", optional=True)
    yield from amounts(document.get("budget"), ("worstTurnUsd",), "budget")
    yield from amounts(document.get("prices"), ("input", "output"), "prices")
    yield from amounts(document.get("cli"), ("attemptBudgetUsd",), "cli")
    yield from amounts(document.get("http"), ("attemptBudgetUsd",), "http")
    yield from amounts(document.get("openReservation"), ("reservedUsd", "chargedUsd"), "openReservation")
    listed = document.get("openReservations")
    for index, each in enumerate(listed if isinstance(listed, list) else []):
        yield from amounts(each, ("reservedUsd", "chargedUsd"), f"openReservations[{index}]")
    observations = document.get("observations")
    for index, observation in enumerate(observations if isinstance(observations, list) else []):
        yield from amounts(observation, OBSERVATION_MONEY, f"observations[{index}]", optional=True)


def _hash_problems(document: Mapping[str, Any]) -> Iterator[str]:
    observations = document["observations"]
    if LEDGER_HASH_KEY not in document and not any(OBSERVATION_HASH_KEY in o for o in observations):
        yield "no ledgerHash or observationHash: written before minimal ledgers were hashed (or stripped since)"
        return
    if document.get(HASH_ALGO_KEY) != HASH_ALGO:
        yield f"hashAlgo is {document.get(HASH_ALGO_KEY)!r}, not {HASH_ALGO!r}"
    texts: list[str] = []
    for index, observation in enumerate(observations):
        members = {key: canonical_json(value) for key, value in observation.items()}
        written = members.pop(OBSERVATION_HASH_KEY, None)
        if written is None:
            yield f"{observation_name(index, observation)}: no observationHash"
        elif observation[OBSERVATION_HASH_KEY] != _sha256(canonical_object(members)):
            yield (f"{observation_name(index, observation)}: observationHash does not match the observation "
                   f"(changed after it was written)")
        if written is not None:
            members[OBSERVATION_HASH_KEY] = written
        texts.append(canonical_object(members))
    if LEDGER_HASH_KEY not in document:
        yield "no ledgerHash"
        return
    # The ledger hash reuses each observation's canonical text (one walk over the observations, not two).
    top = {key: canonical_json(value) for key, value in document.items()
           if key not in (LEDGER_HASH_KEY, "observations")}
    top["observations"] = "[" + ",".join(texts) + "]"
    if document[LEDGER_HASH_KEY] != _sha256(canonical_object(top)):
        yield "ledgerHash does not match the document (changed after it was written)"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
