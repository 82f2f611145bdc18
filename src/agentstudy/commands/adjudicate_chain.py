"""``agentstudy adjudicate A.json B.json``: adjudicating a chain of runs (issue 33 item 7).

B's run continued A's (``--continue-from``). The chain is read and checked link by link
(``protocol.continuation.chain_problems``: each ledger names the one before it by the SHA-256 of its bytes and
its run id, and no cell is completed in two of them) before anything is written; then each run's completed
attempts are blinded and scored into a companion beside its ledger, in the runs' order, under one cap: each
run gets what the earlier ones left of it, and the first run whose adjudication does not finish stops the chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentstudy.adjudication.run import AdjudicationRequest
from agentstudy.commands.common import EXIT_BLOCKED, EXIT_OK

if TYPE_CHECKING:
    from agentstudy.adjudication.ledger_view import MinimalLedgerView

Runner = Callable[[AdjudicationRequest, str], tuple[int, Decimal]]
"""Runs one adjudication with a note for its table; returns the exit code and the USD it spent."""


def read_chain(paths: Sequence[Path], first: tuple[bytes, dict[str, Any]], *,
               partial: bool = False) -> list[tuple[MinimalLedgerView, bytes]]:
    """The adjudication views of the chain ``paths`` (oldest first) with each ledger's bytes; ``first`` is the
    first ledger already read (bytes, parsed document); ``partial``: the first may continue runs not given
    (``--partial-chain``; issue 40).

    Raises:
        LedgerError: a ledger that cannot be read, is not a minimal-study ledger or is malformed, or ledgers
            that are not one chain of runs (the message names the first problem).
    """
    from agentstudy.adjudication.ledger_view import LedgerError, minimal_view, read_ledger_bytes
    from agentstudy.protocol.continuation import chain_problems
    read: list[tuple[Path, bytes, dict[str, Any]]] = [(paths[0], *first)]
    for path in paths[1:]:
        data, document, kind = read_ledger_bytes(path)
        if kind != "minimal-study":
            raise LedgerError(f"{path} is not a minimal-study ledger; a chain of runs is of minimal-study ledgers")
        read.append((path, data, document))
    problems = chain_problems([(path.name, hashlib.sha256(data).hexdigest(), document)
                               for path, data, document in read], partial=partial)
    if problems:
        raise LedgerError(f"the ledgers are not one chain of runs: {problems[0]}")
    return [(minimal_view(path.resolve(), data, document), data) for path, data, document in read]


def run_chain(requests: Sequence[AdjudicationRequest], runner: Runner, rehearsal_note: str) -> int:
    """Run ``requests`` (one per run of the chain, in order; each with the whole cap) one after another under
    the first one's cap: each gets the cap less what the earlier ones spent. Returns the exit code: the first
    that is not 0, ``EXIT_BLOCKED`` when what is left of the cap does not hold one item's limit, else 0."""
    from agentstudy.pricing.sums import display_usd
    cap = requests[0].cap_usd
    spent = Decimal(0)
    for index, request in enumerate(requests):
        left = cap - spent
        if left < request.item_budget_usd:
            click.echo(f"agentstudy: the adjudication cap has {display_usd(left)} USD left, less than one item's "
                       f"limit: {request.ledger.path} not adjudicated", err=True)
            return EXIT_BLOCKED
        which = f"run {index + 1} of {len(requests)}" if len(requests) > 1 else ""
        note = ", ".join(filter(None, (rehearsal_note, "UNVERIFIED ledger" if request.ledger.unverified else "",
                                       which)))
        code, charged = runner(replace(request, cap_usd=left), note)
        spent += charged
        if code != EXIT_OK:
            return code
    return EXIT_OK
