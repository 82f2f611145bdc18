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

from agentstudy.protocol.records import ContinuesRecord, MinimalLedger, RunLink
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
    name (for messages); ``earlier`` the verified links before it, oldest first (issue 40: a chain is one
    study, read whole)."""

    ledger: MinimalLedger
    sha256: str
    name: str
    earlier: tuple[Predecessor, ...] = ()

    def links(self) -> tuple[Predecessor, ...]:
        """Every run of the chain behind the new one, oldest first (this one last)."""
        return (*self.earlier, self)

    def completed(self) -> set[Cell]:
        """The cells any run of the chain observed ``completed``."""
        return set().union(*(completed_cells(link.ledger.to_json()) for link in self.links()))

    def record(self, completed_before: int) -> ContinuesRecord:
        """The new ledger's ``continues`` block naming this predecessor, the links before it and
        ``completed_before`` (the cells of the new run's schedule the chain already completed)."""
        return ContinuesRecord(ledger_sha256=self.sha256, run_id=self.ledger.run_id,
                               earlier_runs=[RunLink(ledger_sha256=link.sha256, run_id=link.ledger.run_id)
                                             for link in self.earlier],
                               completed_before=completed_before)


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
    crashed and its ledger was never closed), or a sequential study that stopped (issue 40: its stopping
    rule decided; a continuation would be optional stopping by the back door)."""
    problems = []
    if old.status == "running":
        problems.append("its status is running (a run still in progress, or one that crashed: once its process is "
                        "gone, close it first with `agentstudy ledger --close LEDGER`)")
    if old.sequential is not None and old.sequential.stop_reason is not None:
        record = old.sequential
        problems.append(f"its sequential study stopped for {record.stop_reason} after {record.tasks_completed} "
                        f"tasks (the stopping rule decided; no further attempt may run)")
    return problems


def missing_links(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The runs a ledger continues (its ``continues`` block: the earlier runs, oldest first, then the direct
    predecessor), each ``{"ledgerSha256", "runId"}``; empty for a run of its own (issue 40)."""
    link = document.get("continues")
    if not isinstance(link, dict):
        return []
    earlier = [dict(each) for each in link.get("earlierRuns") or [] if isinstance(each, dict)]
    return [*earlier, {"ledgerSha256": link.get("ledgerSha256"), "runId": link.get("runId")}]


def chain_problems(documents: Sequence[tuple[str, str, Mapping[str, Any]]], *, partial: bool = False) -> list[str]:
    """Problems of a chain of ledgers ``(file name, SHA-256 hex of its bytes, document)`` in order: each
    after the first must name the one before it in ``continues`` (hash and run id), the first names none
    (unless ``partial``: the tail of a chain, issue 40), each names the runs before it as given
    (``earlierRuns``), and no cell is observed ``completed`` in two of them."""
    problems: list[str] = []
    seen: dict[Cell, str] = {}
    for index, (name, _sha, document) in enumerate(documents):
        link = document.get("continues")
        if index == 0:
            if link is not None and not partial:
                problems.append(f"{name} continues another run: give its ledger first")
        else:
            previous_name, previous_sha, previous = documents[index - 1]
            if not isinstance(link, dict) or link.get("ledgerSha256") != previous_sha:
                problems.append(f"{name} does not continue {previous_name} (its continues.ledgerSha256 is not "
                                f"the SHA-256 of that file)")
            elif link.get("runId") != previous.get("runId"):
                problems.append(f"{name} names run {link.get('runId')!r}, but {previous_name} is run "
                                f"{previous.get('runId')!r}")
            elif "earlierRuns" in link and missing_links(document)[:-1] != [
                    *missing_links(documents[0][2]),
                    *({"ledgerSha256": sha, "runId": doc.get("runId")} for _n, sha, doc in documents[:index - 1])]:
                problems.append(f"{name} names other earlier runs than the ledgers given before {previous_name}")
        for cell in sorted(completed_cells(document)):
            if cell in seen:
                problems.append(f"{cell[0]} {cell[1]} repetition {cell[2]} ({cell[3]}) is completed in both "
                                f"{seen[cell]} and {name}")
            else:
                seen[cell] = name
    return problems
