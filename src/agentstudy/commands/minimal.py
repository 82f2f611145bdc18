"""``agentstudy minimal``: the minimal paired study runner (seed 000)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from agentstudy.commands.common import EXIT_BLOCKED, emit_summary, fail, parse_roots, positive_usd
from agentstudy.commands.mcp_options import mcp_options, mcp_spec_from_options
from agentstudy.commands.view import print_summary_table, progress_for_terminal
from agentstudy.io.claude_cli import ClaudeBinaryError, find_claude_binary, project_root
from agentstudy.io.ledger_store import OutputPathError, resolve_output
from agentstudy.protocol.manifest import ManifestError, load_manifest
from agentstudy.protocol.schedule import Mode, build_schedule
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.minimal import CliRunRequest, run_cli_study
from agentstudy.runners.preflight import PreflightError, check_corpus_roots
from agentstudy.transports.cli import CliSettings


@click.command()
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
@click.option("--rehearsal", is_flag=True,
              help="Rehearse for free: the agent talks to a scripted Messages API server on 127.0.0.1 with a "
                   "dummy token; the ledger says rehearsal. --approve-budget is not needed.")
@mcp_options
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
    rehearsal: bool,
    mcp_config_file: Path | None,
    server_config_candidates: str,
    mcp_tools: str,
    mcp_probe: str,
    mcp_probe_arguments: str,
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
    if not approve_budget and not rehearsal:
        fail("--approve-budget is required to run a paid study (or --rehearsal to rehearse it for free)")
    if not model or not model.strip() or any(c in model for c in "\r\n\0"):
        fail("a model is required (STUDY_MODEL or --model)")
    cap = positive_usd("the cumulative cap (STUDY_BUDGET_USD or --budget-usd)", budget_usd)
    if output is None:
        fail("--output FILE is required")
    if transport == "http":
        fail("the http transport is not implemented yet; use --transport cli")
    limit = positive_usd("--attempt-budget-usd", attempt_budget_usd)
    spec = mcp_spec_from_options(
        mcp_config_file, server_config_candidates, mcp_tools, mcp_probe, mcp_probe_arguments
    )
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
        settings=CliSettings(binary=binary, model=model.strip(), mcp=spec),
        cap_usd=cap,
        attempt_budget_usd=limit,
        expected_cli_version=cli_version,
        parent_env=dict(os.environ),
        forbidden_output_roots=(project_root(),),
        progress=progress_for_terminal(),
    )
    if not rehearsal:
        sys.exit(_run(request))
    with RehearsalServer() as server:
        settings = replace(request.settings, rehearsal_base_url=server.base_url, private_home=True)
        code = _run(replace(request, settings=settings))
    sys.exit(code)


def _run(request: CliRunRequest) -> int:
    try:
        summary = run_cli_study(request)
    except (PreflightError, OutputPathError) as error:
        fail(f"run refused, nothing reserved: {error}")
    except Exception:
        fail("the run stopped on an internal error; see the ledger, do not retry without a budget review",
             EXIT_BLOCKED)
    print_summary_table(summary)
    return emit_summary(summary)


