"""Reading a report's input files: bounded bytes, then JSON with the house's input limits, one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentstudy.protocol.json_input import JsonInputError, load_json
from agentstudy.report.model import ReportInputError

MAX_INPUT_BYTES = 256 * 1024 * 1024
"""The largest ledger or companion a report reads (bytes)."""


def read_input(path: Path, what: str) -> bytes:
    """The bytes of ``path`` (``what`` names it in errors: "ledger", "adjudication companion").

    Raises:
        ReportInputError: it cannot be read, or it is larger than ``MAX_INPUT_BYTES``.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as error:
        raise ReportInputError(f"cannot read the {what} {path}: {error.strerror or error}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise ReportInputError(f"the {what} {path} is larger than {MAX_INPUT_BYTES} bytes")
    return data


def json_document(data: bytes, what: str) -> Any:
    """``data`` parsed as JSON (``protocol.json_input`` limits: depth, number length).

    Raises:
        ReportInputError: not JSON, or past a limit (named with ``what``).
    """
    try:
        return load_json(data)
    except JsonInputError as error:
        raise ReportInputError(f"the {what} {error}") from None
