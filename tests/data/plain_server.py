"""A small MCP server that annotates almost nothing, as many real servers do (official SDK, stdio).

Run as ``python plain_server.py ROOT``. It lists:

- ``read_directory(path)`` and ``search_text(query, path)``: no annotations; both refuse a path
  that is not absolute ("Error: Path must be absolute"), and one outside ROOT;
- ``build_index()``: no annotations (a preparation-like tool; it writes nothing);
- ``clone_remote(url)``: annotated ``readOnlyHint: true, openWorldHint: true`` (it would fetch
  from the network; here it only answers).
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations


def main() -> int:
    root = os.path.realpath(sys.argv[1])
    server = MCPServer("plain")

    def checked(path: str) -> str:
        if not os.path.isabs(path):
            raise ToolError("Error: Path must be absolute")
        real = os.path.realpath(path)
        if real != root and not real.startswith(root + os.sep):
            raise ToolError(f"Error: {path} is outside the allowed directory")
        return real

    @server.tool(name="read_directory", structured_output=False)
    def read_directory(path: str) -> str:
        """List the entries of a directory. The path must be absolute."""
        return "\n".join(sorted(os.listdir(checked(path))))

    @server.tool(name="search_text", structured_output=False)
    def search_text(query: str, path: str) -> str:
        """Search the text files under an absolute directory path for a query."""
        hits = []
        for folder, _, files in os.walk(checked(path)):
            for name in sorted(files):
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                    for number, line in enumerate(handle, 1):
                        if query.lower() in line.lower():
                            hits.append(f"{os.path.relpath(os.path.join(folder, name), root)}:{number}: {line.strip()}")
        return "\n".join(hits) or f"no match for {query}"

    @server.tool(name="build_index", structured_output=False)
    def build_index() -> str:
        """Build the search index into the server's cache."""
        return "index built"

    @server.tool(name="clone_remote", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
                 structured_output=False)
    def clone_remote(url: str) -> str:
        """Clone a remote repository over the network and read it."""
        return f"would clone {url}"

    server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
