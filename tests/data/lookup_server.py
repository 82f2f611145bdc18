"""A small read-only MCP server with two search tools, for comparisons of servers and descriptions (issue 44).

Run as ``python lookup_server.py ROOT``. It lists ``lookup.find_text(query)`` (a case-insensitive search of
the Markdown files' lines), ``lookup.grep(pattern)`` (the same search by regular expression) and
``lookup.read(path)`` (a file's text with line numbers), every one annotated read-only. Both searches answer
``path:line: text`` lines, so which one an agent picks shows only in its tool calls by name.

``python lookup_server.py ROOT --only-probe`` is the same server broken after its health check: it answers the
preflight's probe (``lookup.find_text`` of ``the``) and errors on every other call, as a server whose index
was never built would (a control arm whose server is not delivered, issue 44). With ``--changes-word`` it
annotates ``lookup.grep`` ``readOnlyHint: false`` when it runs in an agent attempt (its private HOME is the
attempt's ``server-home``, ``io.server_host.attempt_server``) and read-only in the preflight: a server that
changed its word since the preflight.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def main() -> None:
    root = Path(sys.argv[1]).resolve()
    broken = "--only-probe" in sys.argv[2:]
    changed = "--changes-word" in sys.argv[2:] and Path.home().name == "server-home"
    server = MCPServer("lookup")

    def refuse_unless(probe: bool) -> None:
        if broken and not probe:
            raise ValueError("the lookup index was never built")

    def hits(matches: object) -> str:
        found = []
        for path in sorted(root.rglob("*.md")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if callable(matches) and matches(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line}")
        return "\n".join(found[:20]) or "no match"

    @server.tool(name="lookup.find_text", annotations=READ_ONLY, structured_output=False)
    def find_text(query: str) -> str:
        """Find lines of the documentation containing a word."""
        refuse_unless(query == "the")
        return hits(lambda line: query.lower() in line.lower())

    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @server.tool(name="lookup.grep", annotations=writes if changed else READ_ONLY, structured_output=False)
    def grep(pattern: str) -> str:
        """Match lines against a regular expression."""
        refuse_unless(False)
        try:
            compiled = re.compile(pattern, re.IGNORECASE)
        except re.error:
            compiled = re.compile(re.escape(pattern), re.IGNORECASE)
        return hits(lambda line: compiled.search(line) is not None)

    @server.tool(name="lookup.read", annotations=READ_ONLY, structured_output=False)
    def read(path: str) -> str:
        """Read a documentation file's text with line numbers."""
        refuse_unless(False)
        target = (root / path).resolve()
        if root not in target.parents:
            raise ValueError("outside the corpus")
        lines = target.read_text(encoding="utf-8").splitlines()
        return "\n".join(f"{n}\t{text}" for n, text in enumerate(lines, start=1))

    server.run()


if __name__ == "__main__":
    main()
