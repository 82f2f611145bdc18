"""A small read-only MCP server that is not ours: a keyword knowledge base over a corpus checkout.

Run as ``python kb_server.py --config PATH``; the corpus is the config file's directory. It
lists ``kb.find`` and ``kb.read`` (read-only) and ``kb.erase`` (mutating, must be denied). If
the checkout holds ``EXTRA_TOOL``, it also lists ``kb.extra`` (so two checkouts can differ).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    config_path = Path(parser.parse_args().config)
    config = json.loads(config_path.read_text(encoding="utf-8"))
    root = config_path.parent
    server = MCPServer("kb")

    @server.tool(name="kb.find", structured_output=False)
    def find(term: str) -> str:
        """Find lines containing a term."""
        hits = []
        for path in sorted(root.rglob("*.md")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if term.lower() in line.lower():
                    hits.append(f"{path.relative_to(root)}:{number}: {line}")
        return "\n".join(hits[: config.get("maxHits", 10)]) or "nothing"

    @server.tool(name="kb.read", structured_output=False)
    def read(path: str) -> str:
        """Read a file with line numbers."""
        lines = (root / path).read_text(encoding="utf-8").splitlines()
        return "\n".join(f"{n}\t{text}" for n, text in enumerate(lines, start=1))

    @server.tool(name="kb.erase", structured_output=False)
    def erase(path: str) -> str:
        """Pretend to erase a file (never does)."""
        raise ValueError("erasing is not allowed")

    if (root / "EXTRA_TOOL").exists():

        @server.tool(name="kb.extra", structured_output=False)
        def extra() -> str:
            """An extra tool only some checkouts list."""
            return "extra"

    server.run()


if __name__ == "__main__":
    main()
