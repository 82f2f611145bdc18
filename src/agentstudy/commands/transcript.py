"""``agentstudy transcript``: apply the runner's checks to a saved stream-json file (seed 000).

Researchers use it to see why an attempt was refused. It runs exactly the runner's code path
(the agent's ``AgentCli.evaluate``: ``transports.cli_evaluation.evaluate_cli_attempt`` for Claude
Code, ``transports.codex.evaluate_codex_attempt`` for ``--agent codex`` (issue 21 item 3); then
``pricing.budget.settle_attempt``) with the run's tool policy, and prints the attempt record
without the answer. The MCP server expected in the MCP arm is the run's: the same MCP flags as ``agentstudy minimal``
(``commands.mcp_options``), or ``--study FILE`` (its treatment arm; flags typed beside it
override it), or by default the bundled doc-bridge server (issue 18). Nothing is started.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from click.core import ParameterSource

from agentstudy.agents.registry import AGENT_NAMES, DEFAULT_AGENT
from agentstudy.commands.common import EXIT_BLOCKED, EXIT_OK, fail, positive_usd
from agentstudy.commands.mcp_options import mcp_options
from agentstudy.protocol.seed_names import DOC_BRIDGE_MCP, REPOSITORY_ONLY

if TYPE_CHECKING:
    from agentstudy.protocol.mcp_spec import McpServerSpec
    from agentstudy.protocol.study_arms import StudyArms
    from agentstudy.transports.cli_evaluation import CliEvaluation

FIRST_KEYS = (
    "status",
    "statusReason",
    "setupProblem",
    "costProblem",
    "chargedUsd",
    "reservedUsd",
    "cliReportedCostUsd",
    "computedCostUsd",
    "containment",
    "refusedOutOfExportReads",
)
CONTAINMENTS = ("bwrap", "restricted", "unknown")
CONTAINMENT_NOTES = {
    "unknown": "a transcript does not record how the child was confined; pass --containment",
    "bwrap": "as given by --containment: bubblewrap namespaces plus --restricted file tools",
    "restricted": "as given by --containment: --restricted file tools only, no bubblewrap",
}


def _json_name(field: str) -> str:
    """The ledger's JSON name of a record field (the seed's camelCase, e.g. ``toolCallsByName``)."""
    from agentstudy.protocol.records import CliObservation
    info = CliObservation.model_fields.get(field)
    return info.alias if info is not None and info.alias else field


def attempt_record(
    evaluation: CliEvaluation,
    *,
    scenario: str,
    attempt_budget_usd: Decimal,
    reservation_usd: Decimal,
    exit_code: int,
    containment: str = "unknown",
) -> dict[str, Any]:
    """The attempt record of a saved transcript, settled, without the answer.

    Keys are the ledger's (``protocol.records.CliObservation``) plus ``statusReason`` (why the
    status is not ``completed``, ``null`` when it is) and ``refusedOutOfExportReads`` (the
    result's permission denials of Read, Grep or Glob); ``setupProblem`` and ``costProblem``
    are always present (``null`` when unset). ``containment`` echoes the caller's
    ``bwrap``, ``restricted`` or ``unknown`` (a transcript does not say how the child was
    confined). Money is JSON numbers of USD.
    """
    from agentstudy.pricing.budget import settle_attempt
    from agentstudy.pricing.usd_json import optional_usd_number, usd_number
    from agentstudy.stream.denials import refused_out_of_export_reads
    from agentstudy.transports.cli_evaluation import cli_failure_kind, settled_reason
    computed = evaluation.computed_cost.usd if evaluation.computed_cost is not None else None
    status, charged = settle_attempt(evaluation.status, reservation_usd, evaluation.reported_cost_usd, computed)
    reason = settled_reason(evaluation.status, evaluation.status_problem, status, charged, reservation_usd)
    record: dict[str, Any] = {
        "status": status,
        "statusReason": reason,
        "setupProblem": "; ".join(evaluation.setup_problems) or None,
        "costProblem": evaluation.cost_problem,
        "chargedUsd": usd_number(charged),
        "reservedUsd": usd_number(reservation_usd),
        "cliReportedCostUsd": optional_usd_number(evaluation.reported_cost_usd),
        "computedCostUsd": optional_usd_number(computed),
        "transport": "cli",
        "scenario": scenario,
        "attemptBudgetUsd": usd_number(attempt_budget_usd),
        "exitCode": exit_code,
    }
    for field, value in evaluation.fields.items():
        if field not in ("answer_text", "api_error_status"):
            record[_json_name(field)] = value
    kind = cli_failure_kind(status, evaluation.fields.get("api_error_status"))
    if kind is not None:  # as the runner records it (issue 33)
        record["failureKind"] = kind
    record["costBasis"] = evaluation.computed_cost.basis if evaluation.computed_cost is not None else None
    record["containment"] = containment
    record["refusedOutOfExportReads"] = refused_out_of_export_reads(evaluation.fields["permission_denials"])
    return record


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


def _scenario(given: str, arms: StudyArms | None) -> str:
    """The ledger scenario of ``--scenario``: a scenario name, or with ``--study`` an arm id; else exit 2."""
    ids = {arms.control.id: REPOSITORY_ONLY, arms.treatment.id: DOC_BRIDGE_MCP} if arms is not None else {}
    scenario = ids.get(given, given)
    if scenario not in (REPOSITORY_ONLY, DOC_BRIDGE_MCP):
        known = ", ".join([REPOSITORY_ONLY, DOC_BRIDGE_MCP, *ids])
        fail(f"--scenario {given!r} is not one of {known}")
    return scenario


def _study_arms(study: Path | None) -> StudyArms | None:
    """The arms of ``--study FILE`` (``None`` without one, or for a seed manifest); exit 2 on a bad file."""
    from agentstudy.protocol.manifest import ManifestError, load_manifest
    if study is None:
        return None
    try:
        return load_manifest(study).arms
    except ManifestError as error:
        fail(f"--study: {error}")


@click.command()
@click.argument("file", type=click.Path(path_type=Path), required=False)
@click.option("--ledger", "ledger", type=click.Path(path_type=Path),
              help="Open the transcript a run kept for one attempt of this ledger (with --task, --arm, --repetition) "
                   "instead of judging FILE; its SHA-256 is checked against the ledger.")
@click.option("--task", help="With --ledger: the attempt's task id.")
@click.option("--arm", help="With --ledger: the attempt's arm (scenario, or a study file's arm id or label).")
@click.option("--repetition", type=click.IntRange(1), help="With --ledger: the attempt's repetition.")
@click.option(
    "--scenario",
    help=f"The arm the attempt ran in: {REPOSITORY_ONLY} or {DOC_BRIDGE_MCP} (with --study also the arm's id); "
         "selects the expected tools and MCP server.",
)
@click.option("--study", "study", type=click.Path(path_type=Path),
              help="A study file (agentstudy-study-v1): its treatment arm gives the MCP server, tools and probe; "
                   "MCP flags typed beside it override it.")
@click.option("--agent", type=click.Choice(AGENT_NAMES), default=DEFAULT_AGENT, show_default=True,
              help="The agent that wrote FILE: claude-code (stream-json), codex (`codex exec --json`) or gemini "
                   "(`gemini -o stream-json`).")
@click.option("--model",
              help="The configured --model: the init event must echo it (claude-code); it prices the usage (codex).")
@click.option("--stderr", "stderr_file", type=click.Path(path_type=Path),
              help="codex only: the child's saved stderr (a required MCP server that failed to start is "
                   "reported there and nowhere else).")
@click.option("--record", "records", multiple=True, metavar="NAME=FILE",
              help="gemini only: a record the agent keeps beside its stream, as an attempt reads it after the child "
                   "(session=FILE: its session-*.jsonl, the per-request usage; telemetry=FILE: its local telemetry "
                   "file, the first request's tools and the refused requests). Repeatable.")
@click.option("--exit-code", type=int, default=0, show_default=True, help="The child's exit code.")
@click.option("--timed-out", is_flag=True, help="The child was killed by the attempt timeout.")
@click.option(
    "--reservation-usd",
    default="0.10",
    show_default=True,
    help="The per-attempt reservation in USD (floored to 6 decimals), for chargedUsd.",
)
@click.option(
    "--containment",
    type=click.Choice(CONTAINMENTS),
    default="unknown",
    show_default=True,
    help="How the child was confined (bwrap, or restricted: --restricted only); echoed, not checked.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of aligned lines.")
@mcp_options
@click.pass_context
def transcript(
    ctx: click.Context,
    file: Path | None,
    ledger: Path | None,
    task: str | None,
    arm: str | None,
    repetition: int | None,
    scenario: str | None,
    study: Path | None,
    agent: str,
    model: str | None,
    stderr_file: Path | None,
    records: tuple[str, ...],
    exit_code: int,
    timed_out: bool,
    reservation_usd: str,
    containment: str,
    as_json: bool,
    mcp_config_file: Path | None,
    server_config_candidates: str,
    mcp_tools: str,
    mcp_probe: str,
    mcp_probe_arguments: str,
    sandbox_binds: tuple[str, ...],
) -> None:
    """Check a saved stream-json transcript exactly as the CLI runner would, and show why.

    Applies the runner's parse, setup checks, pricing, outcome and settlement to FILE, with
    the run's tool policy: Read, Grep, Glob, plus in the server's arm the read-only tools of the
    one MCP server under study, as a run would be given them: the MCP flags of `agentstudy
    study` (--mcp-config, --mcp-tools, ...), or --study FILE (its treatment arm; a flag typed
    beside it wins), or by default the bundled server `doc-bridge` with
    mcp__doc-bridge__doc_search, mcp__doc-bridge__doc_get and mcp__doc-bridge__handoff_resolve.
    Nothing is started: the probe flags are checked, not called. A file over the 4 MiB stdout bound is read as the
    runner would have kept it: cut at the bound and `failed`. Prints the attempt record without
    the answer: status, statusReason, setupProblem, costProblem, costs, containment (as given by
    --containment: a transcript does not record it), refusedOutOfExportReads (the result's
    permission denials of Read, Grep or Glob; other denials are setup problems), counts and tokens.

    With --agent codex FILE is a saved `codex exec --json` stream (and --stderr its stderr), judged
    by the same code as a Codex run (transports/codex.py: the strict checks of stream/codex.py, the
    --model's OpenAI price; Codex reports no cost): the MCP server of the treatment arm is the one
    [mcp_servers] table, its read-only tools the enabled tools (server names, e.g. doc.search).

    With --agent gemini FILE is a saved `gemini -o stream-json` stream, judged by the same code as a
    Gemini run (transports/gemini.py); its usage and the tools it offered are in the records it keeps
    beside the stream, given with --record session=FILE and --record telemetry=FILE (without a session
    file its cost is invalid; without a telemetry file a treatment attempt must show a call to the server).

    With --ledger LEDGER --task T --arm A --repetition N it instead prints the raw agent output a run
    kept for that attempt in the private LEDGER.transcripts/ directory (checked against the SHA-256
    the ledger records; with several agents name one with --agent).

    Exit codes: 0 the status is `completed`; 1 any other status; 2 bad input (a missing or
    unreadable FILE, a bad option value). With --ledger: 0 the transcript was printed, 2 it could not be.
    """
    from agentstudy.agents.registry import agent_cli
    from agentstudy.commands.mcp_options import study_mcp_spec
    from agentstudy.commands.transcript_open import show_kept_transcript
    from agentstudy.io.process import STDOUT_LIMIT_BYTES
    from agentstudy.pricing.budget import reservation_for
    from agentstudy.stream.outcome import ProcessFacts
    from agentstudy.transports.cli import CliAttemptBody, CliSettings, RawAttempt
    from agentstudy.transports.cli_args import arm_tools
    from agentstudy.transports.codex import STDERR_KEPT_BYTES
    if ledger is not None:
        show_kept_transcript(ledger, task, arm, repetition,
                             agent if ctx.get_parameter_source("agent") != ParameterSource.DEFAULT else None)
    if file is None:
        fail("Missing argument 'FILE' (or --ledger LEDGER --task T --arm A --repetition N)")
    if scenario is None:
        fail("Missing option '--scenario'")
    if model is None:
        fail("Missing option '--model'")
    arms = _study_arms(study)
    chosen = _scenario(scenario, arms)
    spec: McpServerSpec = study_mcp_spec(
        ctx, arms.treatment if arms is not None else None,
        mcp_config_file, server_config_candidates, mcp_tools, mcp_probe, mcp_probe_arguments, sandbox_binds,
        control=arms.control if arms is not None else None,
    )
    data = _read(file)
    chosen_agent = agent_cli(agent)
    if stderr_file is not None and not chosen_agent.judged_with_stderr:
        fail(f"--stderr is for an agent whose checks read its stderr (--agent codex); {chosen_agent.label} "
             "reports everything in its stream")
    stderr = _read(stderr_file) if stderr_file is not None else b""
    agent_files: dict[str, bytes] = {}
    for given in records:
        name, sep, path = given.partition("=")
        if not sep or not path:
            fail(f"--record {given!r} is not NAME=FILE")
        if name not in chosen_agent.record_files:
            known = ", ".join(chosen_agent.record_files) or "none"
            fail(f"--record {name!r}: {chosen_agent.label} keeps no such record (its records: {known})")
        agent_files[name] = _read(Path(path))
    limit = positive_usd("--reservation-usd", reservation_usd)
    try:
        reservation = reservation_for(limit)
    except ValueError as error:
        fail(f"--reservation-usd: {error}")
    truncated = len(data) > STDOUT_LIMIT_BYTES
    process = ProcessFacts(started=True, timed_out=timed_out, truncated=truncated, exit_code=exit_code,
                           stdout_limit=STDOUT_LIMIT_BYTES)
    # The run's own evaluation (AgentCli.evaluate: stream-json for Claude Code, stream/codex.py + OpenAI
    # prices for Codex) on an attempt body that names nothing to start.
    settings = CliSettings(binary=Path(agent), model=model, mcp=spec, agent=agent)
    body = CliAttemptBody(settings, chosen, arm_tools(chosen, spec, ()), prompt="", reservation_usd=reservation,
                          server=None, parent_env=None, agent=chosen_agent)
    raw = RawAttempt(data[:STDOUT_LIMIT_BYTES], process, wall_time_ms=0, export_files=None, export_bytes=None,
                     export_tree_sha256=None, stderr=stderr[-STDERR_KEPT_BYTES:], agent_files=agent_files)
    evaluation = chosen_agent.evaluate(body, raw)
    record = attempt_record(
        evaluation, scenario=chosen, attempt_budget_usd=limit, reservation_usd=reservation, exit_code=exit_code,
        containment=containment,
    )
    record["agent"] = agent
    _show(record, containment, as_json)


def _read(path: Path) -> bytes:
    """The bytes of ``path``; exit 2 with one line when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as error:
        fail(f"cannot read {path}: {error.strerror or error}")


def _show(record: dict[str, Any], containment: str, as_json: bool) -> NoReturn:
    """Print ``record`` (one JSON object, or aligned lines) and exit 0 for ``completed``, else 1."""
    if as_json:
        click.echo(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    else:
        ordered = [*(key for key in FIRST_KEYS if key in record), *(key for key in record if key not in FIRST_KEYS)]
        if record["statusReason"] in (record["setupProblem"], record["costProblem"]):
            ordered.remove("statusReason")  # the problem line below says it already
        width = max(len(key) for key in ordered)
        for key in ordered:
            note = f" ({CONTAINMENT_NOTES[containment]})" if key == "containment" else ""
            click.echo(f"{key.ljust(width)}  {_text(record[key])}{note}")
    raise SystemExit(EXIT_OK if record["status"] == "completed" else EXIT_BLOCKED)
