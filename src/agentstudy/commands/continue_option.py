"""``--continue-from LEDGER`` (issue 33 item 7): an explicit continuation of a stopped run, never a resume.

The old ledger is read once and verified with the shared verifier; it is never written. The run that
follows plans only the cells the old one did not observe ``completed`` and must find in its preflight what
the old ledger recorded (``runners.continuation_steps``); its new ledger names the old one by hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from agentstudy.commands.common import fail
from agentstudy.protocol.continuation import Predecessor, continuation_problems
from agentstudy.protocol.ledger_integrity import parse_and_verify
from agentstudy.protocol.records import MinimalLedger

F = TypeVar("F", bound=Callable[..., object])


def continue_option(command: F) -> F:
    """Add ``--continue-from LEDGER`` (parameter ``continue_from``: a ``Path`` or ``None``) to a command."""
    return click.option(
        "--continue-from", "continue_from", type=click.Path(path_type=Path, dir_okay=False), metavar="LEDGER",
        help="Start a new run (a new --output ledger) that plans only the attempts LEDGER's run did not "
             "complete; its preflight must find the same pins, agent version, model, prices, arms and "
             "containment (a difference refuses the run). LEDGER is only read and verified, never written; "
             "report the two together (`agentstudy report LEDGER NEW`; docs/real-api.md).",
    )(command)


def load_predecessor(path: Path | None, *, sequential: bool) -> Predecessor | None:
    """The verified old ledger of ``--continue-from`` (``None`` without the flag).

    Exits 2 with one line: unreadable, not a verified minimal-study ledger, still ``running``, or combined
    with a sequential design (whose stop rule a continuation would change).
    """
    if path is None:
        return None
    if sequential:
        fail("--continue-from cannot continue a sequential design (its stopping rule covers one run)")
    try:
        data = path.read_bytes()
    except OSError as error:
        fail(f"--continue-from {path}: cannot read it: {error.strerror or error}")
    document, verification = parse_and_verify(data)
    if not verification.verified:
        fail(f"--continue-from {path}: the ledger does not verify: {verification.first()}")
    ledger = MinimalLedger.model_validate(document)
    problems = continuation_problems(ledger)
    if problems:
        fail(f"--continue-from {path}: cannot be continued: {'; '.join(problems)}")
    return Predecessor(ledger=ledger, sha256=hashlib.sha256(data).hexdigest(), name=path.name)
