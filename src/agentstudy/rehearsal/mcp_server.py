"""Example read-only MCP server ``doc-bridge`` over stdio, for rehearsals of the doc-bridge arm.

Run as ``python -I -m agentstudy.rehearsal.mcp_server --root DIR --pin SHA [--log FILE]``.
``DIR`` is the read-only snapshot of the pinned corpus that agentstudy hands every MCP server
under study as ``{root}`` (issue 15): the same filtered tree as the agent's export. The server
lists it once at start-up and serves only the files that pass the shared public-path filter
(``protocol.corpus_filter``: regular files, not symlinks, at most 200,000 bytes) — so the
answer key, dotfiles and build output are never served, whatever directory it is given.
A missing directory or a malformed pin makes the process exit with status 2 and a message on
stderr before MCP starts.

Tools (all results are plain text blocks; failures are ``isError`` results). Read tools are
annotated ``readOnlyHint: true``; ``doc.write`` is annotated ``destructiveHint: true`` so that
preflight refuses a study that names it:

- ``doc.search(query)``: case-insensitive substring search over Markdown and code files;
  one hit per line ``path:line: text``, at most 20 hits, or ``no matches``.
- ``doc.get(path, start=1, lines=100)``: lines rendered ``N\\ttext`` joined by ``\\n``.
- ``handoff.resolve(handoff_id)``: looks the id up in Markdown table rows ``| H-n | owner | topic |``;
  ``H-n | owner: O | topic: T | source: path:line``, or ``unknown handoff: H-n``.
- ``doc.write(path, text)``: mutating by contract, but always refuses; nothing is ever written.

With ``--log FILE`` each call appends one JSON line ``{"tool": name, "arguments": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from agentstudy.protocol.corpus_filter import MAX_EXPORT_FILE_BYTES, is_public_path

__all__ = ["MAX_BLOB_BYTES", "MAX_SEARCH_HITS", "CorpusError", "SnapshotCorpus", "build_server", "main"]

MAX_SEARCH_HITS = 20
"""Most hits ``doc.search`` returns."""

MAX_BLOB_BYTES = MAX_EXPORT_FILE_BYTES
"""Files larger than this (bytes) are not served."""

SEARCH_SUFFIXES = (".md", ".mdx", ".py", ".ts", ".tsx", ".js", ".mjs", ".json")
"""File name endings ``doc.search`` scans (Markdown and code)."""

_PIN_RE = re.compile(r"^[0-9a-f]{40}$")
_HANDOFF_ROW = re.compile(r"^\|\s*(H-\d+)\s*\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|\s*$")
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_MUTATING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


class CorpusError(Exception):
    """The snapshot or pin cannot be served (missing directory, malformed pin)."""


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
        """The lines of ``path`` at the pin (no terminators). Raises ToolError for unknown paths."""
        if path not in self._files:
            raise ToolError(f"unknown path: {path!r} is not a servable file at {self.pin[:12]}")
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
            raise ToolError("query must not be empty")
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
            raise ToolError("start and lines must be at least 1")
        if start > max(len(content), 1):
            raise ToolError(f"start {start} is past the end of {path} ({len(content)} lines)")
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


def build_server(corpus: SnapshotCorpus, log_path: Path | None = None) -> MCPServer:
    """Create the ``doc-bridge`` MCPServer exposing the four tools over ``corpus``."""
    server: MCPServer = MCPServer(
        name="doc-bridge",
        instructions=f"Read-only documentation tools for one repository at commit {corpus.pin}.",
        log_level="WARNING",
    )

    def record(tool: str, arguments: dict[str, Any]) -> None:
        if log_path is not None:
            with log_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"tool": tool, "arguments": arguments}, ensure_ascii=False) + "\n")

    @server.tool(
        name="doc.search",
        annotations=_READ_ONLY,
        structured_output=False,
        description="Case-insensitive substring search over the repository's Markdown and code "
        "files at the pinned commit. Returns one hit per line as 'path:line: text' "
        f"(at most {MAX_SEARCH_HITS}), or 'no matches'.",
    )
    def doc_search(query: Annotated[str, Field(min_length=1, max_length=200)]) -> str:
        record("doc.search", {"query": query})
        return corpus.search(query)

    @server.tool(
        name="doc.get",
        annotations=_READ_ONLY,
        structured_output=False,
        description="Read lines of one repository file at the pinned commit. Returns lines "
        "rendered as 'N<TAB>text'. Paths are relative to the repository root.",
    )
    def doc_get(
        path: Annotated[str, Field(min_length=1, max_length=500)],
        start: Annotated[int, Field(ge=1)] = 1,
        lines: Annotated[int, Field(ge=1, le=1000)] = 100,
    ) -> str:
        record("doc.get", {"path": path, "start": start, "lines": lines})
        return corpus.get(path, start, lines)

    @server.tool(
        name="handoff.resolve",
        annotations=_READ_ONLY,
        structured_output=False,
        description="Resolve an on-call handoff id such as 'H-3' to its owner and topic, "
        "citing the table row it came from.",
    )
    def handoff_resolve(handoff_id: Annotated[str, Field(min_length=1, max_length=100)]) -> str:
        record("handoff.resolve", {"handoff_id": handoff_id})
        return corpus.resolve_handoff(handoff_id)

    @server.tool(
        name="doc.write",
        annotations=_MUTATING,
        structured_output=False,
        description="Write a repository file. Disabled on this server: always fails, nothing is modified.",
    )
    def doc_write(path: str, text: str) -> str:
        record("doc.write", {"path": path, "text": text})
        raise ToolError("doc.write is disabled: this doc-bridge server is read-only; nothing was written")

    return server


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, open the pinned corpus and serve MCP over stdio.

    Returns 0 after a normal shutdown; returns 2 (message on stderr) when the repository, the
    pin or the log file cannot be used.
    """
    parser = argparse.ArgumentParser(
        prog="python -m agentstudy.rehearsal.mcp_server",
        description="Read-only doc-bridge MCP server (stdio).",
    )
    parser.add_argument("--root", required=True, type=Path, help="corpus snapshot directory to serve ({root})")
    parser.add_argument("--pin", required=True, help="the snapshot's 40-hex commit")
    parser.add_argument("--log", type=Path, default=None, help="append one JSON line per tool call")
    args = parser.parse_args(argv)
    try:
        corpus = SnapshotCorpus(args.root, args.pin)
        if args.log is not None:
            args.log.open("a", encoding="utf-8").close()
    except (CorpusError, OSError) as exc:
        print(f"doc-bridge: refusing to start: {exc}", file=sys.stderr)
        return 2
    build_server(corpus, args.log).run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
