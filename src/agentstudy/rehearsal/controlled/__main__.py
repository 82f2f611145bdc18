"""``python -m agentstudy.rehearsal.controlled DEST [--pairwise]``: build the example controlled study in DEST.

Prints the ``agentstudy run`` command lines that run it: with the scripted provider
(``providers.json``), then with the real Codex, Claude Code and Gemini CLI binaries through the bundled
adapters in rehearsal (``providers-codex.json``, ``providers-claude-code.json``, ``providers-gemini.json``;
zero spend).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from agentstudy.rehearsal.controlled.example import build_controlled_example


def main(argv: list[str] | None = None) -> int:
    """Build the example; exit 2 when a target already exists."""
    parser = argparse.ArgumentParser(prog="python -m agentstudy.rehearsal.controlled")
    parser.add_argument("dest", type=Path, help="folder to build in (its targets must not exist)")
    parser.add_argument("--pairwise", action="store_true", help="repository-only vs deterministic-doc-bridge, 24 runs")
    options = parser.parse_args(argv)
    try:
        built = build_controlled_example(options.dest, pairwise=options.pairwise)
    except (FileExistsError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    dest = options.dest.resolve()
    runs = [(built.providers, dest / "ledger.json")]
    runs += [(path, dest / f"ledger-{agent}.json") for agent, path in built.agent_providers.items()]
    for providers, ledger in runs:
        print(shlex.join(["agentstudy", "run", str(built.plan), str(built.suite), "--providers", str(providers),
                          "--repositories", str(built.repositories), "--ledger", str(ledger)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
