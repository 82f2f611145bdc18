"""Provenance of the code that ran: agentstudy's source hash and revision, and the CLI binary's hash."""

from __future__ import annotations

import hashlib
from pathlib import Path

from agentstudy.io.git import GitError, head

_PACKAGE = Path(__file__).resolve().parents[1]


def runner_hash() -> str:
    """SHA-256 hex over agentstudy's own ``.py`` sources (relative path, NUL, bytes, NUL; sorted)."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def engine_revision() -> str | None:
    """``git rev-parse HEAD`` of agentstudy's checkout, or ``None`` outside one."""
    try:
        return head(_PACKAGE.parents[1])
    except GitError:
        return None


def file_sha256(path: Path) -> str:
    """SHA-256 hex of a file's bytes, read in 1 MiB chunks (symlinks followed)."""
    digest = hashlib.sha256()
    with path.resolve().open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
