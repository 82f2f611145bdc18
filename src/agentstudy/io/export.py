"""Per-attempt read-only export of a pinned corpus (seed 000, "CLI transport contract").

The export holds only blobs at the pin that pass the public-path filter of
``protocol.corpus_filter`` (the one filter of every arm's view of a corpus). Files end at mode
0444 and directories at 0555; removal restores write permission first. The same function makes
the run-wide read-only snapshot the MCP server under study is handed as ``{root}``. A corpus can
also be read once into content-addressed blobs (``CorpusBlobs``) and materialised elsewhere, as a
Ray worker does (issue 20).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from agentstudy.io.git import TreeEntry, list_tree, read_blobs
from agentstudy.io.scratch import owned_mkdtemp, release
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


@dataclass(frozen=True)
class CorpusBlobs:
    """A pinned corpus as content-addressed blobs (issue 20): what a Ray worker materialises an export from.

    ``files`` are ``(path, sha256 hex of content)`` pairs sorted by path; ``blobs`` maps each
    SHA-256 hex to its bytes (one entry per distinct content). Nothing in it names a path on the
    driver's disk, so it can be shipped through an object store.
    """

    files: tuple[tuple[str, str], ...]
    blobs: dict[str, bytes]


def read_pinned_corpus(root: Path, pin: str) -> CorpusBlobs:
    """The filtered corpus at ``pin`` of the checkout ``root`` as content-addressed blobs.

    Blobs are read with one ``git cat-file --batch`` process.

    Raises:
        GitError: if the tree or a blob cannot be read.
    """
    entries = sorted((e for e in list_tree(root, pin) if is_exported(e)), key=lambda e: e.path)
    contents = read_blobs(root, [e.oid for e in entries])
    files: list[tuple[str, str]] = []
    blobs: dict[str, bytes] = {}
    for entry in entries:
        content = contents[entry.oid]
        digest = hashlib.sha256(content).hexdigest()
        blobs[digest] = content
        files.append((entry.path, digest))
    return CorpusBlobs(tuple(files), blobs)


def materialise_corpus(corpus: CorpusBlobs, parent: Path | None = None) -> CorpusExport:
    """Write ``corpus`` into a fresh owned ``mkdtemp`` directory (``io.scratch``) and seal it (files 0444,
    directories 0555).

    On any failure the partial export is removed. Raises ``OSError`` if the disk refuses.
    """
    export = owned_mkdtemp("export", parent)
    digest = hashlib.sha256()
    total = 0
    try:
        for path, content_sha in corpus.files:
            content = corpus.blobs[content_sha]
            target = export / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            target.chmod(0o444)
            digest.update(f"{path}\0{content_sha}\n".encode())
            total += len(content)
        for directory, _dirs, _files in os.walk(export, topdown=False):
            Path(directory).chmod(0o555)
    except BaseException:
        remove_export(export)
        raise
    return CorpusExport(export, len(corpus.files), total, digest.hexdigest())


def export_pinned_corpus(root: Path, pin: str, parent: Path | None = None) -> CorpusExport:
    """Write the filtered corpus at ``pin`` into a fresh ``mkdtemp`` directory and seal it.

    ``read_pinned_corpus`` then ``materialise_corpus``: files end at 0444 and directories at
    0555; on any failure the partial export is removed.

    Raises:
        GitError: if the tree or a blob cannot be read.
    """
    return materialise_corpus(read_pinned_corpus(root, pin), parent)


def export_corpus(root: Path, pin: str, parent: Path | None = None) -> Path:
    """Like ``export_pinned_corpus`` but return only the export directory."""
    return export_pinned_corpus(root, pin, parent).path


def remove_export(export: Path) -> None:
    """Restore write permission on every directory of an export, then remove it and its owner marker."""
    if export.exists():
        for directory, _dirs, _files in os.walk(export):
            Path(directory).chmod(stat.S_IRWXU)
        shutil.rmtree(export, ignore_errors=False)
    release(export)
