"""The private ledger file: exclusive 0600 create, atomic checkpoints.

A ledger is never overwritten or resumed: creating over an existing path is an error, and
the path must lie outside every corpus checkout, every checkout that contains one, and
agentstudy's own checkout. The first document is written to a private temporary file in the
ledger's directory, fsynced, and hard-linked to the ledger's name (``link`` fails if the name
exists, so nothing is ever overwritten): a creation that fails (a full disk, a read-only or
unwritable directory) leaves no file behind. Every later checkpoint writes a temporary 0600
file in the same directory, fsyncs it, renames it over the ledger and fsyncs the directory, so
a reader sees the old or the new ledger, never a torn one; a checkpoint that fails leaves the
last good ledger in place and raises ``CheckpointError``.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import tempfile
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pydantic_core

from agentstudy.io.git import enclosing_checkouts


class OutputPathError(ValueError):
    """The ledger path is unusable: existing, inside a checkout, its directory missing, or it cannot be created."""


class OutputExistsError(OutputPathError):
    """The ledger path already exists (even as a dangling symlink); it is never overwritten."""


class CheckpointError(RuntimeError):
    """A checkpoint could not be written; the ledger on disk is still the last good one.

    Attributes:
        path: the ledger.
        reason: the operating system's short reason (``"No space left on device"``).
    """

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot write the ledger {path}: {reason}")
        self.path, self.reason = path, reason


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


JOURNAL_SUFFIX = ".journal"


def journal_path(ledger: Path) -> Path:
    """The journal beside ``ledger`` (``ledger.json`` -> ``ledger.json.journal``; issue 19)."""
    return ledger.with_name(ledger.name + JOURNAL_SUFFIX)


def resolve_output(path: Path, forbidden_roots: Iterable[Path]) -> Path:
    """Resolve the ledger path and check that it may be created.

    The parent directory is resolved through symlinks; the result must not exist (not even
    as a dangling symlink), nor may its journal (``journal_path``: a crashed run's is never
    resumed or overwritten), its directory must be writable, and it must lie outside every
    forbidden root (corpus checkouts and agentstudy's own checkout).

    Raises:
        OutputPathError: with a one-line reason.
    """
    target = place_outside(path, forbidden_roots)
    if target.exists() or target.is_symlink():
        raise OutputPathError(f"output already exists, refusing to overwrite: {target}")
    journal = journal_path(target)
    if journal.exists() or journal.is_symlink():
        raise OutputPathError(f"a ledger journal already exists (a crashed run's?), refusing to overwrite: {journal}")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"output directory is not writable: {target.parent}")
    return target


def _encode(document: dict[str, Any], indent: int | None = 2) -> bytes:
    """Pretty JSON (2-space indent, UTF-8, key order kept) and a trailing newline (``indent=None``: one line).

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
        encoded = pydantic_core.to_json(document, indent=indent) + b"\n"
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


_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS})
"""``link`` errors of a filesystem without hard links (FAT, some FUSE mounts): creation falls back."""


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _create_directly(path: Path, data: bytes) -> None:
    """``O_CREAT | O_EXCL`` at ``path``, then write and fsync; on failure the new file is unlinked."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(path)
        raise


def create_new_file(path: Path, data: bytes, *, shown: Path | None = None) -> None:
    """Create ``path`` (mode 0600) holding exactly ``data``; never overwrite, never leave a partial file.
    Errors name ``shown`` (default ``path``): the ledger a user asked for when ``path`` is its journal.

    ``data`` goes to a private temporary file beside ``path``, is fsynced and hard-linked to
    ``path`` (where hard links are unsupported: created with ``O_EXCL``, unlinked on failure);
    the temporary name is always removed and the directory fsynced. The name appears only
    complete, so a full disk (ENOSPC), a read-only filesystem (EROFS) or an unwritable directory
    (EACCES, EPERM) leaves nothing behind.

    Raises:
        OutputExistsError: ``path`` exists (even as a dangling symlink).
        OutputPathError: the file cannot be created or written (one line with the operating
            system's reason).
    """
    linked = False
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
    except OSError as error:
        raise OutputPathError(f"cannot create the ledger {shown or path}: {error.strerror or error}") from None
    temporary = Path(name)
    try:
        try:
            os.fchmod(fd, 0o600)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, path, follow_symlinks=False)
        except OSError as error:
            if isinstance(error, FileExistsError) or error.errno not in _NO_HARD_LINKS:
                raise
            _create_directly(path, data)
        linked = True
        _fsync_directory(path.parent)
    except FileExistsError:
        raise OutputExistsError(f"output already exists, refusing to overwrite: {path}") from None
    except OSError as error:
        if linked:
            _unlink_quietly(path)
        raise OutputPathError(f"cannot create the ledger {shown or path}: {error.strerror or error}") from None
    finally:
        _unlink_quietly(temporary)


class LedgerFile:
    """A ledger on disk: created complete or not at all, mode 0600, replaced atomically on each checkpoint.

    ``last_written`` holds the bytes of the last document that reached the disk, so a caller
    whose checkpoint failed can still record why on top of the last good state.
    """

    def __init__(self, path: Path, document: dict[str, Any]) -> None:
        """Create the file exclusively holding the first document (fsynced; see ``create_new_file``).

        Raises:
            OutputPathError: if the path exists or cannot be created; nothing is left behind.
            TypeError: a value JSON cannot hold (nothing is written).
        """
        data = _encode(document)
        create_new_file(path, data)
        self.path = path
        self.last_written = data

    def checkpoint(self, document: dict[str, Any]) -> None:
        """Atomically replace the ledger's content with ``document``.

        Raises:
            CheckpointError: the new document could not be written (full disk, read-only or
                unwritable directory, I/O error); the temporary file is removed and the ledger
                on disk is the last good one (``last_written``). When only the final directory
                fsync fails, the new document may already be in place.
            TypeError: a value JSON cannot hold (nothing is written).
            ValueError: the document holds a non-finite number (the ledger keeps its last content).
        """
        data = _encode(document)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            try:
                try:
                    _write_all(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(temporary, self.path)
            except BaseException:
                _unlink_quietly(temporary)
                raise
        except OSError as error:
            raise CheckpointError(self.path, error.strerror or str(error)) from None
        self.last_written = data
        try:
            _fsync_directory(self.path.parent)
        except OSError as error:
            raise CheckpointError(self.path, error.strerror or str(error)) from None
