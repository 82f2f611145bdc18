"""Example read-only MCP server ``doc-bridge`` over stdio, for rehearsals of the doc-bridge arm.

Run as ``python -I -m agentstudy.rehearsal.mcp_server --root DIR --pin SHA [--log FILE]``.
``DIR`` is the read-only snapshot of the pinned corpus that agentstudy hands every MCP server
under study as ``{root}`` (issue 15): the same filtered tree as the agent's export. The server
lists it once at start-up and serves only the files that pass the shared public-path filter
(``protocol.corpus_filter``: regular files, not symlinks, at most 200,000 bytes) — so the
answer key, dotfiles and build output are never served, whatever directory it is given.
A missing directory or a malformed pin makes the process exit with status 2 and a message on
stderr before MCP starts.

Tools (all results are plain text blocks; failures are ``isError`` results). Read tools are
annotated ``readOnlyHint: true``; ``doc.write`` is annotated ``destructiveHint: true`` so that
preflight refuses a study that names it:

- ``doc.search(query)``: case-insensitive substring search over Markdown and code files;
  one hit per line ``path:line: text``, at most 20 hits, or ``no matches``.
- ``doc.get(path, start=1, lines=100)``: lines rendered ``N\\ttext`` joined by ``\\n``.
- ``handoff.resolve(handoff_id)``: looks the id up in Markdown table rows ``| H-n | owner | topic |``;
  ``H-n | owner: O | topic: T | source: path:line``, or ``unknown handoff: H-n``.
- ``doc.write(path, text)``: mutating by contract, but always refuses; nothing is ever written.

With ``--log FILE`` each call appends one JSON line ``{"tool": name, "arguments": {...}}``.

Start-up (issue 19): arguments and the corpus are checked with the standard library alone
(``snapshot_corpus``); only then is the SDK imported (``doc_bridge_tools``), with Python's cyclic
garbage collector paused while its ~550 pydantic models are built: nothing collectable is made
then, and collections during that import were about a quarter of its CPU time. Before that import
every pydantic model of this process is made to defer its validator (pydantic's ``defer_build``
config, set on ``BaseModel``): a model's schema is built when it is first used, so the few
hundred models a doc-bridge session never touches are never built. Measured on a whole session
(initialize, tools/list, two calls) on an idle core: 2.15 -> 1.78 CPU-s (session 5).
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from pathlib import Path

from agentstudy.rehearsal.snapshot_corpus import CorpusError, SnapshotCorpus

__all__ = ["main"]


def _serve(corpus: SnapshotCorpus, log_path: Path | None) -> None:
    """Import the SDK (models deferred, collector paused), then serve ``corpus`` over stdio until stdin closes."""
    import pydantic

    pydantic.BaseModel.model_config["defer_build"] = True  # this process only: see the module docstring
    gc.disable()
    try:
        from agentstudy.rehearsal.doc_bridge_tools import build_server  # deferred on purpose (see above)
    finally:
        gc.enable()
    build_server(corpus, log_path).run("stdio")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, open the pinned corpus and serve MCP over stdio.

    Returns 0 after a normal shutdown; returns 2 (message on stderr) when the repository, the
    pin or the log file cannot be used.
    """
    parser = argparse.ArgumentParser(
        prog="python -m agentstudy.rehearsal.mcp_server",
        description="Read-only doc-bridge MCP server (stdio).",
    )
    parser.add_argument("--root", required=True, type=Path, help="corpus snapshot directory to serve ({root})")
    parser.add_argument("--pin", required=True, help="the snapshot's 40-hex commit")
    parser.add_argument("--log", type=Path, default=None, help="append one JSON line per tool call")
    args = parser.parse_args(argv)
    try:
        corpus = SnapshotCorpus(args.root, args.pin)
        if args.log is not None:
            args.log.open("a", encoding="utf-8").close()
    except (CorpusError, OSError) as exc:
        print(f"doc-bridge: refusing to start: {exc}", file=sys.stderr)
        return 2
    _serve(corpus, args.log)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
