"""``agentstudy adjudicate LEDGER``: blind agent adjudication of a finished study run into a companion file.

One command for every ledger kind, dispatching on the ledger's ``type``: a minimal-study ledger
(no ``type``, version ``minimal-study-v1``) is adjudicated; a controlled-study ledger
(``controlled-study-observation-ledger``) goes to the controlled runner's adjudicator (SUITE,
``--adjudicator``, ``--output``; the same as ``agentstudy adjudicate-controlled``). The ledger
is never modified. Several minimal-study ledgers are a chain of runs (``adjudicate A.json B.json``, B
continuing A with ``--continue-from``): each link is verified, then each run's completed attempts are
blinded and scored into a companion beside its ledger, under one cap. Exit codes: 0 every completed
observation scored (``adjudicated``); 1 some
item stayed pending (``awaiting-adjudication``, the companion says why); 2 bad input or refused
before anything was reserved or written; 128 + n stopped by signal n (the companion names it).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentstudy.agents.registry import AGENT_NAMES, DEFAULT_AGENT
from agentstudy.commands.common import (
    EXIT_BLOCKED,
    EXIT_OK,
    attempt_limit,
    check_new_output,
    fail,
    parse_roots,
    positive_usd,
    stops_on_signals,
)
from agentstudy.commands.containment_options import containment_option
from agentstudy.commands.run_options import concurrency_option, executor_options, partial_chain_option

if TYPE_CHECKING:
    from rich.console import Console

    from agentstudy.adjudication.companion import AdjudicationSummary
    from agentstudy.adjudication.run import AdjudicationRequest


class ConsoleAdjudicationProgress:
    """One stderr line per item started and settled: opaque item id, status, charge and spend."""

    def __init__(self, console: Console) -> None:
        self._console = console

    def item_started(self, index: int, total: int, item_id: str) -> None:
        """Announce the item (its reservation is on disk)."""
        self._console.print(f"[bold][{index}/{total}][/bold] {item_id} adjudicating…", highlight=False)

    def item_settled(
        self, index: int, total: int, item_id: str, status: str, charged_usd: Decimal, spent_usd: Decimal,
        cap_usd: Decimal,
    ) -> None:
        """Report the settled item."""
        from agentstudy.pricing.sums import display_usd
        colour = "green" if status == "scored" else "red"
        self._console.print(
            f"[bold][{index}/{total}][/bold] {item_id} [{colour}]{status}[/{colour}], "
            f"charged {display_usd(charged_usd)} USD; "
            f"spent {display_usd(spent_usd)} of {display_usd(cap_usd, places=2)} USD",
            highlight=False,
        )


def print_adjudication_table(summary: AdjudicationSummary, note: str = "") -> None:
    """Print an adjudication summary as a small table on stderr (never an answer)."""
    from rich.console import Console
    from rich.table import Table

    from agentstudy.pricing.sums import display_usd, usd_from_json
    line = summary.line
    table = Table(title=f"adjudication {line['status']}" + (f" ({note})" if note else ""), show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    scored = f"{line['scored']} scored, {line['pending']} pending"
    table.add_row("items", f"{line['items']} completed observations, {scored}")
    table.add_row("missing", f"{line['missing']} observations that did not complete (never scored)")
    table.add_row("by rubric", ", ".join(f"{k}: {v}" for k, v in line["byRubric"].items()) or "none")
    spent, cap = usd_from_json(line["spentUsd"]), usd_from_json(line["capUsd"])
    table.add_row("spent", f"{display_usd(spent)} USD of a {display_usd(cap, places=2)} USD cap")
    table.add_row("review", line["note"])
    table.add_row("companion", line["companion"])
    Console(stderr=True).print(table)


@click.command()
@click.argument("paths", metavar="LEDGER... [SUITE]", nargs=-1, required=True,
                type=click.Path(path_type=Path, dir_okay=False))
@click.option("--manifest", "manifest_path", type=click.Path(path_type=Path),
              help="Minimal study: the manifest the run used (questions, expected propositions, sources).")
@click.option("--adjudicator", "adjudicator_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Controlled study: provider CLI config whose `adjudicator` entry names the adjudicator.")
@click.option("--run-id", help="Controlled study: adjudicate only observations of this run id.")
@click.option("--offset", "controlled_offset", type=click.IntRange(min=0), default=0,
              help="Controlled study: skip this many.")
@click.option("--limit", "controlled_limit", type=click.IntRange(min=1),
              help="Controlled study: adjudicate at most this many.")
@click.option("--text/--json", "as_text", default=True, help="Controlled study: summary as text or JSON.")
@click.option("--root", "roots", multiple=True, metavar="NAME=PATH",
              help="Top level of a clean checkout of a manifest repository at its pin (repeatable).")
@click.option("--output", type=click.Path(path_type=Path),
              help="New companion file (default: LEDGER with .json replaced by .adjudication.json).")
@click.option("--model", envvar="ADJUDICATOR_MODEL", help="Adjudicator model id. [env: ADJUDICATOR_MODEL]")
@click.option("--budget-usd", envvar="ADJUDICATOR_BUDGET_USD",
              help="The adjudication's own cumulative cap in USD. [env: ADJUDICATOR_BUDGET_USD]")
@click.option("--item-budget-usd", default="0.10", show_default=True, help="Per-item limit in USD.")
@click.option("--approve-budget", is_flag=True, help="Required to spend: you approve the cap.")
@click.option("--rehearsal", is_flag=True,
              help="Rehearse for free against a scripted key-term adjudicator on 127.0.0.1 (dummy token).")
@click.option("--transport", type=click.Choice(["cli", "http"]), default="cli", show_default=True,
              help="A headless agent CLI (cli) or the Messages API (http, not implemented yet).")
@click.option("--agent", type=click.Choice(AGENT_NAMES), default=DEFAULT_AGENT, show_default=True,
              help="The adjudicator agent: Claude Code, the Codex CLI or Gemini CLI, contained and credentialed "
                   "as a study attempt (with --rehearsal, against its own scripted server).")
@click.option("--agent-bin", help="The adjudicator agent's executable (default: AGENTSTUDY_CLAUDE_BIN / "
                                  "AGENTSTUDY_CODEX_BIN / AGENTSTUDY_GEMINI_BIN, the pinned install, PATH).")
@click.option("--agent-version", help="The adjudicator agent's expected version (default: its pin, 2.1.296 / "
                                      "0.171.0 / 0.61.0).")
@click.option("--claude-bin", help="Claude Code executable (default: AGENTSTUDY_CLAUDE_BIN, pinned install, PATH).")
@click.option("--cli-version", help="Expected `claude --version` (default 2.1.296; --agent-version for any agent).")
@click.option("--seed", type=click.IntRange(min=0), help="Blinding seed (default: random; always recorded).")
@click.option("--allow-unverified", is_flag=True,
              help="Minimal study: adjudicate a ledger that does not verify (its hashes or invariants); the "
                   "problems are printed as a warning and recorded in the companion (ledgerUnverified).")
@click.option("--rehearsal-latency-ms", type=click.IntRange(0, 600_000), default=0, show_default=True,
              help="With --rehearsal: the scripted adjudicator answers every request after this many ms.")
@concurrency_option("Adjudicator attempts", "each is admitted only if its full per-item limit fits under the cap "
                    "with every open reservation counted; the first attempt that does not complete stops admission.")
@executor_options
@containment_option
@partial_chain_option
@stops_on_signals
def adjudicate(
    paths: tuple[Path, ...],
    manifest_path: Path | None,
    adjudicator_path: Path | None,
    run_id: str | None,
    controlled_offset: int,
    controlled_limit: int | None,
    as_text: bool,
    roots: tuple[str, ...],
    output: Path | None,
    model: str | None,
    budget_usd: str | None,
    item_budget_usd: str,
    approve_budget: bool,
    rehearsal: bool,
    transport: str,
    agent: str,
    agent_bin: str | None,
    agent_version: str | None,
    claude_bin: str | None,
    cli_version: str | None,
    seed: int | None,
    allow_unverified: bool,
    rehearsal_latency_ms: int,
    concurrency: int,
    executor: str,
    ray_address: str | None,
    containment: str,
    partial_chain: bool,
) -> None:
    """Adjudicate a finished run blind to the scenario, into a new companion file.

    Each completed observation becomes an opaque item (random id and order, seed recorded);
    its answer is scrubbed of MCP server and tool names and scenario labels, and its path:line
    citations are checked against the pinned corpus before a fresh adjudicator (read-only
    tools, no MCP server) judges each expected proposition. Observations that did not complete
    stay missing. There is no human review.

    The ledger's `type` decides: a minimal-study ledger needs --manifest and --root; a
    controlled-study ledger (`controlled-study-observation-ledger`) needs SUITE, --adjudicator
    and --output and runs the independent adjudicator process of the controlled runner (the
    same as `agentstudy adjudicate-controlled`).

    The adjudicator is --agent (Claude Code by default, or the Codex CLI or Gemini CLI, whatever agent ran
    the study), contained and given credentials exactly as a study attempt of that agent; --model must have a
    price in that agent's table, and with --rehearsal it talks to that agent's own scripted server.

    A minimal-study ledger must verify as for `agentstudy report` (its hashes and invariants);
    one that does not is refused naming the first problem (exit 2) unless --allow-unverified,
    which goes on with a warning and records the problems in the companion.

    Several minimal-study ledgers are a chain of runs, oldest first (`adjudicate A.json B.json`, where B's
    run continued A's with --continue-from): each must verify and name the one before it, and no cell may be
    completed in two of them. Each run's completed attempts are then blinded and scored into a companion
    beside its ledger (--output is for a single ledger), in order, each run getting what the earlier ones
    left of the one cap; the first that does not finish stops the chain. `agentstudy report A.json B.json
    --adjudication A.adjudication.json --adjudication B.adjudication.json` reports the whole study.
    """
    from rich.console import Console

    from agentstudy.adjudication.blinding import new_seed
    from agentstudy.adjudication.companion import SilentAdjudicationProgress
    from agentstudy.adjudication.demo import NO_MCP_SERVER, default_companion_path
    from agentstudy.adjudication.ledger_view import LedgerError, minimal_view, read_ledger_bytes
    from agentstudy.adjudication.run import AdjudicationRequest
    from agentstudy.commands.adjudicate_chain import read_chain, run_chain
    from agentstudy.commands.adjudicate_controlled import run_and_print
    from agentstudy.commands.agent_options import agent_binary, agent_flags
    from agentstudy.commands.containment_options import containment_mode
    from agentstudy.commands.run_options import executor_choice
    from agentstudy.io.claude_cli import project_root
    from agentstudy.protocol.continuation import missing_links
    from agentstudy.protocol.ledger_integrity import few_problems, verify_ledger_bytes
    from agentstudy.protocol.manifest import ManifestError, load_manifest
    from agentstudy.rehearsal.adjudicator_policy import adjudicator_reply
    from agentstudy.report.chain import chain_json, partial_chain_note, partial_chain_refusal
    from agentstudy.transports.cli import CliSettings
    chosen = executor_choice(executor, ray_address, concurrency)
    ledger_path = paths[0]
    try:
        data, document, kind = read_ledger_bytes(ledger_path)
    except LedgerError as error:
        fail(str(error))
    if kind != "minimal-study":
        suite_path = paths[1] if len(paths) == 2 else None
        if suite_path is None or adjudicator_path is None or output is None:
            fail("a controlled-study ledger needs SUITE, --adjudicator FILE and --output FILE")
        sys.exit(run_and_print(
            ledger_path, suite_path, adjudicator_path, output, run_id, controlled_offset, controlled_limit, as_text,
            concurrency, chosen, ray_address,
        ))
    if manifest_path is None:
        fail("a minimal-study ledger needs --manifest FILE")
    missing = missing_links(document)  # a chain is one study (issue 40)
    if missing and not partial_chain:
        fail(partial_chain_refusal(ledger_path.name, missing, "adjudicate"))
    partial = partial_chain_note(missing) if missing else ""
    if partial:
        click.echo(f"agentstudy: {partial}", err=True)
    if len(paths) > 1 and output is not None:
        fail("--output names one companion; a chain of runs writes one beside each ledger")
    if transport == "http":
        fail("the http adjudicator is not implemented yet; use --transport cli")
    chosen_agent, version, explicit = agent_flags(transport, agent, agent_version, cli_version, agent_bin, claude_bin,
                                                  False)
    if rehearsal_latency_ms and not rehearsal:
        fail("--rehearsal-latency-ms needs --rehearsal (it delays the scripted adjudicator's answers)")
    try:
        views = read_chain(paths, (data, document), partial=partial_chain) if len(paths) > 1 else [
            (minimal_view(ledger_path.resolve(), data, document), data)]
        loaded = load_manifest(manifest_path)
    except (LedgerError, ManifestError) as error:
        fail(str(error))
    if not approve_budget and not rehearsal:
        fail("--approve-budget is required to spend on adjudication (or --rehearsal to rehearse it for free)")
    if not model or not model.strip() or any(c in model for c in "\r\n\0"):
        fail("an adjudicator model is required (ADJUDICATOR_MODEL or --model)")
    cap_name = "the adjudication cap (ADJUDICATOR_BUDGET_USD or --budget-usd)"
    cap = positive_usd(cap_name, budget_usd)
    limit = attempt_limit("--item-budget-usd", item_budget_usd, cap, cap_name)
    checked = []
    for view, view_data in views:
        companion_path = output if output is not None else default_companion_path(view.path)
        check_new_output("--output", companion_path, (*parse_roots(roots).values(), project_root()))
        verification = verify_ledger_bytes(view_data)
        if not verification.verified:
            if not allow_unverified:
                fail(f"the ledger {view.path} does not verify: {verification.first()}; --allow-unverified reads "
                     f"it anyway")
            click.echo(f"agentstudy: warning: unverified: {view.path}: {few_problems(verification.problems)}",
                       err=True)
            view = replace(view, unverified=verification.problems)
        checked.append((view, companion_path))
    view, companion_path = checked[0]
    binary = agent_binary(chosen_agent, explicit)
    request = AdjudicationRequest(
        ledger=view,
        loaded=loaded,
        roots=parse_roots(roots),
        output=companion_path,
        settings=CliSettings(binary=binary, model=model.strip(), mcp=NO_MCP_SERVER,
                             containment=containment_mode(containment), agent=chosen_agent.name,
                             login_file=None if rehearsal else chosen_agent.login_file(os.environ)),
        cap_usd=cap,
        item_budget_usd=limit,
        expected_cli_version=version,
        seed=new_seed() if seed is None else seed,
        parent_env=dict(os.environ),
        forbidden_output_roots=(project_root(),),
        concurrency=concurrency,
        executor=chosen,
        ray_address=ray_address,
        progress=ConsoleAdjudicationProgress(Console(stderr=True)) if sys.stdout.isatty()
        else SilentAdjudicationProgress(),
    )
    requests = [replace(request, ledger=each, output=path, seed=request.seed + index)
                for index, (each, path) in enumerate(checked)]
    runner = functools.partial(_run, chain=chain_json(missing))  # every run's line says whether the chain is whole
    if not rehearsal:
        sys.exit(run_chain(requests, runner, rehearsal_note=partial))
    with chosen_agent.rehearsal_server(rehearsal_latency_ms, policy=adjudicator_reply) as server:
        requests = [replace(each, settings=replace(each.settings, rehearsal_base_url=server.agent_base_url))
                    for each in requests]
        code = run_chain(requests, runner, rehearsal_note=", ".join(filter(None, (partial,
                                                                                  "rehearsal: no real money"))))
    sys.exit(code)


def _run(request: AdjudicationRequest, note: str, *, chain: dict[str, Any]) -> tuple[int, Decimal]:
    from agentstudy.adjudication.run import AdjudicationRefused, run_adjudication
    from agentstudy.io.ledger_store import CheckpointError, OutputPathError
    from agentstudy.pricing.sums import usd_from_json
    try:
        summary = run_adjudication(request)
    except (AdjudicationRefused, OutputPathError) as error:
        fail(f"adjudication refused, nothing reserved: {error}")
    except CheckpointError as error:
        fail(f"adjudication stopped because a checkpoint failed: {error}; the companion on disk is the last one "
             "written, review the budget before a rerun", EXIT_BLOCKED)
    except Exception:
        fail("adjudication stopped on an internal error; see the companion, review the budget before a rerun",
             EXIT_BLOCKED)
    print_adjudication_table(summary, note=note)
    line = {**summary.line, "chain": chain}  # issue 40: part of a chain says so
    if request.ledger.unverified:
        line = {**line, "ledgerUnverified": list(request.ledger.unverified)}
    click.echo(json.dumps(line, separators=(",", ":")))
    return (EXIT_OK if summary.status == "adjudicated" else EXIT_BLOCKED), usd_from_json(line["spentUsd"])
