"""The private ledger file: exclusive 0600 create, whole-file checkpoints with fsync.

A ledger is never overwritten or resumed: creating over an existing path is an error.
Each checkpoint rewrites the whole document from offset 0 (pretty JSON, 2-space indent,
trailing newline), truncates, and fsyncs, so a crash leaves the last complete checkpoint
or, at worst, the one being written on a file that already held its predecessor's bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class OutputPathError(ValueError):
    """The ledger path is unusable: existing, inside a checkout, or its directory is missing."""


def resolve_output(path: Path, forbidden_roots: Iterable[Path]) -> Path:
    """Resolve the ledger path and check that it may be created.

    The parent directory is resolved through symlinks; the result must not exist and must
    lie outside every forbidden root (corpus checkouts and agentstudy's own checkout).

    Raises:
        OutputPathError: with a one-line reason.
    """
    parent = path.parent.resolve()
    if not parent.is_dir():
        raise OutputPathError(f"output directory does not exist: {parent}")
    target = parent / path.name
    if target.exists() or target.is_symlink():
        raise OutputPathError(f"output already exists, refusing to overwrite: {target}")
    for root in forbidden_roots:
        real_root = root.resolve()
        if target == real_root or real_root in target.parents:
            raise OutputPathError(f"output must lie outside {real_root}")
    return target


class LedgerFile:
    """An open ledger: created with ``O_CREAT | O_EXCL``, mode 0600, kept open for the run."""

    def __init__(self, path: Path) -> None:
        """Create the file exclusively.

        Raises:
            OutputPathError: if it exists.
        """
        try:
            self._fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            raise OutputPathError(f"output already exists, refusing to overwrite: {path}") from None
        os.fchmod(self._fd, 0o600)
        self.path = path

    def checkpoint(self, document: dict[str, Any]) -> None:
        """Replace the file's content with ``document`` and fsync."""
        data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        os.lseek(self._fd, 0, os.SEEK_SET)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.ftruncate(self._fd, len(data))
        os.fsync(self._fd)

    def close(self) -> None:
        """Close the file descriptor (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
