"""Helpers of the contract-inspection commands (``plan``, ``suite``, ``ledger``): read, verify, print.

Verification is strict: a file whose content hash, or any nested one, does not match is
refused (exit 2, one line naming each mismatch). Read-only commands that accept
``--allow-unverified`` print the same line as a warning and go on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agentstudy.commands.common import fail

if TYPE_CHECKING:
    from agentstudy.protocol.controlled.contracts import LoadedContract
    from agentstudy.protocol.controlled.formats import ContractModel

M = TypeVar("M", bound="ContractModel")

MAX_CONTRACT_BYTES = 256 * 1024 * 1024
"""Refuse files above 256 MiB before reading them (a full ledger of 100 000 observations fits)."""

text_or_json = click.option("--text/--json", "as_text", default=True, show_default=True,
                            help="Aligned text for a reader, or one JSON document.")
allow_unverified_option = click.option(
    "--allow-unverified", is_flag=True,
    help="Go on when content hashes do not match: print the mismatches as a warning instead of refusing.",
)


def read_contract(path: Path, model: type[M], *, allow_unverified: bool | None = None) -> LoadedContract[M]:
    """Read, validate and verify a contract file; exit 2 with one line on any problem.

    ``allow_unverified`` is ``None`` for commands without ``--allow-unverified``; when true, a
    hash mismatch is printed to stderr as a warning instead.
    """
    from agentstudy.protocol.controlled.contracts import ContractError, describe_mismatches, parse_contract
    from agentstudy.protocol.json_input import describe_os_error
    try:
        if path.stat().st_size > MAX_CONTRACT_BYTES:
            fail(f"{path}: larger than {MAX_CONTRACT_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"{path}: no such file")
    except OSError as error:
        fail(f"{path}: cannot read: {describe_os_error(error)}")
    except UnicodeDecodeError:
        fail(f"{path}: cannot read: not UTF-8")
    try:
        loaded = parse_contract(model, text)
    except ContractError as error:
        fail(f"{path}: {error}")
    if loaded.mismatches:
        message = f"{path}: {describe_mismatches(loaded.mismatches)}"
        if not allow_unverified:
            hint = "" if allow_unverified is None else "; --allow-unverified reads it anyway"
            fail(f"{message} (changed after it was hashed{hint})")
        click.echo(f"agentstudy: warning: unverified: {message}", err=True)
    return loaded


def emit(as_text: bool, key: str, description: dict[str, Any], render: Callable[[dict[str, Any]], list[str]]) -> None:
    """Print ``description`` as text lines (``render``) or as ``{"ok": true, key: description}``."""
    if as_text:
        click.echo("\n".join(render(description)))
    else:
        click.echo(json.dumps({"ok": True, key: description}, ensure_ascii=False, indent=2))


def aligned(rows: Sequence[tuple[str, str]], width: int | None = None) -> list[str]:
    """Label/value rows with the values in one column; an empty label continues the row above."""
    column = width if width is not None else max((len(label) for label, _ in rows), default=0) + 2
    return [f"{label:<{column}}{value}".rstrip() for label, value in rows]


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset()) -> list[str]:
    """A plain-text table: columns padded to their widest cell; columns in ``right`` right-aligned."""
    widths = [max(len(str(row[index])) for row in [header, *rows]) for index in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(f"{cell:>{widths[i]}}" if i in right else f"{cell:<{widths[i]}}"
                         for i, cell in enumerate(cells)).rstrip()

    return [line(header), *(line(row) for row in rows)]


def counts(mapping: dict[str, int]) -> str:
    """``{"completed": 3, "failed": 1}`` → ``completed 3, failed 1`` (``none`` when empty)."""
    return ", ".join(f"{key} {value}" for key, value in mapping.items()) or "none"
