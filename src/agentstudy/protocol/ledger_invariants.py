"""The invariants every reader checks on a minimal-study ledger (check 4 of
:mod:`agentstudy.protocol.ledger_integrity`, issue 16): spent as the exact sum of its charges, one
observation per cell, no attempt after one that stops the run, the status, the arms, the budget rule,
the sequential block, the arms' order, the transport's blocks and a rehearsal's loopback URL. Pure.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from decimal import Decimal, localcontext
from typing import Any
from urllib.parse import urlsplit

from agentstudy.protocol.agent_names import AGENT_NAMES, DEFAULT_AGENT
from agentstudy.protocol.ledger_budget_rule import budget_rule_problems
from agentstudy.protocol.ledger_concurrency import concurrency_problems, continues
from agentstudy.protocol.ledger_order import order_problems
from agentstudy.protocol.ledger_sequential import early_stop, sequential_problems
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.run_records import CliRunSettings, OpenReservation
from agentstudy.protocol.study_arms import SCENARIOS
from agentstudy.stream.outcome import CLI_STATUSES

_FLOAT_SLACK = Decimal(2) ** -52
_RESOLUTION = Decimal("1e-30")


def observation_name(index: int, observation: Mapping[str, Any]) -> str:
    """How a problem names ``observations[index]``: its index, task, scenario and repetition."""
    return (f"observations[{index}] ({observation.get('taskId')} {observation.get('scenario')} "
            f"repetition {observation.get('repetition')})")


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


def invariant_problems(ledger: MinimalLedger, document: Mapping[str, Any]) -> Iterator[str]:
    """Every broken invariant of a parsed, shape-valid ledger (check 4 of
    :mod:`agentstudy.protocol.ledger_integrity`), one line each."""
    raw = document["observations"]
    seen: set[tuple[str, str, int, str]] = set()
    for index, observation in enumerate(ledger.observations):
        name = observation_name(index, raw[index])
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
    yield from order_problems(ledger)
    yield from _transport_problems(ledger)


def _open_reservations(ledger: MinimalLedger) -> list[tuple[str, OpenReservation]]:
    """Every open reservation with where it is written (``openReservation`` or ``openReservations[i]``)."""
    found = [("openReservation", ledger.open_reservation)] if ledger.open_reservation is not None else []
    found += [(f"openReservations[{i}]", r) for i, r in enumerate(ledger.open_reservations or [])]
    return found


def _arm_problems(ledger: MinimalLedger) -> Iterator[str]:
    full, planned = ledger.full_attempts, ledger.planned_attempts
    # One rule for first runs and continuations (issue 40): the cells the chain completed before count.
    before = (ledger.continues.completed_before or 0) if ledger.continues is not None else 0
    if full is not None and (full < planned + before or (ledger.mode == "full" and full != planned + before)):
        chain = f" and {before} completed before in its chain" if before else ""
        yield f"fullAttempts {full} does not fit {planned} planned attempts{chain} of a {ledger.mode} run"
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
