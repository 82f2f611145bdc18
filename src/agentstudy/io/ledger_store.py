"""The private ledger file: exclusive 0600 create, atomic checkpoints.

A ledger is never overwritten or resumed: creating over an existing path is an error, and
the path must lie outside every corpus checkout and agentstudy's own checkout. The first
document is written into the exclusively created file; every later checkpoint writes a
temporary 0600 file in the same directory, fsyncs it, renames it over the ledger and fsyncs
the directory, so a reader sees the old or the new ledger, never a torn one.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pydantic_core


class OutputPathError(ValueError):
    """The ledger path is unusable: existing, inside a checkout, or its directory is missing."""


def place_outside(path: Path, forbidden_roots: Iterable[Path]) -> Path:
    """Resolve ``path``'s directory through symlinks and check it lies outside every forbidden root.

    Returns the absolute path (its last component as given); whether it exists is not checked.

    Raises:
        OutputPathError: the directory does not exist, or the path lies inside a root.
    """
    parent = path.parent.resolve()
    if not parent.is_dir():
        raise OutputPathError(f"output directory does not exist: {parent}")
    target = parent / path.name
    for root in forbidden_roots:
        real_root = root.resolve()
        if target == real_root or real_root in target.parents:
            raise OutputPathError(f"output must lie outside {real_root}")
    return target


def resolve_output(path: Path, forbidden_roots: Iterable[Path]) -> Path:
    """Resolve the ledger path and check that it may be created.

    The parent directory is resolved through symlinks; the result must not exist (not even
    as a dangling symlink), its directory must be writable, and it must lie outside every
    forbidden root (corpus checkouts and agentstudy's own checkout).

    Raises:
        OutputPathError: with a one-line reason.
    """
    target = place_outside(path, forbidden_roots)
    if target.exists() or target.is_symlink():
        raise OutputPathError(f"output already exists, refusing to overwrite: {target}")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"output directory is not writable: {target.parent}")
    return target


def _encode(document: dict[str, Any]) -> bytes:
    """Pretty JSON (2-space indent, UTF-8, key order kept) and a trailing newline.

    pydantic-core's encoder writes what ``json.dumps(indent=2, ensure_ascii=False)`` writes, but
    in compiled code (about 10x faster on a 1,000-observation ledger, bench/bench_checkpoint.py);
    tiny floats come out as JavaScript writes them (``1e-6``, not ``1e-06``).

    A non-finite float or ``Decimal`` (NaN, Infinity) is refused: pydantic-core would write the JavaScript
    constants, which are not JSON. The check is a scan of the encoded bytes for the constants;
    only when one appears (inside a string, say an answer) is the document walked to decide.

    Raises:
        TypeError: a value JSON cannot hold.
        ValueError: a non-finite float anywhere in ``document`` (nothing is written).
    """
    try:
        encoded = pydantic_core.to_json(document, indent=2) + b"\n"
    except pydantic_core.PydanticSerializationError as error:
        raise TypeError(f"the ledger holds a value JSON cannot hold: {error}") from None
    if (b"NaN" in encoded or b"Infinity" in encoded) and (where := _non_finite(document)) is not None:
        raise ValueError(f"the ledger would hold a non-finite number at {where}; nothing was written")
    return encoded


def _non_finite(value: Any, where: str = "$") -> str | None:
    """The JSON path of the first NaN or infinite float in ``value`` (walked without recursion), or ``None``."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if (isinstance(item, float) and not math.isfinite(item)) or (
            isinstance(item, Decimal) and not item.is_finite()
        ):
            return path
        if isinstance(item, dict):
            stack.extend((child, f"{path}.{key}") for key, child in reversed(item.items()))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{index}]") for index, child in reversed(list(enumerate(item))))
    return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LedgerFile:
    """A ledger on disk: created with ``O_CREAT | O_EXCL``, mode 0600, replaced atomically on each checkpoint."""

    def __init__(self, path: Path, document: dict[str, Any]) -> None:
        """Create the file exclusively and write the first document (fsynced).

        Raises:
            OutputPathError: if the path exists or cannot be created.
            ValueError: the document holds a non-finite number (checked before the file is created).
        """
        data = _encode(document)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            raise OutputPathError(f"output already exists, refusing to overwrite: {path}") from None
        except OSError as error:
            raise OutputPathError(f"cannot create the ledger {path}: {error.strerror}") from None
        try:
            os.fchmod(fd, 0o600)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_directory(path.parent)
        self.path = path

    def checkpoint(self, document: dict[str, Any]) -> None:
        """Atomically replace the ledger's content with ``document``.

        Raises:
            ValueError: the document holds a non-finite number (the ledger keeps its last content).
            OSError: the temporary file cannot be written or renamed (the ledger keeps its last content).
        """
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            try:
                _write_all(fd, _encode(document))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
            raise
        _fsync_directory(self.path.parent)
