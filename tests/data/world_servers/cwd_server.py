"""A stdio MCP server (official SDK) that works from its working directory and takes no ``{root}`` (issue 39).

``search_docs(query)`` names the files under the working directory whose text holds the query;
``read_doc(path)`` returns one of them (a path relative to the working directory). Annotated read-only.
"""

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
server = MCPServer("cwd-docs")


def _files() -> list[str]:
    root = os.getcwd()
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@server.tool(name="search_docs", annotations=READ_ONLY, structured_output=False)
def search_docs(query: str) -> str:
    """Search the project's files (in the working directory) for a word; answers matching relative paths."""
    hits = []
    for rel in _files():
        with open(rel, encoding="utf-8", errors="replace") as handle:
            if query.lower() in handle.read().lower():
                hits.append(rel)
    return "\n".join(hits) or "no match"


@server.tool(name="read_doc", annotations=READ_ONLY, structured_output=False)
def read_doc(path: str) -> str:
    """Read one file of the project by its path relative to the working directory."""
    if path not in _files():
        raise ToolError(f"no such file: {path}")
    with open(path, encoding="utf-8") as handle:
        return handle.read()


server.run()
