"""How ``agentstudy minimal`` turns a run into an exit code, and its sequential plan: the refusals and stops a
run can end with (one line each), the summary it prints, the plan of a sequential design, and the run of the
Messages API transport (``run_http``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from agentstudy.commands.common import EXIT_BLOCKED, check_new_output, emit_summary, fail
from agentstudy.transports.api_retry import DEFAULT_RETRY

if TYPE_CHECKING:
    from agentstudy.io.containment import ContainmentMode
    from agentstudy.pricing.http import UpperPrices
    from agentstudy.protocol.continuation import Predecessor
    from agentstudy.protocol.manifest import LoadedManifest
    from agentstudy.protocol.mcp_spec import McpServerSpec
    from agentstudy.protocol.schedule import Mode, PilotSize
    from agentstudy.protocol.sequential_plan import SequentialPlan
    from agentstudy.runners.summary import RunSummary
    from agentstudy.transports.api_retry import RetryPolicy


def sequential_plan(loaded: LoadedManifest, flag: bool, pilot: bool) -> SequentialPlan | None:
    """The run's sequential plan (issue 35): with ``--sequential`` or a study file's ``design.sequential``; ``None``
    otherwise. It decides on the study's declared primary endpoint (``analysis.primary``); a study that declares
    none decides on input tokens, lower is better. Exits 2 (one line) with ``--pilot`` or a study it cannot run
    sequentially (a primary endpoint only known after adjudication, several agents, too few tasks)."""
    from agentstudy.protocol.sequential_plan import plan_sequential
    design = getattr(loaded.manifest, "design", None)
    if not flag and (design is None or design.sequential is None):
        return None
    if pilot:
        fail("a sequential design runs the study itself, not a pilot (drop --pilot or --sequential)")
    declared = loaded.analysis
    try:
        if declared is None:
            return plan_sequential(loaded.manifest, loaded.protocol_hash)
        return plan_sequential(loaded.manifest, loaded.protocol_hash, metric=declared.primary.metric,
                               better_when=declared.primary.better_when)
    except ValueError as error:
        fail(f"--sequential: {error}")


def continued_plan(loaded: LoadedManifest, flag: bool, pilot: bool,
                   predecessor: Predecessor | None) -> SequentialPlan | None:
    """The plan of a run that continues ``predecessor`` (issue 40): a sequential chain that had not stopped goes on
    under its own block's plan (seed, task order, construction), whatever the flag says; otherwise
    :func:`sequential_plan`. Exits 2 (one line) for ``--pilot`` on a sequential chain or a block that cannot be
    replayed."""
    record = None if predecessor is None else predecessor.ledger.sequential
    if record is None:
        return sequential_plan(loaded, flag, pilot)
    if pilot:
        fail("--continue-from: a sequential study continues as the study itself, not a pilot (drop --pilot)")
    from agentstudy.protocol.sequential_plan import plan_from_record

    try:
        return plan_from_record(record, loaded.manifest.repetitions)
    except ValueError as error:
        fail(f"--continue-from: {error}")


def run_and_summarise(study: Callable[[], RunSummary]) -> int:
    """Run ``study`` and print its summary (table on stderr, JSON line on stdout); its exit code. A refusal
    before anything was reserved exits 2 (one line); a checkpoint failure, an attempt body's error or an
    internal error exits 1 naming what to review (issue 29: the body's error in its own words; issue 40: an internal
    error after an attempt ended, which was recorded first)."""
    from agentstudy.commands.view import print_summary_table
    from agentstudy.io.ledger_store import CheckpointError, OutputPathError
    from agentstudy.pricing.usd_json import usd_number
    from agentstudy.runners.attempt_port import ObservedThenFailed
    from agentstudy.runners.concurrent_walk import AttemptBodyError
    from agentstudy.runners.preflight import PreflightError
    try:
        summary = study()
    except (PreflightError, OutputPathError) as error:
        fail(f"run refused, nothing reserved: {error}")
    except CheckpointError as error:
        fail(f"the run stopped because a checkpoint failed: {error}; the ledger on disk is the last one written, "
             "review the budget before any rerun", EXIT_BLOCKED)
    except AttemptBodyError as error:
        unstarted = (f"; {usd_number(error.charged_not_spent_usd)} USD charged, not spent, for attempts that never "
                     "started" if error.charged_not_spent_usd else "")
        fail(f"the run stopped: {error}; the attempts already running were recorded{unstarted}, see the ledger and "
             "review the budget before any rerun", EXIT_BLOCKED)
    except ObservedThenFailed as error:
        fail(f"the run stopped on an internal error after an attempt ended ({error}); the attempts already running "
             "were recorded, see the ledger and review the budget before any rerun", EXIT_BLOCKED)
    except Exception:
        fail("the run stopped on an internal error; see the ledger, do not retry without a budget review",
             EXIT_BLOCKED)
    print_summary_table(summary)
    return emit_summary(summary)


def run_http(
    loaded: LoadedManifest,
    mode: Mode,
    roots: dict[str, Path],
    output: Path,
    model: str,
    cap: Decimal,
    spec: McpServerSpec,
    rehearsal: bool,
    base_url: str,
    prices: UpperPrices,
    containment: ContainmentMode,
    size: PilotSize,
    *,
    latency_ms: int = 0,
    faults: str | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    concurrency: int = 1,
    attempt_budget_usd: Decimal | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    sequential: SequentialPlan | None = None,
    keep_transcripts: bool = True,
    continuation: Predecessor | None = None,
    control_mcp: McpServerSpec | None = None,
) -> int:
    """``agentstudy minimal --transport http``: read the key from the environment, check the output and run (the
    base URL is checked); the exit code.

    ``latency_ms``: the rehearsal server's delay before each answer (ms); ``faults`` its fault SPEC; ``retry``
    the retries of a refused request (issue 33).
    ``concurrency`` and its per-attempt limit ``attempt_budget_usd`` (USD): issue 19; ``executor``,
    ``ray_address``: issue 20; ``control_mcp``: the control arm's own server (issue 44).
    """
    from agentstudy.commands.view import progress_for_terminal
    from agentstudy.io.claude_cli import project_root
    from agentstudy.io.messages_api import ApiKeyError, api_key_from_environment
    from agentstudy.protocol.arm_names import namer
    from agentstudy.protocol.fault_schedule import parse_fault_schedule
    from agentstudy.runners.http_request import REHEARSAL_KEY, HttpRunRequest
    from agentstudy.runners.minimal_http import run_http_study
    try:
        key = REHEARSAL_KEY if rehearsal else api_key_from_environment(os.environ)
    except ApiKeyError as error:
        fail(str(error))
    check_new_output("--output", output, (*roots.values(), project_root()))
    request = HttpRunRequest(
        loaded=loaded, mode=mode, roots=roots, output=output, model=model, prices=prices, cap_usd=cap,
        api_key=key, base_url=base_url, mcp=spec, rehearsal=rehearsal, nominal_prices=rehearsal,
        forbidden_output_roots=(project_root(),),
        progress=progress_for_terminal(namer(loaded.arms.labels() if loaded.arms else None, spec.name)),
        containment=containment, parent_env=dict(os.environ), pilot=size,
        concurrency=concurrency, attempt_budget_usd=attempt_budget_usd,
        executor="ray" if executor == "ray" else "local", ray_address=ray_address, sequential=sequential,
        retry=retry,
        keep_transcripts=keep_transcripts,
        continuation=continuation,
        control_mcp=control_mcp,
    )
    if not rehearsal:
        return run_and_summarise(lambda: run_http_study(request))
    schedule = None if faults is None else parse_fault_schedule(faults)
    from agentstudy.rehearsal.messages_server import RehearsalServer  # starlette and uvicorn: a rehearsal's own

    with RehearsalServer(latency_ms=latency_ms, faults=schedule) as server:
        return run_and_summarise(lambda: run_http_study(replace(request, base_url=server.base_url)))
