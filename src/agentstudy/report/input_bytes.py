"""Reading a report's input files: bounded bytes, then JSON with the house's input limits, one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentstudy.io.user_file import UserFileError, read_user_file
from agentstudy.protocol.json_input import JsonInputError, load_json
from agentstudy.report.model import ReportInputError

MAX_INPUT_BYTES = 256 * 1024 * 1024
"""The largest ledger or companion a report reads (bytes)."""


def read_input(path: Path, what: str) -> bytes:
    """The bytes of ``path`` (``what`` names it in errors: "ledger", "adjudication companion"), read by the
    house's bounded user-file reader (``io.user_file``: a regular file, never a FIFO, at most ``MAX_INPUT_BYTES``).

    Raises:
        ReportInputError: ``cannot read the {what} {path}: <reason>`` (missing, a directory, too large, ...).
    """
    try:
        return read_user_file(path, what=f"the {what}", max_bytes=MAX_INPUT_BYTES)
    except UserFileError as error:
        raise ReportInputError(f"cannot read {error}") from None


def json_document(data: bytes, what: str) -> Any:
    """``data`` parsed as JSON (``protocol.json_input`` limits: depth, number length).

    Raises:
        ReportInputError: not JSON, or past a limit (named with ``what``).
    """
    try:
        return load_json(data)
    except JsonInputError as error:
        raise ReportInputError(f"the {what} {error}") from None
