"""A stdio MCP server (official SDK, low-level) listing many tools, or tools with hostile names.

Run as ``python many_tools_server.py COUNT [NAME…]``. It lists ``notes.search(query)``, annotated
read-only, plus COUNT tools ``other.tool_NNNNN`` (no annotations, so they are denied) and every extra
NAME given (a name with U+202E or a newline, or the empty name; annotated read-only).
Every call answers ``no match``.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}}
READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False)


def main() -> int:
    count = int(sys.argv[1])
    extra = sys.argv[2:]
    tools = [types.Tool(name="notes.search", description="Search the notes for a term.", input_schema=SCHEMA,
                        annotations=READ_ONLY)]
    tools += [types.Tool(name=f"other.tool_{i:05d}", description="Another tool.", input_schema=SCHEMA)
              for i in range(count)]
    tools += [types.Tool(name=name, description="A tool with an odd name.", input_schema=SCHEMA,
                         annotations=READ_ONLY) for name in extra]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="no match")])

    server = Server("many", on_list_tools=list_tools, on_call_tool=call_tool)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
    return 0


if __name__ == "__main__":
    sys.exit(main())
