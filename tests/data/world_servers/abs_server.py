"""A stdio MCP server (official SDK) whose tools take absolute paths only and refuse anything else (issue 39).

Run as ``python abs_server.py ROOT``. ``search_files(directory, query)``: ``directory`` must be an
absolute path of a directory under ROOT (a relative path is refused naming ROOT, a path elsewhere answers
"Directory not found"); ``read_file(path)``: an absolute
path of a file under ROOT. Annotated read-only.
"""

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

ROOT = os.path.realpath(sys.argv[1])
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
server = MCPServer("abs-files")


def _inside(path: str) -> str:
    if not os.path.isabs(path):
        raise ToolError(f"path must be absolute: {path}; allowed directories: {ROOT}")
    real = os.path.realpath(path)
    if real != ROOT and not real.startswith(ROOT + os.sep):
        raise ToolError(f"Directory not found: {path}")
    return real


@server.tool(name="search_files", annotations=READ_ONLY, structured_output=False)
def search_files(directory: str, query: str) -> str:
    """Search the files under an absolute directory path for a word; answers their absolute paths."""
    base = _inside(directory)
    if not os.path.isdir(base):
        raise ToolError(f"Directory not found: {directory}")
    hits = []
    for top, _, names in os.walk(base):
        for name in names:
            path = os.path.join(top, name)
            with open(path, encoding="utf-8", errors="replace") as handle:
                if query.lower() in handle.read().lower():
                    hits.append(os.path.join(directory.rstrip("/"), os.path.relpath(path, base)))
    return "\n".join(hits) or "no match"


@server.tool(name="read_file", annotations=READ_ONLY, structured_output=False)
def read_file(path: str) -> str:
    """Read a file by its absolute path."""
    real = _inside(path)
    if not os.path.isfile(real):
        raise ToolError(f"File not found: {path}")
    with open(real, encoding="utf-8") as handle:
        return handle.read()


server.run()
