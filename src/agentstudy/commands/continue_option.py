"""``--continue-from LEDGER`` (issue 33 item 7): an explicit continuation of a stopped run, never a resume.

Every ledger of the chain (issue 40: given oldest first) is read once and verified with the shared
verifier; none is ever written. The run that follows plans only the cells no run of the chain observed
``completed`` and must find in its preflight what
the old ledger recorded (``runners.continuation_steps``); its new ledger names the old one by hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import click

from agentstudy.commands.common import fail
from agentstudy.protocol.continuation import Predecessor, chain_problems, continuation_problems, missing_links
from agentstudy.protocol.ledger_integrity import parse_and_verify
from agentstudy.protocol.records import MinimalLedger

F = TypeVar("F", bound=Callable[..., object])


def continue_option(command: F) -> F:
    """Add ``--continue-from LEDGER`` (repeatable; parameter ``continue_from``: a tuple of ``Path``) to a
    command."""
    return click.option(
        "--continue-from", "continue_from", type=click.Path(path_type=Path, dir_okay=False), metavar="LEDGER",
        multiple=True,
        help="Start a new run (a new --output ledger) that plans only the attempts no run of LEDGER's chain "
             "completed; its preflight must find the same pins, agent version, model, prices, arms and "
             "containment (a difference refuses the run). A chain is one study: give every ledger of it, oldest "
             "first (--continue-from A --continue-from B). Each is only read and verified, never written; a "
             "sequential study that stopped cannot be continued. Report them together "
             "(`agentstudy report A B NEW`; docs/real-api.md).",
    )(command)


def partial_chain_option(command: F) -> F:
    """Add ``--partial-chain`` (parameter ``partial_chain``: bool) to a command that reads a chain of ledgers
    (issue 40): without it, ledgers that continue runs not given are refused."""
    return click.option(
        "--partial-chain", "partial_chain", is_flag=True,
        help="Read ledgers that continue earlier runs not given (part of a chain of runs) anyway; the output "
             "says PARTIAL CHAIN first and names the missing runs (JSON: chain.complete false, chain.missing).",
    )(command)


def _read_link(path: Path) -> tuple[Predecessor, dict[str, object]]:
    """One ledger of the chain, read and verified (exits 2 with one line when it cannot be)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        fail(f"--continue-from {path}: cannot read it: {error.strerror or error}")
    document, verification = parse_and_verify(data)
    if not verification.verified:
        fail(f"--continue-from {path}: the ledger does not verify: {verification.first()}")
    ledger = MinimalLedger.model_validate(document)
    return Predecessor(ledger=ledger, sha256=hashlib.sha256(data).hexdigest(), name=path.name), document


def load_predecessor(paths: Sequence[Path], *, sequential: bool) -> Predecessor | None:
    """The verified chain of ``--continue-from`` (``None`` without the flag): its last ledger, the earlier
    ones in ``Predecessor.earlier`` (issue 40: every link read, verified and checked as one chain).

    Exits 2 with one line: a ledger unreadable or not a verified minimal-study ledger, the ledgers not one
    whole chain (the first continuing a run not given, a broken link, a cell completed twice), any run of it
    still ``running`` or a sequential study that stopped (naming the stop's reason), or a continuation of a
    sequential design (whose stop rule covers one run).
    """
    if not paths:
        return None
    links = [_read_link(path) for path in paths]
    missing = missing_links(links[0][1])
    if missing:
        first = links[0][0]
        fail(f"--continue-from {first.name}: it continues run {missing[-1]['runId']!r}; a chain is one study: "
             f"give every ledger of it, oldest first ({len(missing)} missing before it)")
    problems = chain_problems([(link.name, link.sha256, document) for link, document in links])
    if problems:
        fail(f"--continue-from: the ledgers are not one chain of runs: {problems[0]}")
    for link, _document in links:
        problems = continuation_problems(link.ledger)
        if problems:
            fail(f"--continue-from {link.name}: cannot be continued: {'; '.join(problems)}")
    for link, _document in links:
        if link.ledger.sequential is not None or sequential:
            fail(f"--continue-from {link.name}: a sequential design cannot be continued (its stopping rule "
                 "covers one run)")
    last = links[-1][0]
    return Predecessor(ledger=last.ledger, sha256=last.sha256, name=last.name,
                       earlier=tuple(link for link, _document in links[:-1]))
