"""Helpers shared by the subcommands: one-line errors, exit codes, flag parsing, summary output.

Exit codes: 0 the command did what it was asked (a run ended ``awaiting-adjudication``, a dry
run validated); 1 a run ended ``blocked`` or failed after it started (the ledger says why);
2 bad input or a run refused before anything was reserved (nothing written, nothing spent).
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import NoReturn

import click

from agentstudy.runners.summary import RunSummary

EXIT_OK, EXIT_BLOCKED, EXIT_INPUT = 0, 1, 2


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """Print one error line to stderr and exit with ``code``."""
    click.echo(f"agentstudy: error: {message}", err=True)
    sys.exit(code)


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
