"""Repository tools of the Messages API agent over frozen git blobs (digest section 2.2).

``repo_list``, ``repo_read`` and ``repo_search`` read only blobs at the pin that pass the
export filter shared with the CLI transport (no working tree, no shell, no export). Any
invalid input, unknown path or failure returns one fixed error text, never an exception
message. Results are compact JSON of the tool's return value.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.io.export import CorpusBlobs, is_exported
from agentstudy.io.git import GitError, list_tree, read_blobs

LIST_LIMIT = 200
READ_MAX_LINES = 100
SEARCH_MAX_FILES = 500
SEARCH_MAX_MATCHES = 30
SEARCH_DEADLINE_S = 30.0
MATCH_TEXT_LIMIT = 500
TERM_LIMIT = 200
TOOL_ERROR = "tool error: the call was refused or failed"


class ToolInputError(ValueError):
    """The tool input does not match the tool's schema."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned: ``content`` (text sent back to the model) and ``is_error``; ``server_bytes`` is the
    UTF-8 bytes of the text an MCP server returned (``protocol.treatment.text_bytes``; issue 28), ``None`` for
    a repository tool or a call the server never answered."""

    content: str
    is_error: bool
    server_bytes: int | None = None


DEFINITIONS: list[dict[str, Any]] = [
    {
        "name": "repo_list",
        "description": "List repository file paths (at most 200), optionally only those containing a term.",
        "input_schema": {
            "type": "object",
            "properties": {"term": {"type": "string", "maxLength": TERM_LIMIT}},
            "additionalProperties": False,
        },
    },
    {
        "name": "repo_read",
        "description": "Read up to 100 lines of a repository file, each prefixed with its 1-based line number.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "start": {"type": "integer", "minimum": 1},
                "lines": {"type": "integer", "minimum": 1, "maximum": READ_MAX_LINES},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
    {
        "name": "repo_search",
        "description": "Find lines containing a literal term (at most 30 matches over the first 500 files).",
        "input_schema": {
            "type": "object",
            "properties": {
                "term": {"type": "string", "minLength": 1, "maxLength": TERM_LIMIT},
                "path": {"type": "string", "maxLength": TERM_LIMIT},
            },
            "required": ["term"],
            "additionalProperties": False,
        },
    },
]


def _string(arguments: Mapping[str, Any], key: str, *, required: bool, low: int = 0, high: int = TERM_LIMIT) -> str:
    value = arguments.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not low <= len(value) <= high:
        raise ToolInputError(key)
    return value


def _integer(arguments: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = arguments.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolInputError(key)
    return value


def _only(arguments: Mapping[str, Any], allowed: set[str]) -> None:
    if not isinstance(arguments, Mapping) or set(arguments) - allowed:
        raise ToolInputError("unexpected input")


class RepositoryTools:
    """The three tools over one corpus at one pin.

    Args:
        root: the corpus checkout (only its object database is read).
        pin: the 40-hex commit.
        clock: seconds, monotonic (injected so tests can move time).

    Raises:
        GitError: if the tree at the pin cannot be listed.
    """

    def __init__(self, root: Path, pin: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        entries = sorted((e for e in list_tree(root, pin) if is_exported(e)), key=lambda e: e.path)
        self._oids = {e.path: e.oid for e in entries}
        self._fetch: Callable[[list[str]], Mapping[str, bytes]] = lambda oids: read_blobs(root, oids)
        self._texts: dict[str, list[str]] = {}

    @classmethod
    def from_corpus(cls, corpus: CorpusBlobs, clock: Callable[[], float] = time.monotonic) -> RepositoryTools:
        """The same three tools over a corpus read once as content-addressed blobs (a Ray worker's; issue 20).

        ``io.export.read_pinned_corpus`` applies the same export filter, so the paths and texts
        are those of ``RepositoryTools(root, pin)`` on the checkout the corpus was read from.
        """
        tools = cls.__new__(cls)
        tools._clock = clock
        tools._oids = dict(corpus.files)
        tools._fetch = lambda keys: {key: corpus.blobs[key] for key in keys}
        tools._texts = {}
        return tools

    @property
    def paths(self) -> list[str]:
        """Every path the tools may show, sorted."""
        return list(self._oids)

    def _lines(self, paths: list[str]) -> dict[str, list[str]]:
        missing = [p for p in paths if p not in self._texts]
        if missing:
            blobs = self._fetch([self._oids[p] for p in missing])
            for path in missing:
                self._texts[path] = blobs[self._oids[path]].decode("utf-8", "replace").splitlines()
        return {p: self._texts[p] for p in paths}

    def call(self, name: str, arguments: Any) -> ToolResult:
        """Run tool ``name``; any failure is the fixed error text with ``is_error`` set."""
        try:
            if name == "repo_list":
                value: Any = self._list(arguments)
            elif name == "repo_read":
                value = self._read(arguments)
            elif name == "repo_search":
                value = self._search(arguments)
            else:
                raise ToolInputError("unknown tool")
        except (ToolInputError, GitError, KeyError, TimeoutError):
            return ToolResult(TOOL_ERROR, True)
        return ToolResult(json.dumps(value, separators=(",", ":"), ensure_ascii=False), False)

    def _list(self, arguments: Any) -> list[str]:
        _only(arguments, {"term"})
        term = _string(arguments, "term", required=False)
        return [p for p in self._oids if term in p][:LIST_LIMIT]

    def _read(self, arguments: Any) -> str:
        _only(arguments, {"path", "start", "lines"})
        path = _string(arguments, "path", required=True, low=1, high=4096)
        start = _integer(arguments, "start", 1, 1, 10**9)
        count = _integer(arguments, "lines", READ_MAX_LINES, 1, READ_MAX_LINES)
        if path not in self._oids:
            raise ToolInputError("path")
        lines = self._lines([path])[path]
        if start > max(len(lines), 1):
            raise ToolInputError("start")
        return "\n".join(f"{n}: {text}" for n, text in enumerate(lines[start - 1 : start - 1 + count], start=start))

    def _search(self, arguments: Any) -> dict[str, Any]:
        _only(arguments, {"term", "path"})
        term = _string(arguments, "term", required=True, low=1)
        within = _string(arguments, "path", required=False)
        deadline = self._clock() + SEARCH_DEADLINE_S
        candidates = [p for p in self._oids if within in p][:SEARCH_MAX_FILES]
        matches: list[str] = []
        for path, lines in self._lines(candidates).items():
            if self._clock() > deadline:
                raise TimeoutError("search timed out")
            for number, text in enumerate(lines, start=1):
                if term in text:
                    matches.append(f"{path}:{number}: {text[:MATCH_TEXT_LIMIT]}")
                    if len(matches) >= SEARCH_MAX_MATCHES:
                        return {"matches": matches, "limitedToFirstFiles": SEARCH_MAX_FILES}
        return {"matches": matches, "limitedToFirstFiles": SEARCH_MAX_FILES}
