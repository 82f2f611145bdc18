"""The pinned corpus snapshot the bundled ``doc-bridge`` MCP server serves (stdlib only).

Listing, search, line reads and handoff lookup over the files that pass the shared public-path
filter (``protocol.corpus_filter``). Kept apart from the MCP SDK so that the server command can
refuse a bad ``--root`` or ``--pin`` before it imports the SDK (issue 19: start-up cost).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from agentstudy.protocol.corpus_filter import MAX_EXPORT_FILE_BYTES, is_public_path

__all__ = ["MAX_BLOB_BYTES", "MAX_SEARCH_HITS", "SEARCH_SUFFIXES", "CorpusError", "SnapshotCorpus", "ToolRequestError"]

MAX_SEARCH_HITS = 20
"""Most hits ``doc.search`` returns."""

MAX_BLOB_BYTES = MAX_EXPORT_FILE_BYTES
"""Files larger than this (bytes) are not served."""

SEARCH_SUFFIXES = (".md", ".mdx", ".py", ".ts", ".tsx", ".js", ".mjs", ".json")
"""File name endings ``doc.search`` scans (Markdown and code)."""

_PIN_RE = re.compile(r"^[0-9a-f]{40}$")
_HANDOFF_ROW = re.compile(r"^\|\s*(H-\d+)\s*\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|\s*$")


class CorpusError(Exception):
    """The snapshot or pin cannot be served (missing directory, malformed pin)."""


class ToolRequestError(ValueError):
    """A tool call the corpus cannot answer (unknown path, empty query, lines out of range); its text is the
    tool's error result (``doc_bridge_tools`` turns it into the SDK's ``ToolError``)."""


class SnapshotCorpus:
    """The servable files of one corpus snapshot directory, listed once when opened.

    Args:
        root: the snapshot directory (``{root}``).
        pin: the corpus commit as 40 lowercase hex digits (named in results and instructions).

    Raises:
        CorpusError: if ``pin`` is malformed or ``root`` is not a directory.
    """

    def __init__(self, root: Path, pin: str) -> None:
        if not _PIN_RE.fullmatch(pin):
            raise CorpusError(f"pin must be 40 lowercase hex digits, got {pin!r}")
        if not root.is_dir():
            raise CorpusError(f"corpus snapshot {root} is not a directory")
        self.root = root.resolve()
        self.pin = pin
        self._files: dict[str, Path] = {}
        for directory, dirs, files in os.walk(self.root, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                path = Path(directory) / name
                relative = path.relative_to(self.root).as_posix()
                info = path.lstat()
                if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_BLOB_BYTES and is_public_path(relative):
                    self._files[relative] = path
        self._files = dict(sorted(self._files.items()))
        self._text: dict[str, str] = {}

    @property
    def paths(self) -> list[str]:
        """Servable repository paths at the pin, in Git (sorted) order."""
        return list(self._files)

    def read_lines(self, path: str) -> list[str]:
        """The lines of ``path`` at the pin (no terminators). Raises ToolRequestError for unknown paths."""
        if path not in self._files:
            raise ToolRequestError(f"unknown path: {path!r} is not a servable file at {self.pin[:12]}")
        if path not in self._text:
            self._text[path] = self._files[path].read_bytes().decode("utf-8", "replace")
        text = self._text[path]
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [line.removesuffix("\r") for line in lines]

    def search(self, query: str) -> str:
        """``path:line: text`` hits (text capped at 300 chars), at most 20, or ``no matches``."""
        if not query.strip():
            raise ToolRequestError("query must not be empty")
        needle = query.casefold()
        hits: list[str] = []
        for path in self.paths:
            if not path.lower().endswith(SEARCH_SUFFIXES):
                continue
            for number, line in enumerate(self.read_lines(path), start=1):
                if needle in line.casefold():
                    hits.append(f"{path}:{number}: {line[:300]}")
                    if len(hits) == MAX_SEARCH_HITS:
                        return "\n".join(hits)
        return "\n".join(hits) if hits else "no matches"

    def get(self, path: str, start: int = 1, lines: int = 100) -> str:
        """Lines ``start .. start+lines-1`` of ``path`` rendered ``N\\ttext`` and joined by ``\\n``."""
        content = self.read_lines(path)
        if start < 1 or lines < 1:
            raise ToolRequestError("start and lines must be at least 1")
        if start > max(len(content), 1):
            raise ToolRequestError(f"start {start} is past the end of {path} ({len(content)} lines)")
        chunk = content[start - 1 : start - 1 + lines]
        return "\n".join(f"{start + i}\t{text}" for i, text in enumerate(chunk))

    def resolve_handoff(self, handoff_id: str) -> str:
        """``H-n | owner: O | topic: T | source: path:line`` or ``unknown handoff: <id>``."""
        wanted = handoff_id.strip().upper()
        for path in self.paths:
            if not path.lower().endswith((".md", ".mdx")):
                continue
            for number, line in enumerate(self.read_lines(path), start=1):
                row = _HANDOFF_ROW.match(line.strip())
                if row and row.group(1) == wanted:
                    owner, topic = row.group(2), row.group(3)
                    return f"{wanted} | owner: {owner} | topic: {topic} | source: {path}:{number}"
        return f"unknown handoff: {handoff_id.strip()[:100]}"
