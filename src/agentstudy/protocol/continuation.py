"""An explicit continuation of a stopped run (issue 33 item 7): what it plans and what it must match.

``--continue-from LEDGER`` starts a new run with a new ledger. The old ledger is only read and verified; the
new run plans the cells (task x arm x repetition x agent) the old one did not observe ``completed``, and its
preflight must find what the old one recorded (pins, protocol, agent and its version, model, prices, arms,
MCP server tools, containment, rehearsal or not). The new ledger's ``continues`` names the old one by the
SHA-256 of its bytes and its ``runId``. Pure functions: the runners and the report call them.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.records import ContinuesRecord, MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.protocol.study_agents import DEFAULT_AGENT

Cell = tuple[str, str, int, str]
"""``(taskId, scenario, repetition, agent)``: one cell of a study's schedule."""


def new_run_id() -> str:
    """A fresh run id: 16 random hex characters (recorded as the ledger's ``runId``)."""
    return secrets.token_hex(8)


@dataclass(frozen=True)
class Predecessor:
    """A verified old ledger a continuation starts from: its model, the SHA-256 hex of its bytes and its file
    name (for messages)."""

    ledger: MinimalLedger
    sha256: str
    name: str

    def record(self) -> ContinuesRecord:
        """The new ledger's ``continues`` block naming this predecessor."""
        return ContinuesRecord(ledger_sha256=self.sha256, run_id=self.ledger.run_id)


def run_agent(document: Mapping[str, Any]) -> str:
    """The agent a ledger's observations without an ``agent`` field ran with: ``cli.agent.name``, else Claude
    Code (the http loop's attempts and ledgers written before agents were named)."""
    cli = document.get("cli")
    agent = cli.get("agent") if isinstance(cli, dict) else None
    name = agent.get("name") if isinstance(agent, dict) else None
    return name if isinstance(name, str) and name else DEFAULT_AGENT


def completed_cells(document: Mapping[str, Any]) -> set[Cell]:
    """The cells a ledger (its JSON document) observed ``completed``."""
    default = run_agent(document)
    cells: set[Cell] = set()
    for obs in document.get("observations") or []:
        if isinstance(obs, dict) and obs.get("status") == "completed":
            agent = obs.get("agent") if isinstance(obs.get("agent"), str) else default
            cells.add((str(obs.get("taskId")), str(obs.get("scenario")), int(obs.get("repetition") or 0),
                       str(agent)))
    return cells


def remaining_schedule(schedule: Sequence[ScheduleEntry], done: Iterable[Cell]) -> tuple[ScheduleEntry, ...]:
    """``schedule`` without the cells in ``done``, in the schedule's own (counterbalanced) order."""
    skip = set(done)
    return tuple(e for e in schedule if (e.task_id, e.scenario, e.repetition, e.agent) not in skip)


def _facts(ledger: MinimalLedger) -> dict[str, Any]:
    """What a continuation must find unchanged, by the name a refusal uses."""
    cli = ledger.cli
    return {
        "protocol (protocolHash)": ledger.protocol_hash,
        "repository pins": dict(ledger.repositories),
        "transport": ledger.transport,
        "model": ledger.model,
        "agent version": None if cli is None else (cli.cli_version, cli.expected_cli_version,
                                                   None if cli.agent is None else cli.agent.model_dump(),
                                                   [a.model_dump() for a in cli.other_agents or []]),
        "prices": ledger.prices.model_dump() if ledger.prices is not None else (cli.prices if cli else None),
        "per-attempt limit": cli.attempt_budget_usd if cli is not None else (
            None if ledger.http is None else ledger.http.attempt_budget_usd),
        "arms": [arm.model_dump() for arm in ledger.arms or []],
        "MCP server": (ledger.mcp_server.name, ledger.mcp_server.command, ledger.mcp_server.listed_tools,
                       ledger.mcp_server.denied_tools),
        "containment": ledger.containment,
        "rehearsal": ledger.rehearsal,
        "mode": ledger.mode,
    }


def continuation_differences(old: MinimalLedger, new: MinimalLedger) -> list[str]:
    """Every recorded fact on which the new run's ledger (after its preflight) differs from the old one,
    each as ``"<fact>: <old> in the old run, <new> now"``; empty when the continuation may run."""
    before, now = _facts(old), _facts(new)
    return [f"{name}: {before[name]!r} in the old run, {now[name]!r} now" for name in before
            if before[name] != now[name]]


def continuation_problems(old: MinimalLedger) -> list[str]:
    """Why ``old`` cannot be continued at all: a run still ``running`` (its process may be alive, or it
    crashed and its ledger was never closed)."""
    problems = []
    if old.status == "running":
        problems.append("its status is running (a run still in progress, or one that crashed: close it first)")
    return problems


def chain_problems(documents: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    """Problems of a chain of ledgers ``(file name, SHA-256 hex of its bytes, document)`` in order: each
    after the first must name the one before it in ``continues`` (hash and run id), the first names none,
    and no cell is observed ``completed`` in two of them."""
    problems: list[str] = []
    seen: dict[Cell, str] = {}
    for index, (name, _sha, document) in enumerate(documents):
        link = document.get("continues")
        if index == 0:
            if link is not None:
                problems.append(f"{name} continues another run: give its ledger first")
        else:
            previous_name, previous_sha, previous = documents[index - 1]
            if not isinstance(link, dict) or link.get("ledgerSha256") != previous_sha:
                problems.append(f"{name} does not continue {previous_name} (its continues.ledgerSha256 is not "
                                f"the SHA-256 of that file)")
            elif link.get("runId") != previous.get("runId"):
                problems.append(f"{name} names run {link.get('runId')!r}, but {previous_name} is run "
                                f"{previous.get('runId')!r}")
        for cell in sorted(completed_cells(document)):
            if cell in seen:
                problems.append(f"{cell[0]} {cell[1]} repetition {cell[2]} ({cell[3]}) is completed in both "
                                f"{seen[cell]} and {name}")
            else:
                seen[cell] = name
    return problems
