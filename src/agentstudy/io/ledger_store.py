"""The private ledger file: exclusive 0600 create, atomic checkpoints.

A ledger is never overwritten or resumed: creating over an existing path is an error, and
the path must lie outside every corpus checkout, every checkout that contains one, and
agentstudy's own checkout. The first document is written into the exclusively created file;
every later checkpoint writes a temporary 0600 file in the same directory, fsyncs it, renames
it over the ledger and fsyncs the directory, so a reader sees the old or the new ledger, never
a torn one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pydantic_core

from agentstudy.io.git import enclosing_checkouts


class OutputPathError(ValueError):
    """The ledger path is unusable: existing, inside a checkout, or its directory is missing."""


def forbidden_trees(roots: Iterable[Path]) -> tuple[Path, ...]:
    """Every directory a ledger must stay out of: each root (resolved) and every checkout containing it.

    A root inside a checkout (or a checkout nested in another) forbids each enclosing work tree
    too (``io.git.enclosing_checkouts``, hardened git); a root that is no checkout forbids itself.
    Returns resolved paths, each once, in the order found.
    """
    found: list[Path] = []
    for root in roots:
        real_root = root.resolve()
        found += [real_root, *enclosing_checkouts(real_root)]
    return tuple(dict.fromkeys(found))


def place_outside(path: Path, forbidden_roots: Iterable[Path]) -> Path:
    """Resolve ``path``'s directory through symlinks and check it lies outside every forbidden tree.

    The forbidden trees are ``forbidden_trees(forbidden_roots)``: each root and every checkout
    that contains it. Returns the absolute path (its last component as given); whether it
    exists is not checked.

    Raises:
        OutputPathError: the directory does not exist, or the path lies inside a forbidden tree.
    """
    parent = path.parent.resolve()
    if not parent.is_dir():
        raise OutputPathError(f"output directory does not exist: {parent}")
    target = parent / path.name
    for real_root in forbidden_trees(forbidden_roots):
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

    Raises:
        TypeError: a value JSON cannot hold.
    """
    try:
        return pydantic_core.to_json(document, indent=2) + b"\n"
    except pydantic_core.PydanticSerializationError as error:
        raise TypeError(f"the ledger holds a value JSON cannot hold: {error}") from None


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
        """
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            raise OutputPathError(f"output already exists, refusing to overwrite: {path}") from None
        except OSError as error:
            raise OutputPathError(f"cannot create the ledger {path}: {error.strerror}") from None
        try:
            os.fchmod(fd, 0o600)
            _write_all(fd, _encode(document))
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_directory(path.parent)
        self.path = path

    def checkpoint(self, document: dict[str, Any]) -> None:
        """Atomically replace the ledger's content with ``document``."""
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
