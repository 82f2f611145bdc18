"""Screenshot the HTML reports (pilot, full, blocked, controlled) in real headless Chromium (issue 17, item 4).

Usage: ``.venv/bin/python scripts/screenshot_reports.py OUTPUT_DIR [--ledger KIND=PATH ...] [--transport http|cli]
[--kinds pilot,full,blocked,controlled]``

Without ``--ledger`` each report is built for free in rehearsal, under a private temporary
directory: the bundled example study's pilot and full run against the scripted Messages API
server on 127.0.0.1 (``runners``' own loops; http by default, ``--transport cli`` runs the real
pinned Claude Code), a blocked run against a scripted server that answers every request with
HTTP 500, and the controlled example (``agentstudy run``, ``adjudicate``). ``--ledger
KIND=PATH`` takes an existing ledger for that kind instead. Each ledger is rendered with
``agentstudy report --format html`` and screenshotted at 1400 × 900 (the first screen) into
``OUTPUT_DIR/<kind>.png``, with the report beside it as ``OUTPUT_DIR/<kind>.html`` and a built
ledger as ``OUTPUT_DIR/<kind>-ledger.json`` (pass it back with ``--ledger`` to re-render only).

``OUTPUT_DIR`` must be new or empty (nothing is overwritten); bad arguments print one line and
exit 2. Chromium: the Debian package ``chromium`` (scripts/setup.sh installs it), run offline on
``file://`` pages only (see ``agentstudy.io.chromium``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

from agentstudy.io.chromium import ChromiumError, find_chromium, screenshot
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.schedule import Mode
from agentstudy.rehearsal.controlled.example import build_controlled_example
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.cli_request import CliRunRequest
from agentstudy.runners.demo import DEMO_ATTEMPT_BUDGET_USD, DEMO_CLI_VERSION, DEMO_MODEL, DEMO_PRICES
from agentstudy.runners.http_request import REHEARSAL_KEY, HttpRunRequest
from agentstudy.runners.minimal import run_cli_study
from agentstudy.runners.minimal_http import run_http_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings

KINDS = ("pilot", "full", "blocked", "controlled")
CAP_USD = Decimal("5")
AGENTSTUDY = Path(sys.executable).with_name("agentstudy")


def _fail(message: str) -> None:
    print(f"screenshot_reports: {message}", file=sys.stderr)
    sys.exit(2)


def _cli(*args: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    done = subprocess.run([str(AGENTSTUDY), *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"agentstudy {args[0]} exited {done.returncode}: {done.stderr.strip()[-400:]}")


def _minimal(scratch: Path, kind: str, transport: str) -> Path:
    """Run the example study's pilot or full schedule in rehearsal; ``blocked``: against a failing server."""
    study = build_example_study(scratch / kind / "study")
    output = scratch / kind / "ledger.json"
    mode: Mode = "pilot" if kind == "pilot" else "full"
    with RehearsalServer(fail_with_status=500 if kind == "blocked" else None) as server:
        if transport == "http":
            run_http_study(HttpRunRequest(
                loaded=load_manifest(study.manifest_path), mode=mode, roots=study.roots, output=output,
                model=DEMO_MODEL, prices=DEMO_PRICES, cap_usd=CAP_USD, api_key=REHEARSAL_KEY,
                base_url=server.base_url, mcp=DEFAULT_MCP_SERVER, rehearsal=True, parent_env=dict(os.environ)))
        else:
            from agentstudy.io.claude_cli import find_claude_binary

            run_cli_study(CliRunRequest(
                loaded=load_manifest(study.manifest_path), mode=mode, roots=study.roots, output=output,
                settings=CliSettings(binary=find_claude_binary(None, os.environ), model=DEMO_MODEL,
                                     mcp=DEFAULT_MCP_SERVER, rehearsal_base_url=server.base_url),
                cap_usd=CAP_USD, attempt_budget_usd=DEMO_ATTEMPT_BUDGET_USD, expected_cli_version=DEMO_CLI_VERSION,
                parent_env=dict(os.environ)))
    return output


def _controlled(scratch: Path) -> Path:
    """Run, then adjudicate, the controlled example study in rehearsal; the adjudicated ledger."""
    example = build_controlled_example(scratch / "controlled" / "study")
    ledger, adjudicated = scratch / "controlled" / "ledger.json", scratch / "controlled" / "adjudicated.json"
    _cli("run", str(example.plan), str(example.suite), "--providers", str(example.providers), "--repositories",
         str(example.repositories), "--ledger", str(ledger), "--round", "rehearsal-round-1")
    _cli("adjudicate", str(ledger), str(example.suite), "--adjudicator", str(example.providers), "--output",
         str(adjudicated))
    return adjudicated


def _arguments(argv: list[str]) -> tuple[Path, dict[str, Path], str, tuple[str, ...]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--ledger", action="append", default=[], metavar="KIND=PATH")
    parser.add_argument("--transport", choices=("http", "cli"), default="http")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of " + ", ".join(KINDS))
    args = parser.parse_args(argv)
    kinds = tuple(k for k in str(args.kinds).split(",") if k)
    if not kinds or any(k not in KINDS for k in kinds):
        _fail(f"--kinds wants a comma-separated subset of {', '.join(KINDS)}, got {args.kinds!r}")
    given: dict[str, Path] = {}
    for item in args.ledger:
        kind, _, path = item.partition("=")
        if kind not in KINDS or not path:
            _fail(f"--ledger wants KIND=PATH with KIND one of {', '.join(KINDS)}, got {item!r}")
        if not Path(path).is_file():
            _fail(f"--ledger {kind}: {path} is not a file")
        given[kind] = Path(path)
    out: Path = args.output_dir
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        _fail(f"{out} exists and is not an empty directory (nothing is overwritten)")
    return out, given, str(args.transport), kinds


def main(argv: list[str]) -> int:
    """Build or take the four ledgers, render and screenshot each; print one line per PNG. Exit 0, or 2."""
    out, given, transport, kinds = _arguments(argv)
    try:
        find_chromium()
    except ChromiumError as error:
        _fail(str(error))
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agentstudy-screens-") as temporary:
        scratch = Path(temporary)
        for kind in kinds:
            ledger = given.get(kind)
            if ledger is None:
                built = _controlled(scratch) if kind == "controlled" else _minimal(scratch, kind, transport)
                ledger = out / f"{kind}-ledger.json"
                shutil.copyfile(built, ledger)
            page = out / f"{kind}.html"
            _cli("report", str(ledger), "--format", "html", "--output", str(page))
            png = screenshot(page, out / f"{kind}.png")
            print(f"{kind}: {png} (from {ledger.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
