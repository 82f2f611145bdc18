"""The ``agentstudy`` command line (click): parse flags and environment, call a runner, print.

Exit codes: 0 the command did what it was asked (a run ended ``awaiting-adjudication``, a dry
run validated); 1 a run ended ``blocked`` or failed after it started (the ledger says why);
2 bad input or a run refused before anything was reserved (nothing written, nothing spent).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NoReturn

import click

from agentstudy.io.claude_cli import ClaudeBinaryError, find_claude_binary, project_root
from agentstudy.io.ledger_store import OutputPathError, resolve_output
from agentstudy.protocol.manifest import ManifestError, load_manifest
from agentstudy.protocol.schedule import Mode, build_schedule
from agentstudy.runners.minimal import CliRunRequest, run_cli_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER, PreflightError, check_corpus_roots
from agentstudy.runners.summary import RunSummary
from agentstudy.transports.cli import CliSettings

EXIT_OK, EXIT_BLOCKED, EXIT_INPUT = 0, 1, 2


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """Print one error line to stderr and exit with ``code``."""
    click.echo(f"agentstudy: error: {message}", err=True)
    sys.exit(code)


def positive_usd(name: str, raw: str | None) -> Decimal:
    """Parse a USD amount that must be finite and above zero; exit 2 otherwise."""
    if raw is None or not raw.strip():
        fail(f"{name} is required")
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        fail(f"{name} is not a number: {raw!r}")
    if not value.is_finite() or value <= 0:
        fail(f"{name} must be a finite amount above zero")
    return value


def parse_roots(values: tuple[str, ...]) -> dict[str, Path]:
    """``NAME=PATH`` pairs to absolute paths (later duplicates win); exit 2 on a malformed pair."""
    roots: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            fail(f"--root must be NAME=PATH, got {value!r}")
        roots[name] = Path(path).expanduser().resolve()
    return roots


def emit_summary(summary: RunSummary) -> int:
    """Print the one-line JSON summary to stdout; return the exit code of the run's status."""
    click.echo(json.dumps(summary.line, separators=(",", ":")))
    return EXIT_OK if summary.status == "awaiting-adjudication" else EXIT_BLOCKED


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentstudy")
def main() -> None:
    """Controlled, paired, budget-safe studies of coding agents.

    Every attempt's money is reserved before it can be spent, every transcript is checked
    for a broken setup before its answer counts, and every observation lands in a private
    crash-safe ledger. Start with `agentstudy demo` (zero spend).
    """


@main.command()
@click.option("--manifest", "manifest_path", type=click.Path(path_type=Path), required=True,
              help="The minimal-study-v1 manifest (JSON).")
@click.option("--dry-run", is_flag=True, help="Validate the matrix (and --root checkouts); start nothing.")
@click.option("--pilot", is_flag=True, help="Select the 2-attempt pilot (first task, one repetition).")
@click.option("--run", "full", is_flag=True, help="Select the full 36-attempt schedule.")
@click.option("--approve-budget", is_flag=True, help="Required to spend: you approve the cap.")
@click.option("--transport", type=click.Choice(["http", "cli"]), default="http", show_default=True,
              help="Messages API loop (http) or headless Claude Code (cli, the pilot transport).")
@click.option("--root", "roots", multiple=True, metavar="NAME=PATH",
              help="Clean checkout of a manifest repository at its pin (repeatable).")
@click.option("--output", type=click.Path(path_type=Path), help="New private ledger file (never overwritten).")
@click.option("--model", envvar="STUDY_MODEL", help="Model id. [env: STUDY_MODEL]")
@click.option("--budget-usd", envvar="STUDY_BUDGET_USD", help="Cumulative cap in USD. [env: STUDY_BUDGET_USD]")
@click.option("--claude-bin", help="Claude Code executable (default: AGENTSTUDY_CLAUDE_BIN, pinned install, PATH).")
@click.option("--attempt-budget-usd", default="0.10", show_default=True, help="Per-attempt limit in USD (cli).")
@click.option("--cli-version", default="2.1.296", show_default=True, help="Expected `claude --version` (cli).")
def minimal(
    manifest_path: Path,
    dry_run: bool,
    pilot: bool,
    full: bool,
    approve_budget: bool,
    transport: str,
    roots: tuple[str, ...],
    output: Path | None,
    model: str | None,
    budget_usd: str | None,
    claude_bin: str | None,
    attempt_budget_usd: str,
    cli_version: str,
) -> None:
    """Run the minimal paired study (seed: minimal study runner v1).

    --dry-run validates the manifest and prints the schedule's counts without starting any
    process or opening any socket (with --root it also checks the checkouts with local git).
    """
    try:
        loaded = load_manifest(manifest_path)
    except ManifestError as error:
        fail(str(error))
    if pilot and full:
        fail("--pilot and --run are mutually exclusive")
    root_paths = parse_roots(roots)
    mode: Mode = "pilot" if pilot else "full"
    schedule = build_schedule(loaded.manifest, mode)
    if dry_run:
        try:
            checked = check_corpus_roots(loaded.manifest, root_paths)
        except PreflightError as error:
            fail(str(error))
        report: dict[str, Any] = {
            "protocolHash": loaded.protocol_hash,
            "mode": mode,
            "attempts": len(schedule),
            "scenarios": {s: sum(e.scenario == s for e in schedule) for s in loaded.manifest.scenarios},
            "transport": transport,
            "repositoriesChecked": checked,
            "networkCalls": 0,
            "claudeProcesses": 0,
        }
        click.echo(json.dumps(report, separators=(",", ":")))
        return
    if not (pilot or full):
        fail("choose --pilot or --run (or --dry-run)")
    if not approve_budget:
        fail("--approve-budget is required to run a paid study")
    if not model or not model.strip() or any(c in model for c in "\r\n\0"):
        fail("a model is required (STUDY_MODEL or --model)")
    cap = positive_usd("the cumulative cap (STUDY_BUDGET_USD or --budget-usd)", budget_usd)
    if output is None:
        fail("--output FILE is required")
    if transport == "http":
        fail("the http transport is not implemented yet; use --transport cli")
    limit = positive_usd("--attempt-budget-usd", attempt_budget_usd)
    try:
        resolve_output(output, (*root_paths.values(), project_root()))
        binary = find_claude_binary(claude_bin, os.environ)
    except (OutputPathError, ClaudeBinaryError) as error:
        fail(str(error))
    request = CliRunRequest(
        loaded=loaded,
        mode=mode,
        roots=root_paths,
        output=output,
        settings=CliSettings(binary=binary, model=model.strip(), mcp=DEFAULT_MCP_SERVER),
        cap_usd=cap,
        attempt_budget_usd=limit,
        expected_cli_version=cli_version,
        parent_env=dict(os.environ),
        forbidden_output_roots=(project_root(),),
        progress=lambda line: click.echo(line, err=True),
    )
    sys.exit(_run(request))


def _run(request: CliRunRequest) -> int:
    try:
        summary = run_cli_study(request)
    except (PreflightError, OutputPathError) as error:
        fail(f"run refused, nothing reserved: {error}")
    except Exception:
        fail("the run stopped on an internal error; see the ledger, do not retry without a budget review",
             EXIT_BLOCKED)
    return emit_summary(summary)


@main.command()
@click.option("--output-dir", type=click.Path(path_type=Path),
              help="Directory for the example corpora and ledger.json (default: a new private temp dir).")
@click.option("--claude-bin", help="Claude Code executable (default: AGENTSTUDY_CLAUDE_BIN, pinned install, PATH).")
def demo(output_dir: Path | None, claude_bin: str | None) -> None:
    """Run the pilot of the bundled example study for free.

    The real Claude Code binary runs against a scripted Messages API server on 127.0.0.1 and
    the bundled read-only MCP server; no credential is used and nothing is spent.
    """
    from agentstudy.runners.demo import run_demo

    try:
        binary = find_claude_binary(claude_bin, os.environ)
    except ClaudeBinaryError as error:
        fail(str(error))
    if output_dir is None:
        directory = Path(tempfile.mkdtemp(prefix="agentstudy-demo-"))
    else:
        directory = output_dir.expanduser().resolve()
        if directory.exists() and any(directory.iterdir()):
            fail(f"--output-dir {directory} is not empty")
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    click.echo(f"demo directory: {directory}", err=True)
    try:
        summary = run_demo(directory, binary, progress=lambda line: click.echo(line, err=True))
    except (PreflightError, OutputPathError) as error:
        fail(f"demo refused: {error}")
    for text in summary_table(summary):
        click.echo(text, err=True)
    sys.exit(emit_summary(summary))


def summary_table(summary: RunSummary) -> list[str]:
    """A short human-readable summary (stderr) of a run."""
    line = summary.line
    return [
        f"run status: {line['status']} ({line['attempts']}/{line['plannedAttempts']} attempts)",
        f"by status: {line['byStatus']}  by scenario: {line['byScenario']}",
        f"tokens: input {line['inputTokens']}, output {line['outputTokens']}; tool calls {line['toolCalls']}",
        f"charged (rehearsal, no real money): {line['spentUsd']:.6f} USD of cap {line['capUsd']:.2f} USD",
        f"ledger: {line['ledger']}",
    ]
