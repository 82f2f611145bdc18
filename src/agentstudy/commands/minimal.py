"""``agentstudy minimal``: the minimal paired study runner (seed 000)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentstudy.agents.registry import AGENT_NAMES, DEFAULT_AGENT
from agentstudy.commands.common import (
    check_new_output,
    fail,
    parse_roots,
    stops_on_signals,
)
from agentstudy.commands.containment_options import cli_base_url_option, containment_option
from agentstudy.commands.mcp_options import mcp_options
from agentstudy.commands.run_options import MAX_CONCURRENCY, continue_option
from agentstudy.commands.study_agents_options import agent_model_option
from agentstudy.io.messages_api import DEFAULT_BASE_URL

if TYPE_CHECKING:
    from agentstudy.protocol.schedule import Mode


@click.command()
@click.option("--manifest", "manifest_path", type=click.Path(path_type=Path), required=True,
              help="The study: an agentstudy-study-v1 study file (docs/study-file.md) or the seed's "
                   "minimal-study-v1 manifest (JSON).")
@click.option("--dry-run", is_flag=True, help="Validate the matrix (and --root checkouts); start nothing.")
@click.option("--probe", is_flag=True,
              help="With --dry-run: also start the MCP server once per checkout of the MCP arm, in its sandbox, "
                   "as the run's preflight does (--root needed), and print its tools with their annotations.")
@click.option("--pilot", is_flag=True, help="Select the pilot: by default 2 attempts (first task, one repetition).")
@click.option("--pilot-tasks", type=int, help="With --pilot: its first K tasks (default 1; 2 or more lets "
                                              "`agentstudy power` estimate variance components).")
@click.option("--pilot-repetitions", type=int, help="With --pilot: R repetitions per task and arm (default 1).")
@click.option("--run", "full", is_flag=True,
              help="Select the full schedule: tasks x repetitions x 2 arms (x agents for a study listing several; "
                   "36 for the seed manifest).")
@click.option("--approve-budget", is_flag=True, help="Required to spend: you approve the cap.")
@click.option("--transport", type=click.Choice(["http", "cli"]), default="http", show_default=True,
              help="Our Messages API loop (http) or a headless agent CLI (cli: Claude Code, or Codex / Gemini "
                   "CLI with --agent; the pilot transport, and the one a study listing several agents needs).")
@click.option("--root", "roots", multiple=True, metavar="NAME=PATH",
              help="Top level of a clean checkout of a manifest repository at its pin (repeatable).")
@click.option("--output", type=click.Path(path_type=Path),
              help="New private ledger file (never overwritten), outside every checkout holding a --root.")
@click.option("--model", envvar="STUDY_MODEL",
              help="Model id (a cli --rehearsal: the agent's scripted model by default). [env: STUDY_MODEL]")
@click.option("--budget-usd", envvar="STUDY_BUDGET_USD", help="Cumulative cap in USD. [env: STUDY_BUDGET_USD]")
@click.option("--claude-bin", help="Claude Code executable (default: AGENTSTUDY_CLAUDE_BIN, pinned install, PATH).")
@click.option("--attempt-budget-usd", default="0.10", show_default=True,
              help="Per-attempt limit in USD (cli; http with --concurrency above 1).")
@click.option("--cli-version", help="Expected `claude --version` (cli; the same as --agent-version).")
@click.option("--agent", type=click.Choice(AGENT_NAMES), default=DEFAULT_AGENT, show_default=True,
              help="The coding agent of --transport cli: headless Claude Code, the Codex CLI or Gemini CLI.")
@click.option("--agent-version", help="The agent's expected version (default: its pin, 2.1.296 / 0.171.0 / 0.61.0), "
                                      "probed in preflight.")
@click.option("--agent-bin", help="The agent's executable (default: AGENTSTUDY_CLAUDE_BIN / AGENTSTUDY_CODEX_BIN / "
                                  "AGENTSTUDY_GEMINI_BIN, the pinned install in .tools, PATH); --claude-bin is the "
                                  "same for claude-code.")
@click.option("--api-base-url", default=DEFAULT_BASE_URL, show_default=True,
              help="Messages API base URL (http); the key is read from ANTHROPIC_API_KEY only.")
@click.option("--input-usd-per-million", envvar="STUDY_INPUT_USD_PER_MILLION",
              help="Upper input price, USD per million tokens (http). [env: STUDY_INPUT_USD_PER_MILLION]")
@click.option("--output-usd-per-million", envvar="STUDY_OUTPUT_USD_PER_MILLION",
              help="Upper output price, USD per million tokens (http). [env: STUDY_OUTPUT_USD_PER_MILLION]")
@click.option("--rehearsal", is_flag=True,
              help="Rehearse for free: the agent talks to a scripted server on 127.0.0.1 (Messages API; Codex: "
                   "Responses API) with a "
                   "dummy token; the ledger says rehearsal. --approve-budget is not needed, and http needs no "
                   "prices (nominal: the model's first cli tier, e.g. 0.10 / 0.50 USD per million; recorded as "
                   "nominal).")
@click.option("--rehearsal-latency-ms", type=click.IntRange(0, 600_000), default=0, show_default=True,
              help="With --rehearsal: the scripted server answers every request after this many ms.")
@click.option("--rehearsal-faults", metavar="SPEC",
              help="With --rehearsal: the scripted server refuses requests on schedule, e.g. '1:429,30%:529,seed=7' "
                   "(429 with retry-after, 529, 500, reset, slow=MS, sse-error; by request N, N-M, *, P%, "
                   "attempt=K; docs/real-api.md). A study file's rehearsalFaults is the default.")
@click.option("--api-max-retries", type=click.IntRange(0, 10), default=2, show_default=True,
              help="How often a refused request (429, 529, 5xx, 408, 409, a failed connection) is sent again, "
                   "after retry-after or an exponential back-off (http: by agentstudy; cli: Claude Code's "
                   "CLAUDE_CODE_MAX_RETRIES); it consumed nothing (docs/real-api.md).")
@click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=1, show_default=True,
              help="Attempts in flight at once (both transports). Each is admitted only if its full "
                   "--attempt-budget-usd fits under the cap with every open reservation counted (http: the "
                   "attempt's requests then reserve within that limit); 1 is the sequential walk.")
@click.option("--strict-cap", is_flag=True,
              help="Keep spent <= cap at any concurrency: each cli attempt reserves its limit plus one "
                   "worst-case turn (the model's whole context window at its dearest prompt rate plus its maximum "
                   "output, from the price table), since Claude Code checks --max-budget-usd only after a turn. "
                   "Claude Code is still given the limit. A non-completed attempt is charged max(reservation, "
                   "measured), so under --strict-cap a failed attempt is charged the bigger reservation. http: "
                   "recorded, changes nothing (every request is already reserved at its ceiling).")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where the attempts of --concurrency N run: threads here, or never-retried tasks on "
                   "the Ray cluster at --ray-address (pip install 'agentstudy[ray]'; docs/ray.md).")
@click.option("--ray-address", metavar="ADDR", help="With --executor ray: the running cluster's head (host:port).")
@click.option("--sequential", is_flag=True,
              help="Run the sequential design (docs/sequential.md): tasks in a seeded random order, each a complete "
                   "block of both arms and every repetition, and stop as soon as the anytime-valid one-sided test "
                   "on the declared primary (analysis.primary; input tokens, lower is better, without one; one bet "
                   "size planned from maxTasks and alpha, recorded as betSize) decides "
                   "(efficacy at an e-value of 1/alpha, futility, or maxTasks); nothing is reserved after the "
                   "stop. --continue-from a sequential study that has not stopped continues it sequentially. "
                   "The study file's design.sequential sets maxTasks, alpha and futility (a file "
                   "with it always runs this way); without one: every task, alpha 0.05, futility 0.1.")
@click.option("--no-transcripts", is_flag=True,
              help="Do not keep each attempt's raw agent output in the private directory LEDGER.transcripts/ "
                   "(0700, files 0600, credentials redacted; open one with `agentstudy transcript --ledger`). "
                   "The ledger records that none were kept.")
@continue_option
@containment_option
@cli_base_url_option
@agent_model_option
@mcp_options
@stops_on_signals
@click.pass_context
def minimal(
    ctx: click.Context,
    manifest_path: Path,
    dry_run: bool,
    probe: bool,
    pilot: bool,
    pilot_tasks: int | None,
    pilot_repetitions: int | None,
    full: bool,
    approve_budget: bool,
    transport: str,
    roots: tuple[str, ...],
    output: Path | None,
    model: str | None,
    budget_usd: str | None,
    claude_bin: str | None,
    attempt_budget_usd: str,
    cli_version: str | None,
    agent: str,
    agent_version: str | None,
    agent_bin: str | None,
    api_base_url: str,
    input_usd_per_million: str | None,
    output_usd_per_million: str | None,
    rehearsal: bool,
    rehearsal_latency_ms: int,
    rehearsal_faults: str | None,
    api_max_retries: int,
    concurrency: int,
    strict_cap: bool,
    executor: str,
    ray_address: str | None,
    sequential: bool,
    no_transcripts: bool,
    mcp_config_file: Path | None,
    server_config_candidates: str,
    mcp_tools: str,
    mcp_probe: str,
    mcp_probe_arguments: str,
    sandbox_binds: tuple[str, ...],
    agent_models: tuple[str, ...],
    containment: str,
    cli_base_url: str | None,
    continue_from: tuple[Path, ...],
) -> None:
    """Run a paired study from a study file or the seed's manifest (seed: minimal study runner v1).

    A study file (agentstudy-study-v1) names the treatment arm's MCP server, tools and probe:
    they are the defaults of the MCP flags, and a flag given on the command line overrides them.

    --dry-run validates everything the run would refuse for its input, without starting any
    process or opening any socket: the manifest (each prompt after templating within 8 KiB, no
    control character in a question or an id), the MCP flags and --mcp-config (readable, exactly
    one server, known placeholders), with --transport cli the Claude Code binary (an absolute
    executable path), every money flag that is given (and the cap against one reservation),
    --model and --output when given, and with --root the checkouts with local git. Left to the
    run: credentials and what only a started process can tell (the CLI's version, the MCP
    server's tools: ``--dry-run --probe`` starts it once per checkout, in its sandbox, and prints
    its tools with their annotations; still no agent, no reservation, no ledger). --transport
    http runs the Messages API loop: ANTHROPIC_API_KEY from the environment only, upper prices
    from the flags or STUDY_INPUT_USD_PER_MILLION / STUDY_OUTPUT_USD_PER_MILLION (a --rehearsal
    runs at nominal prices unless given others: ``pricing.http.rehearsal_prices``, what a cli
    rehearsal is charged at; the ledger's prices say ``nominal: true``, the summary "rehearsal:
    no real money" and its JSON line ``"rehearsal": true``). Money is a plain decimal in USD
    (``0.10``): no sign, exponent
    or underscore, at most 9 decimals, above zero and at most 1,000,000.
    """
    from agentstudy.commands.agent_options import agent_binary, agent_flags, require_agent_price
    from agentstudy.commands.containment_options import containment_mode, gateway_from_options
    from agentstudy.commands.mcp_options import arm_mcp_spec, study_mcp_spec
    from agentstudy.commands.minimal_dry_run import DryRunRequest, print_dry_run
    from agentstudy.commands.minimal_inputs import money_flags, require_model, reservation_rule
    from agentstudy.commands.minimal_outcome import continued_plan, run_and_summarise, run_http
    from agentstudy.commands.run_options import checked_faults, load_predecessor
    from agentstudy.commands.study_agents_options import other_agent_runs, rehearsal_endpoints
    from agentstudy.commands.view import progress_for_terminal
    from agentstudy.io.claude_cli import project_root
    from agentstudy.io.messages_api import BaseUrlError, check_base_url
    from agentstudy.protocol.arm_names import namer
    from agentstudy.protocol.manifest import ManifestError, load_manifest
    from agentstudy.protocol.schedule import pilot_size
    from agentstudy.runners.cli_request import CliRunRequest
    from agentstudy.runners.minimal import run_cli_study
    from agentstudy.runners.sequential_runs import study_schedule
    from agentstudy.transports.api_retry import RetryPolicy
    from agentstudy.transports.cli import CliSettings
    try:
        loaded = load_manifest(manifest_path)
    except ManifestError as error:
        fail(str(error))
    chosen_agent, expected_version, agent_explicit = agent_flags(transport, agent, agent_version, cli_version,
                                                                  agent_bin, claude_bin, strict_cap)
    if pilot and full:
        fail("--pilot and --run are mutually exclusive")
    if executor == "ray" and (concurrency < 2 or ray_address is None):
        fail("--executor ray needs --concurrency above 1 and --ray-address ADDR (docs/ray.md)")
    if ray_address is not None and executor != "ray":
        fail("--ray-address goes with --executor ray")
    if rehearsal_latency_ms and not rehearsal:
        fail("--rehearsal-latency-ms needs --rehearsal (it delays the scripted server's answers)")
    rehearsal_faults = checked_faults(rehearsal_faults, loaded, rehearsal)
    root_paths = parse_roots(roots)
    if not pilot and (pilot_tasks is not None or pilot_repetitions is not None):
        fail("--pilot-tasks and --pilot-repetitions need --pilot")
    try:
        size = pilot_size(loaded.manifest, 1 if pilot_tasks is None else pilot_tasks,
                          1 if pilot_repetitions is None else pilot_repetitions)
    except ValueError as error:
        fail(str(error))
    mode: Mode = "pilot" if pilot else "full"
    predecessor = load_predecessor(continue_from, sequential=sequential or getattr(
        getattr(loaded.manifest, "design", None), "sequential", None) is not None)
    plan = continued_plan(loaded, sequential, pilot, predecessor)
    schedule = study_schedule(loaded, mode, size, plan)
    control_spec = arm_mcp_spec(loaded.arms.control) if loaded.arms is not None else None
    spec = study_mcp_spec(
        ctx, loaded.arms.treatment if loaded.arms else None,
        mcp_config_file, server_config_candidates, mcp_tools, mcp_probe, mcp_probe_arguments, sandbox_binds,
        control=loaded.arms.control if loaded.arms else None,
    )
    mode_of_containment = containment_mode(containment)
    base_url = api_base_url
    if transport == "http" and getattr(loaded.manifest, "agents", None):
        fail("a study that lists agents needs --transport cli (the http loop is the Messages API's)")
    if transport == "http":
        if cli_base_url is not None:
            fail("--cli-base-url is for the cli transport (use --api-base-url with http)")
        if rehearsal and api_base_url != DEFAULT_BASE_URL:
            fail("--api-base-url and --rehearsal exclude each other (a rehearsal uses its own local server)")
        try:
            base_url = check_base_url(api_base_url)
        except BaseUrlError as error:
            fail(str(error))
    elif rehearsal and cli_base_url is not None:
        fail("--cli-base-url and --rehearsal exclude each other (a rehearsal uses its own local server)")
    gateway_url, gateway_token = gateway_from_options(cli_base_url)
    if probe and not dry_run:
        fail("--probe goes with --dry-run (a run probes the MCP server anyway)")
    if dry_run:
        print_dry_run(DryRunRequest(
            loaded=loaded, mode=mode, schedule=schedule, spec=spec, transport=transport, agent=chosen_agent,
            agent_explicit=agent_explicit, model=model, money=(budget_usd, attempt_budget_usd, input_usd_per_million,
                                                                output_usd_per_million),
            rehearsal=rehearsal, concurrency=concurrency, strict_cap=strict_cap, output=output, roots=root_paths,
            probe=probe, containment=mode_of_containment, sequential=plan, control=control_spec,
        ))
        return
    if not (pilot or full):
        fail("choose --pilot or --run (or --dry-run)")
    if not approve_budget and not rehearsal:
        fail("--approve-budget is required to run a paid study (or --rehearsal to rehearse it for free)")
    chosen_model = require_model(model or (chosen_agent.rehearsal_model if rehearsal and transport == "cli" else None))
    money = money_flags(loaded, mode, transport, chosen_model, budget_usd, attempt_budget_usd,
                        input_usd_per_million, output_usd_per_million, required=True, rehearsal=rehearsal,
                        concurrency=concurrency)
    reservation_rule(transport, chosen_model, money, strict=strict_cap)
    if output is None:
        fail("--output FILE is required")
    if transport == "http":
        assert money.cap is not None and money.prices is not None
        sys.exit(run_http(
            loaded, mode, root_paths, output, chosen_model, money.cap, spec, rehearsal, base_url,
            money.prices, mode_of_containment, size, latency_ms=rehearsal_latency_ms, faults=rehearsal_faults,
            retry=RetryPolicy(max_retries=api_max_retries),
            concurrency=concurrency, attempt_budget_usd=money.limit, executor=executor, ray_address=ray_address,
            sequential=plan,
            keep_transcripts=not no_transcripts,
            continuation=predecessor,
            control_mcp=control_spec,
        ))
    assert money.cap is not None and money.limit is not None
    check_new_output("--output", output, (*root_paths.values(), project_root()))
    binary = agent_binary(chosen_agent, agent_explicit)
    primary = CliSettings(
        binary=binary, model=chosen_model, mcp=spec, containment=mode_of_containment,
        gateway_base_url=gateway_url, gateway_token=gateway_token,
        login_file=None if rehearsal or gateway_url else chosen_agent.login_file(os.environ),
        agent=chosen_agent.name, max_retries=api_max_retries, control_mcp=control_spec,
    )
    others = other_agent_runs(loaded, transport, primary, expected_version, agent_models, rehearsal=rehearsal,
                              strict_cap=strict_cap)
    require_agent_price(chosen_agent, chosen_model, f"--model {chosen_model}")
    request = CliRunRequest(
        loaded=loaded,
        mode=mode,
        roots=root_paths,
        output=output,
        settings=primary,
        cap_usd=money.cap,
        attempt_budget_usd=money.limit,
        expected_cli_version=expected_version,
        parent_env=dict(os.environ),
        forbidden_output_roots=(project_root(),),
        progress=progress_for_terminal(namer(loaded.arms.labels() if loaded.arms else None, spec.name)),
        pilot=size,
        concurrency=concurrency,
        strict_cap=strict_cap,
        executor="ray" if executor == "ray" else "local",
        ray_address=ray_address,
        other_agents=others,
        sequential=plan,
        keep_transcripts=not no_transcripts,
        continuation=predecessor,
    )
    if not rehearsal:
        sys.exit(run_and_summarise(lambda: run_cli_study(request)))
    with chosen_agent.rehearsal_endpoint(rehearsal_latency_ms, rehearsal_faults) as rehearsal_url, \
            rehearsal_endpoints(others, rehearsal_latency_ms, rehearsal_faults) as ready:
        settings = replace(request.settings, rehearsal_base_url=rehearsal_url)
        code = run_and_summarise(lambda: run_cli_study(replace(request, settings=settings, other_agents=ready)))
    sys.exit(code)

