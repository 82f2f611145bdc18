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
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import NoReturn, ParamSpec, TypeVar

import click

from agentstudy.io.signals import EXIT_SIGNAL_BASE, StopRequested, signal_name, stop_policy, stop_signal
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
    """Parse a USD amount that must be finite and above zero; exit 2 otherwise."""
    if raw is None or not raw.strip():
        fail(f"{name} is required")
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        fail(f"{name} is not a number: {raw!r}")
    if not value.is_finite() or value <= 0:
        fail(f"{name} must be a finite amount above zero")
    return value


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
