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
   compared exactly after undoing the float conversion (:func:`spent_matches`);
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
   ``plannedAttempts``, and equal to it in a full run; the reservation rule (issue 19; optional,
   :mod:`agentstudy.protocol.ledger_budget_rule`) matches every recorded reservation, and
   ``largestOvershootUsd`` what the observations say; a sequential run's ``sequential`` block (issue 35;
   optional, :mod:`agentstudy.protocol.ledger_sequential`) agrees with its observations, and a run the
   sequential test stopped early ends ``awaiting-adjudication`` with every observation completed.

Everything here is pure.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from agentstudy.protocol.agent_names import AGENT_NAMES, DEFAULT_AGENT
from agentstudy.protocol.controlled.contracts import describe_validation_error
from agentstudy.protocol.controlled.hashing import (
    CONTENT_HASH_ALGO,
    JsonDocumentError,
    canonical_json,
    canonical_object,
    parse_json_text,
    sha256_normalized_v1,
)
from agentstudy.protocol.ledger_budget_rule import budget_rule_problems
from agentstudy.protocol.ledger_concurrency import concurrency_problems, continues
from agentstudy.protocol.ledger_sequential import early_stop, sequential_problems
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.run_records import CliRunSettings, OpenReservation
from agentstudy.protocol.study_arms import SCENARIOS
from agentstudy.stream.outcome import CLI_STATUSES

HASH_ALGO = CONTENT_HASH_ALGO
HASH_ALGO_KEY = "hashAlgo"
LEDGER_HASH_KEY = "ledgerHash"
OBSERVATION_HASH_KEY = "observationHash"
OBSERVATION_MONEY = ("attemptBudgetUsd", "cliReportedCostUsd", "computedCostUsd", "reservedUsd", "measuredUsd",
                     "chargedUsd")
_FLOAT_SLACK = Decimal(2) ** -52
_RESOLUTION = Decimal("1e-30")


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
    problems.extend(_invariant_problems(ledger, document))
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


def _name(index: int, observation: Mapping[str, Any]) -> str:
    return (f"observations[{index}] ({observation.get('taskId')} {observation.get('scenario')} "
            f"repetition {observation.get('repetition')})")


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
            yield f"{_name(index, observation)}: no observationHash"
        elif observation[OBSERVATION_HASH_KEY] != _sha256(canonical_object(members)):
            yield (f"{_name(index, observation)}: observationHash does not match the observation "
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


def _exact(value: float) -> Decimal:
    return Decimal(value)  # the float's exact binary value, no rounding


def spent_matches(spent: float, terms: list[float]) -> bool:
    """Whether ``spent`` is the exact ``Decimal`` sum the runner wrote, given the terms as written.

    The runner adds exact ``Decimal`` amounts (``pricing``) and writes each term and the sum as
    the nearest float (relative error at most 2**-53 each; ``pricing.money.usd`` may also round
    a term up at 1e-30 USD). So an honest ledger always has ``|spent - sum(terms)|`` within
    ``2**-52 * (spent + sum(terms)) + 1e-30 * (len(terms) + 1)``, computed exactly from the floats;
    any edit beyond a few units in the last place is caught.
    """
    with localcontext() as context:
        context.prec = 2000
        exact_terms = [_exact(term) for term in terms]
        total = sum(exact_terms, Decimal(0))
        allowed = _FLOAT_SLACK * (_exact(spent) + total) + _RESOLUTION * (len(terms) + 1)
        return abs(_exact(spent) - total) <= allowed


def is_loopback_http(url: str | None) -> bool:
    """Whether ``url`` is ``http://`` on a loopback host (``localhost``, 127.0.0.0/8, ``::1``): the rehearsal server."""
    if url is None:
        return False
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def _invariant_problems(ledger: MinimalLedger, document: Mapping[str, Any]) -> Iterator[str]:
    raw = document["observations"]
    seen: set[tuple[str, str, int, str]] = set()
    for index, observation in enumerate(ledger.observations):
        name = _name(index, raw[index])
        if observation.transport != ledger.transport:
            yield f"{name}: transport {observation.transport} in a {ledger.transport} ledger"
        if observation.transport == "cli" and observation.status not in CLI_STATUSES:
            yield f"{name}: {observation.status!r} is not a status of a cli attempt"
        identity = (observation.task_id, observation.scenario, observation.repetition,
                    getattr(observation, "agent", None) or DEFAULT_AGENT)  # one per agent (issue 21)
        if identity in seen:
            whose = "" if identity[3] == DEFAULT_AGENT else f" of {identity[3]}"
            yield f"{name}: a second observation of {identity[0]} {identity[1]} repetition {identity[2]}{whose}"
        seen.add(identity)
        if (ledger.concurrency is None and index < len(ledger.observations) - 1
                and not continues(ledger.transport, observation.status)):
            yield f"{name}: the run goes on after an attempt that ended {observation.status}"
    yield from concurrency_problems(ledger)
    for where, opened in _open_reservations(ledger):
        if (opened.task_id, opened.scenario, opened.repetition, opened.agent or DEFAULT_AGENT) in seen:
            yield (f"{where}: {opened.task_id} {opened.scenario} repetition {opened.repetition} "
                   f"is already observed")
    if len(ledger.observations) > ledger.planned_attempts:
        yield f"{len(ledger.observations)} observations of {ledger.planned_attempts} planned attempts"
    yield from _arm_problems(ledger)
    yield from _status_problems(ledger)
    yield from _budget_problems(ledger, document)
    yield from budget_rule_problems(ledger, document)
    yield from sequential_problems(ledger, document)
    yield from _transport_problems(ledger)


def _open_reservations(ledger: MinimalLedger) -> list[tuple[str, OpenReservation]]:
    """Every open reservation with where it is written (``openReservation`` or ``openReservations[i]``)."""
    found = [("openReservation", ledger.open_reservation)] if ledger.open_reservation is not None else []
    found += [(f"openReservations[{i}]", r) for i, r in enumerate(ledger.open_reservations or [])]
    return found


def _arm_problems(ledger: MinimalLedger) -> Iterator[str]:
    full, planned = ledger.full_attempts, ledger.planned_attempts
    if full is not None and (full < planned or (ledger.mode == "full" and full != planned)):
        yield f"fullAttempts {full} does not fit {planned} planned attempts of a {ledger.mode} run"
    if ledger.arms is None:
        return
    if [arm.scenario for arm in ledger.arms] != list(SCENARIOS):
        yield f"arms: the scenarios must be {list(SCENARIOS)}, in that order"
    elif len({arm.id for arm in ledger.arms}) != len(ledger.arms):
        yield "arms: the arm ids must differ"
    elif ledger.arms[1].mcp_server != ledger.mcp_server.name:
        yield (f"arms: the treatment arm names server {ledger.arms[1].mcp_server!r}, "
               f"mcpServer {ledger.mcp_server.name!r}")


def _status_problems(ledger: MinimalLedger) -> Iterator[str]:
    status, finished, stop = ledger.status, ledger.finished_at is not None, ledger.stop_reason is not None
    if status != "running" and ledger.journal is not None:
        yield f"status {status} with a journal key (only a running snapshot keeps a journal)"
    if status == "running":
        if finished or stop:
            yield "status running, but the ledger has a finishedAt or a stopReason (a closed run)"
        return
    if not finished:
        yield f"status {status} without finishedAt"
    if status == "blocked":
        if not stop:
            yield "status blocked without a stopReason"
        return
    if stop:
        yield f"status awaiting-adjudication with a stopReason ({ledger.stop_reason})"
    if _open_reservations(ledger):
        yield "status awaiting-adjudication with an open reservation"
    completed = sum(o.status == "completed" for o in ledger.observations)
    planned = len(ledger.observations) if early_stop(ledger) else ledger.planned_attempts  # issue 35
    if completed != planned or completed != len(ledger.observations):
        yield (f"status awaiting-adjudication, but {completed} of {len(ledger.observations)} observations "
               f"completed and {ledger.planned_attempts} were planned")


def _budget_problems(ledger: MinimalLedger, document: Mapping[str, Any]) -> Iterator[str]:
    budget = document["budget"]
    opened = document.get("openReservation") or {}
    terms = [o["chargedUsd"] for o in document["observations"]]
    terms += [opened[key] for key in ("reservedUsd", "chargedUsd") if key in opened]
    for each in document.get("openReservations") or []:
        terms += [each[key] for key in ("reservedUsd", "chargedUsd") if key in each]
    if not spent_matches(budget["spent"], terms):
        charges = sum((_exact(t) for t in terms), Decimal(0))
        yield (f"budget.spent {budget['spent']!r} is not the observations' charges plus the open reservation "
               f"({float(charges)!r})")
    # Rounding to floats is monotonic: an exact spent > cap is written spent >= cap, and spent <= cap stays so.
    flag, spent, cap = budget["cumulativeCapExceeded"], budget["spent"], budget["cap"]
    if (flag and spent < cap) or (not flag and spent > cap):
        yield f"budget.cumulativeCapExceeded is {str(flag).lower()} with spent {spent!r} and cap {cap!r}"


def _transport_problems(ledger: MinimalLedger) -> Iterator[str]:
    if ledger.transport == "http":
        if ledger.http is None or ledger.prices is None or ledger.cli is not None:
            yield "an http ledger records the http and prices blocks and no cli block"
            return
        base_url: str | None = ledger.http.api_base_url
        where = "http.apiBaseUrl"
    else:
        if ledger.cli is None or ledger.http is not None or ledger.prices is not None:
            yield "a cli ledger records the cli block and no http or prices block"
            return
        base_url, where = ledger.cli.base_url, "cli.baseUrl"
        yield from _agent_problems(ledger.cli)
    if ledger.rehearsal and not is_loopback_http(base_url):
        yield f"rehearsal is true, but {where} ({base_url}) is not the local rehearsal server (http on loopback)"


def _agent_problems(cli: CliRunSettings) -> Iterator[str]:
    """``cli.agent`` (issue 21; absent in older ledgers, whose agent is Claude Code): a known agent, the
    probed version line itself, and a features list exactly for Codex."""
    agent = cli.agent
    if agent is None:
        return
    if agent.name not in AGENT_NAMES:
        yield f"cli.agent.name {agent.name!r} is not a known agent ({', '.join(AGENT_NAMES)})"
    if agent.version != cli.cli_version:
        yield f"cli.agent.version {agent.version!r} is not cli.cliVersion {cli.cli_version!r}"
    if (agent.features is not None) != (agent.name == "codex"):
        yield "cli.agent.features is recorded for Codex and only for Codex"
    names = [agent.name, *(other.name for other in cli.other_agents or [])]
    for index, other in enumerate(cli.other_agents or []):  # a several-agent run's others (issue 21 item 6)
        where = f"cli.otherAgents[{index}]"
        if other.name not in AGENT_NAMES:
            yield f"{where}.name {other.name!r} is not a known agent ({', '.join(AGENT_NAMES)})"
        if (other.features is not None) != (other.name == "codex"):
            yield f"{where}.features is recorded for Codex and only for Codex"
    if len(set(names)) != len(names):
        yield "cli.otherAgents names an agent twice (or the primary cli.agent again)"
