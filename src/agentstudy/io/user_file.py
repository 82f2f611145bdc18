"""Reading a file a user named (a ledger, a config, a transcript) with every failure as one line.

Missing, a directory, permission denied, a name too long, a symlink loop, a file above the
size bound: each is a :class:`UserFileError` whose message names the file, never a traceback.
Parsing is ``protocol.json_input.load_json``; :func:`read_json_file` does both.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentstudy.protocol.json_input import JsonInputError, describe_os_error, load_json

MAX_USER_FILE_BYTES = 256 * 1024 * 1024
"""Default bound of a user file (a ledger of 100,000 observations fits)."""


class UserFileError(ValueError):
    """A user's file cannot be read or is not bounded JSON (one line naming the file).

    Attributes:
        missing: the path does not exist (``ENOENT``), for callers that word that case themselves.
    """

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


def read_user_file(path: Path, *, what: str, max_bytes: int = MAX_USER_FILE_BYTES) -> bytes:
    """The bytes of ``path``, at most ``max_bytes``.

    Args:
        path: the file as the user named it.
        what: how the message names it (``"the ledger"``).
        max_bytes: files larger than this are refused before they are read whole.

    Raises:
        UserFileError: ``"{what} {path}: <reason>"`` for any ``OSError`` (missing, a directory,
            permission, name too long, ...), a file that is not a regular file, or one too large.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block the open
    except OSError as error:
        missing = error.errno == errno.ENOENT
        raise UserFileError(f"{what} {path}: {describe_os_error(error)}", missing=missing) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise UserFileError(f"{what} {path}: it is {kind}")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as error:
            raise UserFileError(f"{what} {path}: {describe_os_error(error)}") from None
    if len(data) > max_bytes:
        raise UserFileError(f"{what} {path}: larger than {max_bytes} bytes")
    return data


def read_json_file(
    path: Path,
    *,
    what: str,
    max_bytes: int = MAX_USER_FILE_BYTES,
    parse_float: Callable[[str], Any] | None = None,
) -> Any:
    """Read ``path`` (:func:`read_user_file`) and parse it with ``load_json``.

    Raises:
        UserFileError: unreadable, too large, or not bounded UTF-8 JSON (one line).
    """
    data = read_user_file(path, what=what, max_bytes=max_bytes)
    try:
        return load_json(data, parse_float=parse_float)
    except JsonInputError as error:
        raise UserFileError(f"{what} {path} {error}") from None
