"""Mechanical citation checks, done by our code before any adjudicator runs (issue 10, item 3).

A citation is ``path:line`` or ``path:start-end`` (an en dash or ``L`` prefixes are accepted:
``a.md:L3-L9``). The path must look like a file: it contains ``/`` or ends in an extension, so
``10:30`` or ``SEV1:5`` are not citations. ``./`` is dropped, and an absolute path into a
per-attempt export (``…/agentstudy-export-<random>/<path>``) is reduced to ``<path>``. Each
distinct citation is checked once against the corpus at its pin: the path must be a blob
there (``unknown path``) and ``1 <= start <= end <= lines of the file`` (``line out of range``,
``reversed range``). ``extract_citations`` and ``check_citations`` are pure; ``PinnedCorpus``
reads git.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentstudy.io.git import list_tree, read_blobs
from agentstudy.protocol.adjudication import CitationChecks, CitationFailure

_CITATION = re.compile(
    r"(?<![\w@+~./:-])(?P<path>(?:\./|/)?[\w@+~-][\w@+~./-]*)"
    r":L?(?P<start>\d+)(?:[ \t]?[-\u2013][ \t]?L?(?P<end>\d+))?(?![\d])"
)
_FILE_LIKE = re.compile(r"(?:/|\.[A-Za-z][A-Za-z0-9]*$)")
_EXPORT_PREFIX = re.compile(r"^/(?:[^/]+/)*agentstudy-export-[^/]+/")
_EXPORT_PREFIX_ANYWHERE = re.compile(r"(?<![\w.~-])/(?:[\w.~@+-]+/)*agentstudy-export-[\w]+/")


def strip_export_prefixes(text: str) -> str:
    """``text`` with every absolute per-attempt export prefix (``/tmp/agentstudy-export-x/``) removed.

    A server that reports absolute paths (``@modelcontextprotocol/server-filesystem`` does) makes
    only the MCP arm's answers cite ``/tmp/agentstudy-export-…/README.md:3``; left in, the prefix
    would tell the blind adjudicator which arm answered (issue 18). Pure.
    """
    return _EXPORT_PREFIX_ANYWHERE.sub("", text)


@dataclass(frozen=True)
class Citation:
    """One citation found in a text: its exact ``text``, normalised ``path``, 1-based ``start``/``end``
    lines (equal for ``path:line``) and its character ``span`` in the text."""

    text: str
    path: str
    start: int
    end: int
    span: tuple[int, int]


def normalise_path(path: str) -> str:
    """Drop a leading ``./`` and an absolute export prefix (``/tmp/agentstudy-export-x/``); else unchanged."""
    path = _EXPORT_PREFIX.sub("", path)
    while path.startswith("./"):
        path = path[2:]
    return path


def extract_citations(text: str) -> list[Citation]:
    """Every ``path:line`` / ``path:start-end`` citation in ``text``, in order (duplicates included)."""
    found: list[Citation] = []
    for match in _CITATION.finditer(text):
        raw = match.group("path").rstrip(".")
        if raw.startswith("//") or not _FILE_LIKE.search(raw):
            continue
        start = int(match.group("start"))
        end = int(match.group("end")) if match.group("end") else start
        found.append(Citation(match.group(0), normalise_path(raw), start, end, match.span()))
    return found


def check_citations(citations: list[Citation], line_count: Callable[[str], int | None]) -> CitationChecks:
    """Check each distinct citation (by path and lines) against the pinned corpus.

    Args:
        citations: as found by :func:`extract_citations`.
        line_count: the number of lines of a path at the pin, ``None`` when it is not a blob there.

    Returns:
        ``total`` distinct citations, how many are ``valid``, and one failure per invalid one.
    """
    seen: set[tuple[str, int, int]] = set()
    failures: list[CitationFailure] = []
    total = 0
    for citation in citations:
        key = (citation.path, citation.start, citation.end)
        if key in seen:
            continue
        seen.add(key)
        total += 1
        problem = citation_problem(citation, line_count(citation.path))
        if problem is not None:
            failures.append(CitationFailure(citation=citation.text, problem=problem))
    return CitationChecks(total=total, valid=total - len(failures), failures=failures)


def citation_problem(citation: Citation, lines: int | None) -> str | None:
    """Why ``citation`` fails against a file of ``lines`` lines (``None``: no such path), or ``None`` if valid."""
    if lines is None:
        return "unknown path"
    if citation.start > citation.end:
        return "reversed range"
    if citation.start < 1 or citation.end > lines:
        return f"line out of range (the file has {lines} lines)"
    return None


def count_lines(data: bytes) -> int:
    """Lines of a file: newlines, plus one for a last line without a newline (0 for an empty file)."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


class PinnedCorpus:
    """The blobs of one repository at its pin, for citation checks (reads git lazily, caches line counts)."""

    def __init__(self, root: Path, pin: str) -> None:
        """List the tree at ``pin``.

        Raises:
            GitError: the tree cannot be listed.
        """
        self._root = root
        self._blobs = {entry.path: entry.oid for entry in list_tree(root, pin) if entry.kind == "blob"}
        self._lines: dict[str, int] = {}

    def line_count(self, path: str) -> int | None:
        """Lines of ``path`` at the pin, or ``None`` when it is not a blob there.

        Raises:
            GitError: the blob cannot be read.
        """
        oid = self._blobs.get(path)
        if oid is None:
            return None
        if path not in self._lines:
            self._lines[path] = count_lines(read_blobs(self._root, [oid])[oid])
        return self._lines[path]
