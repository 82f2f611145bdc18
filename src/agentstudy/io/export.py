"""Per-attempt read-only export of a pinned corpus (seed 000, "CLI transport contract").

The export holds only blobs at the pin that pass the public-path filter of
``protocol.corpus_filter`` (the one filter of every arm's view of a corpus). Files end at mode
0444 and directories at 0555; removal restores write permission first. The same function makes
the run-wide read-only snapshot the MCP server under study is handed as ``{root}``.
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
from agentstudy.protocol.corpus_filter import is_public_blob


def is_exported(entry: TreeEntry) -> bool:
    """Whether a tree entry passes the shared public-path filter (``protocol.corpus_filter``)."""
    return is_public_blob(entry.mode, entry.kind, entry.size, entry.path)


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
