"""Atomic file replacement: readers see the old file or the new one, never a torn write.

The new content goes to a temporary file in the target's directory (same filesystem), is
fsynced, renamed over the target, and the directory is fsynced so the rename survives a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str, *, mode: int = 0o600) -> None:
    """Atomically replace (or create) ``path`` with ``text`` (UTF-8), file mode ``mode``.

    Raises:
        OSError: when the directory is missing or not writable; the target is then untouched
            and no temporary file is left behind.
    """
    directory = path.parent
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    directory_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(directory_fd)
    finally:
        os.close(directory_fd)


def write_json_atomic(path: Path, document: Any, *, mode: int = 0o600) -> None:
    """Atomically write ``document`` as 2-space JSON (non-ASCII raw) plus a newline.

    Raises:
        ValueError: for NaN or an infinity (nothing is written). OSError: as ``write_text_atomic``.
    """
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomic(path, text, mode=mode)
