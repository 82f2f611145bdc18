"""The shared options of how a run runs (issue 42: one module per concern, gathered from one-flag modules):
``--concurrency N`` with ``--executor local|ray`` / ``--ray-address`` of the controlled runner and both
adjudications (issues 19, 20); the ``--rehearsal-faults SPEC`` check of the study commands (issue 33 item 1;
the grammar is :mod:`agentstudy.protocol.fault_schedule`'s, a study file's ``rehearsalFaults`` the default a
flag replaces); ``--continue-from LEDGER`` and ``--partial-chain`` (issue 33 item 7, issue 40): an explicit
continuation of a stopped run, never a resume. Every ledger of the chain (given oldest first) is read once and
verified with the shared verifier; none is ever written. The run that follows plans only the cells no run of
the chain observed ``completed`` and must find in its preflight what the old ledger recorded
(``runners.continuation_steps``); its new ledger names the old one by hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from agentstudy.commands.common import fail

if TYPE_CHECKING:  # the ledger's models and verifier load when a chain is read, not with --help (issue 42)
    from agentstudy.protocol.continuation import Predecessor
    from agentstudy.protocol.manifest import LoadedManifest

MAX_CONCURRENCY = 32
"""The most items in flight at once (the same bound as ``agentstudy minimal --concurrency``)."""

F = TypeVar("F", bound=Callable[..., Any])


def concurrency_option(what: str, admission: str) -> Callable[[F], F]:
    """A click option ``--concurrency`` (1 to ``MAX_CONCURRENCY``, default 1) for ``what`` run at once.

    ``admission`` ends the help text: when an item is admitted (e.g. the cap rule).
    """
    return click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=1, show_default=True,
                        help=f"{what} run at once; 1 runs them one after another. Admitted in order and "
                             f"recorded in that order; {admission}")




def executor_options(function: F) -> F:
    """The ``--executor local|ray`` and ``--ray-address ADDR`` options (issue 20) of a runner with ``--concurrency``.

    Check them with ``executor_choice`` before anything starts.
    """
    function = click.option("--ray-address", metavar="ADDR",
                            help="With --executor ray: the running cluster's head (host:port).")(function)
    return click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                        help="Where the attempts of --concurrency N run: threads here, or never-retried "
                             "tasks on the Ray cluster at --ray-address (pip install 'agentstudy[ray]'; "
                             "docs/ray.md).")(function)


def executor_choice(executor: str, ray_address: str | None, concurrency: int) -> Literal["local", "ray"]:
    """The checked executor flags (issue 20): ``"local"`` or ``"ray"``.

    Exits 2 with one error line (``commands.common.fail``): ``ray`` without ``--concurrency`` above 1
    or without ``--ray-address``, or ``--ray-address`` without ``ray``.
    """
    if executor == "ray" and (concurrency < 2 or ray_address is None):
        fail("--executor ray needs --concurrency above 1 and --ray-address ADDR (docs/ray.md)")
    if ray_address is not None and executor != "ray":
        fail("--ray-address goes with --executor ray")
    return "ray" if executor == "ray" else "local"


def checked_faults(flag: str | None, loaded: LoadedManifest | None, rehearsal: bool) -> str | None:
    """The fault SPEC a run's scripted servers take: ``flag``, else the study file's ``rehearsalFaults``.

    Exits 2 (one line) when the SPEC does not parse, or when the flag is given without ``--rehearsal``
    (a study file's schedule is simply unused by a real run).
    """
    from agentstudy.protocol.fault_schedule import FaultScheduleError, parse_fault_schedule
    file_spec = getattr(loaded.manifest, "rehearsal_faults", None) if loaded is not None else None
    spec = flag if flag is not None else file_spec
    if flag is not None and not rehearsal:
        fail("--rehearsal-faults needs --rehearsal (it scripts the rehearsal server's refusals)")
    if spec is None or not rehearsal:
        return None
    try:
        parse_fault_schedule(spec)
    except FaultScheduleError as error:
        fail(f"--rehearsal-faults: {error}")
    return spec


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
    from agentstudy.protocol.continuation import Predecessor
    from agentstudy.protocol.ledger_integrity import parse_and_verify
    from agentstudy.protocol.records import MinimalLedger

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
    still ``running`` or a sequential study that stopped (naming the stop's reason), a chain mixing sequential
    and fixed-design runs, or ``sequential`` (the new run's flag or design) continuing a fixed-design chain. A
    sequential chain that has not stopped is continued sequentially (issue 40: ``commands.minimal_outcome``).
    """
    if not paths:
        return None
    from agentstudy.protocol.continuation import Predecessor, chain_problems, continuation_problems, missing_links

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
    designs = {link.ledger.sequential is not None for link, _document in links}
    if len(designs) > 1:
        fail("--continue-from: the ledgers mix sequential and fixed-design runs; a chain is one study")
    if sequential and designs == {False}:
        fail(f"--continue-from {links[-1][0].name}: a fixed-design run cannot be continued sequentially "
             "(drop --sequential)")
    last = links[-1][0]
    return Predecessor(ledger=last.ledger, sha256=last.sha256, name=last.name,
                       earlier=tuple(link for link, _document in links[:-1]))


__all__ = [
    "MAX_CONCURRENCY", "checked_faults", "concurrency_option", "continue_option", "executor_choice",
    "executor_options", "load_predecessor", "partial_chain_option",
]
