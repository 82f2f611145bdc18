"""The four ``doc-bridge`` tools on the official MCP SDK's ``MCPServer`` (what ``mcp_server`` serves).

Importing this module imports the SDK (about 550 pydantic models are built then); the command
``python -I -m agentstudy.rehearsal.mcp_server`` imports it only after its arguments are checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from agentstudy.rehearsal.snapshot_corpus import MAX_SEARCH_HITS, SnapshotCorpus, ToolRequestError

__all__ = ["build_server"]

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_MUTATING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def _answer(call: Callable[[], str]) -> str:
    """``call()``'s text, or the SDK's ``ToolError`` (an ``isError`` result) carrying a ``ToolRequestError``'s text."""
    try:
        return call()
    except ToolRequestError as error:
        raise ToolError(str(error)) from None


def build_server(corpus: SnapshotCorpus, log_path: Path | None = None) -> MCPServer:
    """Create the ``doc-bridge`` MCPServer exposing the four tools over ``corpus``."""
    server: MCPServer = MCPServer(
        name="doc-bridge",
        instructions=f"Read-only documentation tools for one repository at commit {corpus.pin}.",
        log_level="WARNING",
    )

    read_tool = partial(server.tool, annotations=_READ_ONLY, structured_output=False)

    def record(tool: str, arguments: dict[str, Any]) -> None:
        if log_path is not None:
            with log_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"tool": tool, "arguments": arguments}, ensure_ascii=False) + "\n")

    @read_tool(
        name="doc.search",
        description="Case-insensitive substring search over the repository's Markdown and code "
        "files at the pinned commit. Returns one hit per line as 'path:line: text' "
        f"(at most {MAX_SEARCH_HITS}), or 'no matches'.",
    )
    def doc_search(query: Annotated[str, Field(min_length=1, max_length=200)]) -> str:
        record("doc.search", {"query": query})
        return _answer(lambda: corpus.search(query))

    @read_tool(
        name="doc.get",
        description="Read lines of one repository file at the pinned commit. Returns lines "
        "rendered as 'N<TAB>text'. Paths are relative to the repository root.",
    )
    def doc_get(
        path: Annotated[str, Field(min_length=1, max_length=500)],
        start: Annotated[int, Field(ge=1)] = 1,
        lines: Annotated[int, Field(ge=1, le=1000)] = 100,
    ) -> str:
        record("doc.get", {"path": path, "start": start, "lines": lines})
        return _answer(lambda: corpus.get(path, start, lines))

    @read_tool(
        name="handoff.resolve",
        description="Resolve an on-call handoff id such as 'H-3' to its owner and topic, "
        "citing the table row it came from.",
    )
    def handoff_resolve(handoff_id: Annotated[str, Field(min_length=1, max_length=100)]) -> str:
        record("handoff.resolve", {"handoff_id": handoff_id})
        return _answer(lambda: corpus.resolve_handoff(handoff_id))

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
