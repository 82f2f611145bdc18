"""Per-attempt read-only export of a pinned corpus (seed 000, "CLI transport contract").

The export holds only blobs at the pin that pass the public-path filter: regular files
(mode 100644 or 100755) of at most 200,000 bytes; no segment starting with a dot (so no
``.git`` and no index); no ``node_modules``, ``dist``, ``build`` or ``coverage``; no
lockfiles; not the answer key; no name containing ``secret`` or ``credential``. Files end
at mode 0444 and directories at 0555; removal restores write permission first.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
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


@dataclass(frozen=True)
class CorpusExport:
    """An export on disk: its ``path``, how many ``files`` and ``bytes`` it holds, and ``tree_sha256``.

    ``tree_sha256`` is the SHA-256 hex over the sorted lines ``<path> NUL <sha256 of content> LF``:
    the same pinned corpus always gives the same digest, whatever the git object format.
    """

    path: Path
    files: int
    bytes: int
    tree_sha256: str


def export_pinned_corpus(root: Path, pin: str, parent: Path | None = None) -> CorpusExport:
    """Write the filtered corpus at ``pin`` into a fresh ``mkdtemp`` directory and seal it.

    Blobs are read with one ``git cat-file --batch`` process. Files end at 0444 and directories
    at 0555; on any failure the partial export is removed.

    Raises:
        GitError: if the tree or a blob cannot be read.
    """
    entries = sorted((e for e in list_tree(root, pin) if is_exported(e)), key=lambda e: e.path)
    blobs = read_blobs(root, [e.oid for e in entries])
    export = Path(tempfile.mkdtemp(prefix="agentstudy-export-", dir=parent))
    digest = hashlib.sha256()
    total = 0
    try:
        for entry in entries:
            content = blobs[entry.oid]
            target = export / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            target.chmod(0o444)
            digest.update(f"{entry.path}\0{hashlib.sha256(content).hexdigest()}\n".encode())
            total += len(content)
        for directory, _dirs, _files in os.walk(export, topdown=False):
            Path(directory).chmod(0o555)
    except BaseException:
        remove_export(export)
        raise
    return CorpusExport(export, len(entries), total, digest.hexdigest())


def export_corpus(root: Path, pin: str, parent: Path | None = None) -> Path:
    """Like ``export_pinned_corpus`` but return only the export directory."""
    return export_pinned_corpus(root, pin, parent).path


def remove_export(export: Path) -> None:
    """Restore write permission on every directory of an export, then remove it."""
    if not export.exists():
        return
    for directory, _dirs, _files in os.walk(export):
        Path(directory).chmod(stat.S_IRWXU)
    shutil.rmtree(export, ignore_errors=False)
