"""Per-attempt read-only export of a pinned corpus (seed 000, "CLI transport contract").

The export holds only blobs at the pin that pass the public-path filter: regular files
(mode 100644 or 100755) of at most 200,000 bytes; no segment starting with a dot (so no
``.git`` and no index); no ``node_modules``, ``dist``, ``build`` or ``coverage``; no
lockfiles; not the answer key; no name containing ``secret`` or ``credential``. Files end
at mode 0444 and directories at 0555; removal restores write permission first.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from agentstudy.io.git import TreeEntry, list_tree, read_blobs

MAX_EXPORT_FILE_BYTES = 200_000
EXCLUDED_SEGMENTS = frozenset({"node_modules", "dist", "build", "coverage"})
LOCKFILE_NAMES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "bun.lock",
        "poetry.lock",
        "uv.lock",
        "Pipfile.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
    }
)
ANSWER_KEY_MARKERS = ("study/minimal-study",)


def is_exported(entry: TreeEntry) -> bool:
    """Whether a tree entry passes the export filter described in the module docstring."""
    if entry.kind != "blob" or entry.mode not in ("100644", "100755"):
        return False
    if entry.size is None or entry.size > MAX_EXPORT_FILE_BYTES:
        return False
    segments = entry.path.split("/")
    if any(s.startswith(".") or s in EXCLUDED_SEGMENTS for s in segments):
        return False
    name = segments[-1]
    lowered = entry.path.lower()
    if name in LOCKFILE_NAMES or name.endswith(".lock"):
        return False
    if any(marker in lowered for marker in ANSWER_KEY_MARKERS):
        return False
    return "secret" not in lowered and "credential" not in lowered


def export_corpus(root: Path, pin: str, parent: Path | None = None) -> Path:
    """Write the filtered corpus at ``pin`` into a fresh ``mkdtemp`` directory and seal it.

    Returns:
        The export directory (files 0444, directories 0555).

    Raises:
        GitError: if the tree or a blob cannot be read.
    """
    entries = [e for e in list_tree(root, pin) if is_exported(e)]
    blobs = read_blobs(root, [e.oid for e in entries])
    export = Path(tempfile.mkdtemp(prefix="agentstudy-export-", dir=parent))
    try:
        for entry in entries:
            target = export / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blobs[entry.oid])
            target.chmod(0o444)
        for directory, _dirs, _files in os.walk(export, topdown=False):
            Path(directory).chmod(0o555)
    except BaseException:
        remove_export(export)
        raise
    return export


def remove_export(export: Path) -> None:
    """Restore write permission on every directory of an export, then remove it."""
    if not export.exists():
        return
    for directory, _dirs, _files in os.walk(export):
        Path(directory).chmod(stat.S_IRWXU)
    shutil.rmtree(export, ignore_errors=False)
