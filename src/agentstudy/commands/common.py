"""Helpers shared by the subcommands: one-line errors, exit codes, flag parsing, summary output.

Exit codes: 0 the command did what it was asked (a run ended ``awaiting-adjudication``, a dry
run validated); 1 a run ended ``blocked`` or failed after it started (the ledger says why);
2 bad input or a run refused before anything was reserved (nothing written, nothing spent);
128 + n a long command stopped by signal n (130 SIGINT, 143 SIGTERM, 129 SIGHUP): every child
ended, its temporary directories removed, the ledger, if one exists, checkpointed with the
signal as its stop reason (``stops_on_signals``, ``io.signals``).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, ParamSpec, TypeVar

import click

from agentstudy.io.signals import EXIT_SIGNAL_BASE, StopRequested, signal_name, stop_policy, stop_signal
from agentstudy.pricing.money_input import MoneyInputError, check_attempt_limit, parse_usd_input
from agentstudy.protocol.json_input import describe_os_error

if TYPE_CHECKING:
    from agentstudy.runners.summary import RunSummary

EXIT_OK, EXIT_BLOCKED, EXIT_INPUT = 0, 1, 2
EXIT_SIGNAL = EXIT_SIGNAL_BASE
"""A command stopped by signal ``n`` exits ``EXIT_SIGNAL + n``."""
P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """Print one error line to stderr and exit with ``code``."""
    click.echo(f"agentstudy: error: {message}", err=True)
    sys.exit(code)


def stops_on_signals(command: Callable[P, R]) -> Callable[P, R]:
    """Run a long command under the signal policy (``io.signals.stop_policy``) and exit ``128 + n`` on a stop.

    A ``StopRequested`` that reaches the command prints one line (``agentstudy: stopped by
    SIGTERM: …``). A signal whose stop the command did not raise (it arrived after the last safe
    point, or while the command was refusing its input) still ends the process ``128 + n``: with
    the command's own line when it printed one, else with one saying so.
    """

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with stop_policy():
            try:
                result = command(*args, **kwargs)
            except StopRequested as stop:
                fail(str(stop), stop.exit_code)
            except SystemExit as done:
                signum = stop_signal()
                if signum is None:
                    raise
                if done.code in (None, EXIT_OK, EXIT_BLOCKED):
                    fail(f"stopped by {signal_name(signum)} after the run ended; its ledger is final",
                         EXIT_SIGNAL + signum)
                sys.exit(EXIT_SIGNAL + signum)
            signum = stop_signal()
            if signum is not None:
                fail(f"stopped by {signal_name(signum)} after the run ended; its ledger is final", EXIT_SIGNAL + signum)
            return result

    return wrapper


def positive_usd(name: str, raw: str | None) -> Decimal:
    """Parse an operator's USD amount with ``pricing.money_input.parse_usd_input``; exit 2 otherwise.

    Plain ASCII decimal, above zero, at most 1,000,000 and 9 decimals (no rounding).
    """
    try:
        return parse_usd_input(raw, what=name)
    except MoneyInputError as error:
        fail(str(error))


def attempt_limit(name: str, raw: str | None, cap: Decimal | None, cap_name: str) -> Decimal:
    """Parse a per-attempt (per-item) limit and check it against ``cap``; exit 2 otherwise.

    The limit must reserve at least one micro-USD and be at most the cap (when given;
    ``pricing.money_input.check_attempt_limit``), so the first attempt can be admitted.
    """
    limit = positive_usd(name, raw)
    try:
        check_attempt_limit(limit, cap, limit_what=name, cap_what=cap_name)
    except MoneyInputError as error:
        fail(str(error))
    return limit


def check_new_output(flag: str, output: Path, forbidden_roots: Iterable[Path]) -> Path:
    """Check that a new ledger (or companion) may be created at ``output``; exit 2 with one line otherwise.

    ``io.ledger_store.resolve_output``'s refusals, and any ``OSError`` on the path (a name too
    long, a symlink loop, a component that is a file), become ``flag output: reason``.
    """
    from agentstudy.io.ledger_store import OutputPathError, resolve_output  # the ledger's models load with a run

    try:
        return resolve_output(output, forbidden_roots)
    except OutputPathError as error:
        fail(str(error))
    except OSError as error:
        fail(f"{flag} {output}: {describe_os_error(error)}")


def parse_roots(values: tuple[str, ...]) -> dict[str, Path]:
    """``NAME=PATH`` pairs to absolute paths (later duplicates win); exit 2 on a malformed pair."""
    roots: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            fail(f"--root must be NAME=PATH, got {value!r}")
        roots[name] = Path(path).expanduser().resolve()
    return roots


def emit_summary(summary: RunSummary) -> int:
    """Print the one-line JSON summary to stdout; return the exit code of the run's status."""
    click.echo(json.dumps(summary.line, separators=(",", ":")))
    return EXIT_OK if summary.status == "awaiting-adjudication" else EXIT_BLOCKED
