"""``agentstudy demo``: the pilot of the bundled example study, zero spend (real Claude Code or the http loop)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from agentstudy.agents.registry import AGENT_NAMES, DEFAULT_AGENT
from agentstudy.commands.common import EXIT_BLOCKED, emit_summary, fail, stops_on_signals
from agentstudy.commands.containment_options import containment_option


@click.command()
@click.option("--output-dir", type=click.Path(path_type=Path),
              help="Directory for the example corpora and ledger.json (default: a new private temp dir).")
@click.option("--transport", type=click.Choice(["cli", "http"]), default="cli", show_default=True,
              help="The agent: real headless Claude Code (cli) or the Messages API loop (http).")
@click.option("--claude-bin", help="Claude Code executable (default: AGENTSTUDY_CLAUDE_BIN, pinned install, PATH).")
@click.option("--agent", type=click.Choice(AGENT_NAMES), default=DEFAULT_AGENT, show_default=True,
              help="The cli agent: Claude Code against the scripted Messages server, the Codex CLI "
                   "against the scripted Responses server, or Gemini CLI against the scripted Gemini API.")
@click.option("--agent-bin", help="The agent's executable (default: AGENTSTUDY_CLAUDE_BIN / AGENTSTUDY_CODEX_BIN / "
                                  "AGENTSTUDY_GEMINI_BIN, the pinned install, PATH).")
@click.option("--agent-version", help="The agent's expected version (default: its pin, 2.1.296 / 0.171.0 / "
                                      "0.61.0); the demo refuses another binary before it starts.")
@click.option("--adjudicate", is_flag=True,
              help="Then adjudicate the pilot blind with the same agent against a scripted adjudicator (zero spend).")
@click.option("--rehearsal-latency-ms", type=click.IntRange(0, 600_000), default=0, show_default=True,
              help="The scripted server answers every request after this many ms.")
@click.option("--rehearsal-faults", metavar="SPEC",
              help="The scripted server refuses requests on schedule, e.g. '1:429,30%:529,seed=7' (docs/real-api.md).")
@containment_option
@stops_on_signals
def demo(output_dir: Path | None, transport: str, claude_bin: str | None, agent: str, agent_bin: str | None,
         agent_version: str | None, adjudicate: bool, rehearsal_latency_ms: int, rehearsal_faults: str | None,
         containment: str) -> None:
    """Run the pilot of the bundled example study for free.

    The agent (the real Claude Code binary, or with --transport http the Messages API loop)
    talks to a scripted Messages API server on 127.0.0.1 and uses the bundled read-only MCP
    server; no credential is used and nothing is spent. It ends by writing report.html and
    report.md beside ledger.json (with --adjudicate, after a blind adjudication whose companion
    is ledger.adjudication.json).
    """
    from agentstudy.commands.agent_options import agent_binary, agent_flags
    from agentstudy.commands.containment_options import containment_mode
    from agentstudy.commands.run_options import checked_faults
    from agentstudy.commands.view import print_summary_table, progress_for_terminal
    from agentstudy.io.ledger_store import CheckpointError, OutputPathError
    from agentstudy.protocol.arm_names import namer
    from agentstudy.runners.demo import run_demo, run_http_demo
    from agentstudy.runners.preflight import DEFAULT_MCP_SERVER, PreflightError
    from agentstudy.runners.summary import REHEARSAL_NOTE

    faults = checked_faults(rehearsal_faults, None, True)
    chosen, version, explicit = agent_flags(transport, agent, agent_version, None, agent_bin, claude_bin, False)
    if agent_version is not None and transport != "cli":
        fail("--agent-version is the cli agent's; the http demo starts no agent binary")
    binary: Path | None = None
    agent_binary_path: Path | None = None
    if transport == "cli" or adjudicate:
        agent_binary_path = agent_binary(chosen, explicit)
        binary = agent_binary_path if adjudicate else None
    if output_dir is None:
        directory = Path(tempfile.mkdtemp(prefix="agentstudy-demo-"))
    else:
        directory = output_dir.expanduser().resolve()
        if directory.exists() and any(directory.iterdir()):
            fail(f"--output-dir {directory} is not empty")
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    click.echo(f"demo directory: {directory}", err=True)
    progress = progress_for_terminal(namer(server=DEFAULT_MCP_SERVER.name))  # the bundled server
    mode = containment_mode(containment)
    try:
        if transport == "http":
            summary = run_http_demo(directory, progress=progress, containment=mode, latency_ms=rehearsal_latency_ms,
                                    faults=faults)
        else:
            assert agent_binary_path is not None
            summary = run_demo(directory, agent_binary_path, progress=progress, containment=mode,
                               latency_ms=rehearsal_latency_ms, agent=chosen.name, faults=faults, version=version)
    except (PreflightError, OutputPathError) as error:
        fail(f"demo refused: {error}")
    except CheckpointError as error:
        fail(f"the demo stopped because a checkpoint failed: {error}", EXIT_BLOCKED)
    print_summary_table(summary)
    from agentstudy.adjudication.demo import run_demo_adjudication  # after the run: its first byte comes sooner
    from agentstudy.commands.adjudicate import print_adjudication_table
    from agentstudy.report.demo import write_demo_reports

    companion = None
    if adjudicate and binary is not None and summary.status == "awaiting-adjudication":
        adjudication = run_demo_adjudication(directory, binary, summary.ledger, containment=mode,
                                             cli_version=version, agent=chosen.name)
        print_adjudication_table(adjudication, note=REHEARSAL_NOTE)
        companion = adjudication.companion
    for path in write_demo_reports(directory, summary.ledger, companion):
        click.echo(f"report: {path}", err=True)
    sys.exit(emit_summary(summary))
