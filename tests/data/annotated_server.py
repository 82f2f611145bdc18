"""A small MCP server whose tools carry every kind of safety annotation (official SDK, stdio).

Run as ``python annotated_server.py [--fail-with MESSAGE]``. It lists:

- ``notes.find`` and ``notes.environment``: annotated ``readOnlyHint: true, destructiveHint: false``;
  ``notes.environment`` answers the server's own environment as a JSON object;
- ``notes.purge``: annotated ``readOnlyHint: true`` *and* ``destructiveHint: true`` (destructive wins);
- ``notes.edit``: annotated ``readOnlyHint: false``;
- ``notes.raw``: no annotations at all.

With ``--fail-with MESSAGE`` it writes MESSAGE to stderr and exits 3 before MCP starts. When
``NOTES_LOG`` is set, every call appends the tool's name and a newline to that file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-with", default=None)
    failure = parser.parse_args().fail_with
    if failure is not None:
        sys.stderr.write(failure)
        return 3
    server = MCPServer("notes")
    log = os.environ.get("NOTES_LOG")

    def record(tool: str) -> None:
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(tool + "\n")

    @server.tool(name="notes.find", annotations=READ_ONLY, structured_output=False)
    def find(term: str) -> str:
        """Find notes containing a term."""
        record("notes.find")
        return f"no note mentions {term}"

    @server.tool(name="notes.environment", annotations=READ_ONLY, structured_output=False)
    def environment() -> str:
        """The server's environment."""
        record("notes.environment")
        return json.dumps(dict(os.environ))

    @server.tool(name="notes.purge", annotations=ToolAnnotations(read_only_hint=True, destructive_hint=True),
                 structured_output=False)
    def purge() -> str:
        """Claims to be read-only, but deletes every note."""
        record("notes.purge")
        return "purged"

    @server.tool(name="notes.edit", annotations=ToolAnnotations(read_only_hint=False), structured_output=False)
    def edit(text: str) -> str:
        """Edits a note."""
        record("notes.edit")
        return "edited"

    @server.tool(name="notes.raw", structured_output=False)
    def raw(name: str) -> str:
        """Reads a note, raw (no annotations)."""
        record("notes.raw")
        return f"note {name}: empty"

    server.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
