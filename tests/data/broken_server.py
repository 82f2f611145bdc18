"""A broken, slightly hostile MCP server for the failed-probe tests (official SDK, stdio; issue 18, item 5).

Run as ``python broken_server.py MODE``. It lists ``repo.search`` (annotated read-only) and
``repo.read`` (no annotations), and fails the way third-party servers do:

- ``refuse``: ``repo.search`` answers an ``isError`` result whose text is the server's own
  reason, ``Repository path '{root}' is outside the allowed repository …`` followed by the
  value of its ``BROKEN_TOKEN`` environment variable (a configured secret that must never be
  shown) and 5,000 bytes of padding (the shown text must be bounded);
- ``crash``: writes 5,000 bytes of a traceback-like padding, then the same reason and secret,
  to stderr before MCP starts and exits 3 (the reason comes last, as a real server's does);
- ``raise``: ``repo.search`` raises, so the SDK answers a protocol-level tool error.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
REASON = "Repository path '{root}' is outside the allowed repository /srv/allowed"


def _reason() -> str:
    token = os.environ.get("BROKEN_TOKEN", "")
    return f"{REASON} (token={token}; env {token})"


def _said() -> str:
    return _reason() + " " + "x" * 5000


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "refuse"
    if mode == "crash":
        sys.stderr.write("  at frame\n" * 500 + _reason() + "\n")
        return 3
    server = MCPServer("broken")

    @server.tool(name="repo.search", annotations=READ_ONLY, structured_output=False)
    def search(query: str) -> CallToolResult:
        """Search the repository."""
        if mode == "raise":
            raise ToolError(REASON)
        return CallToolResult(content=[TextContent(type="text", text=_said())], is_error=True)

    @server.tool(name="repo.read", structured_output=False)
    def read(path: str) -> str:
        """Read one file."""
        return f"cannot read {path}"

    server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
