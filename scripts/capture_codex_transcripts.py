"""Capture real Codex CLI 0.171.0 ``exec --json`` transcripts for each setup rule (issue 21).

Runs the pinned binary (.tools/codex) against the scripted Responses API server
(``rehearsal.responses_server``) and the bundled MCP server, once per scenario
(``rehearsal.codex_run``), and writes the sanitised stream (machine paths replaced by
``<repo>``, ``<home>``, ``<python>`` ...) to ``tests/transcripts/codex-0.171.0/<scenario>.jsonl``,
its exit code to ``<scenario>.exit`` and its ``Error:`` stderr lines, if any, to
``<scenario>.stderr``. Re-run: ``.venv/bin/python scripts/capture_codex_transcripts.py
[--out DIR] [SCENARIO ...]``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentstudy.rehearsal.codex_run import run_codex_rehearsal
from agentstudy.rehearsal.responses_server import responses_policy
from agentstudy.rehearsal.responses_variants import erroring_calls, first_call
from agentstudy.transports.codex_args import CodexMcpServer

ROOT = Path(__file__).resolve().parent.parent
CODEX = ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
SCRATCH = ROOT / ".codex-scratch" / "capture"  # not under /tmp: see rehearsal.codex_run
PIN = "0" * 40
PROMPT = "What does the frobnicate flag enable? Cite the file and line."
FILES = {"README.md": "# Widgets\n\nSome intro text.\n\nThe frobnicate flag enables the widget cache.\n"}
READ_TOOLS = ("doc.search", "doc.get")


def bundled_server(tools: tuple[str, ...] = READ_TOOLS, *, broken: bool = False) -> Callable[[Path], CodexMcpServer]:
    """The bundled doc-bridge server over the run's repository (``broken``: a missing root, so it exits 2)."""
    def build(repo: Path) -> CodexMcpServer:
        root = repo.parent / "missing" if broken else repo
        command = (sys.executable, "-I", "-m", "agentstudy.rehearsal.mcp_server", "--root", str(root), "--pin", PIN)
        return CodexMcpServer("doc-bridge", command, {}, tools)
    return build


SCENARIOS: dict[str, dict[str, Any]] = {
    "control-completed": {},
    "treatment-completed": {"mcp": bundled_server()},
    "treatment-required-server-fails": {"mcp": bundled_server(broken=True)},
    "treatment-cancelled-call": {
        "mcp": bundled_server(("doc.write",)),
        "policy": first_call("mcp__doc_bridge__doc_write", {"path": "NOTES.md", "text": "x"},
                             "I will try the write tool.")},
    "treatment-all-calls-error": {"mcp": bundled_server(), "policy": erroring_calls},
    "turn-failed": {"fail_with_status": 400},
    "control-write-refused": {"policy": first_call("Bash", {"command": "touch NOTES.md"}, "I will write a note.")},
}


def sanitise(text: str, replacements: Mapping[str, str]) -> str:
    """Replace every machine path (longest first) by its placeholder, and any other /tmp path by ``<tmp>``."""
    for path, placeholder in sorted(replacements.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(path, placeholder)
    return re.sub(r"/tmp/[A-Za-z0-9_.-]+", "<tmp>", text)  # noqa: S108 - a pattern, not a file


def capture(name: str, out: Path) -> Path:
    """Run scenario ``name`` and write its three files into ``out``; returns the ``.jsonl`` path."""
    spec = SCENARIOS[name]
    run = run_codex_rehearsal(CODEX, scratch=SCRATCH, files=FILES, prompt=PROMPT, parent_env=os.environ,
                              mcp=spec.get("mcp", lambda _repo: None), policy=spec.get("policy", responses_policy),
                              fail_with_status=spec.get("fail_with_status"))
    replacements = {**run.paths, sys.executable: "<python>", str(ROOT): "<project>"}
    target = out / f"{name}.jsonl"
    target.write_text(sanitise(run.stdout, replacements))
    (out / f"{name}.exit").write_text(f"{run.exit_code}\n")
    errors = [line for line in sanitise(run.stderr, replacements).splitlines() if line.startswith("Error:")]
    stderr_file = out / f"{name}.stderr"
    if errors:
        stderr_file.write_text("".join(f"{line}\n" for line in errors))
    elif stderr_file.exists():
        stderr_file.unlink()
    return target


def main() -> int:
    """Capture the named scenarios (default: all) and print each transcript's path."""
    parser = argparse.ArgumentParser(description="Capture real Codex 0.171.0 transcripts (issue 21).")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "transcripts" / "codex-0.171.0")
    parser.add_argument("scenario", nargs="*", help=f"default: all of {', '.join(SCENARIOS)}")
    args = parser.parse_args()
    unknown = [name for name in args.scenario if name not in SCENARIOS]
    if unknown:
        parser.exit(2, f"unknown scenario {unknown[0]!r}\n")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.scenario or SCENARIOS:
        print(capture(name, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
