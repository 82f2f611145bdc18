"""Containment cost: a full attempt under bubblewrap against the same attempt under ``restricted``.

Both sides are one ``transports.cli.run_cli_attempt`` of the example study's pilot attempt of
each arm (``repository-only`` and ``doc-bridge-mcp``), real binary, the pilot's scripted
Messages API server on 127.0.0.1, the same settings but ``containment``:

- ``bwrap`` (the default): the child, and in the MCP arm the server it starts, run under
  bubblewrap (``io.containment.contain``: new namespaces, read-only binds of the export, the
  agent's install and what the server needs, private HOME and TMPDIR);
- ``restricted``: the same argv without bwrap; only Claude Code's own ``--restricted``
  confinement of its file tools holds.

All four methods (two arms × two modes) are interleaved in one set of rounds with the same
repeat count, so a drift in the machine's load hits every one alike. Each timing covers the
whole ``run_cli_attempt`` (export, private directories, spawn, stream evaluation, clean-up);
the attempt is settled untimed (``pricing.budget.settle_attempt``) and its status recorded,
and every run's API requests to the server are counted: both modes must end ``completed``
having made the same number of requests, or the comparison says so (``checks``).

A micro row shows bwrap's fixed cost: ``bwrap <the MCP attempt's view> -- /usr/bin/true``
(the same bwrap command line an MCP attempt gets, with ``/usr/bin/true`` for the agent; its
export and private directories made once, untimed) against ``/usr/bin/true`` itself, both
with the attempt's environment, stdin closed, output captured.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentstudy.agents.registry import agent_cli
from agentstudy.io.containment import ContainmentError, ContainmentMode, bwrap_argv, check_containment, find_bwrap
from agentstudy.io.export import export_pinned_corpus, remove_export
from agentstudy.pricing.budget import reservation_for, settle_attempt
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.demo import DEMO_ATTEMPT_BUDGET_USD
from agentstudy.transports.cli import CliAttemptResult, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools, child_environment
from agentstudy.transports.cli_isolation import attempt_view
from bench.common import Skipped, Timer, interleave, ratio, timed
from bench.pilot import Pilot

MODES: tuple[ContainmentMode, ...] = ("bwrap", "restricted")
TRUE = "/usr/bin/true"


def run(pilot: Pilot, repeats: int, micro_repeats: int) -> dict[str, Any]:
    """Time each pilot attempt under both modes (interleaved), then the ``/usr/bin/true`` row; the JSON section."""
    parent_env = dict(os.environ)
    try:
        proven = check_containment("bwrap", parent_env)
    except ContainmentError as error:
        raise Skipped(f"skipped: {error}") from None
    return {
        "bwrap": proven,
        "arms": _attempts(pilot, parent_env, repeats),
        "true_micro": _micro(pilot, parent_env, micro_repeats),
    }


def _attempts(pilot: Pilot, parent_env: dict[str, str], repeats: int) -> dict[str, Any]:
    manifest = pilot.loaded.manifest
    reservation = reservation_for(DEMO_ATTEMPT_BUDGET_USD)
    statuses: dict[str, list[str]] = {}
    requests_per_run: dict[str, list[int]] = {}

    def method(entry: ScheduleEntry, mode: ContainmentMode) -> Timer:
        settings = replace(pilot.settings, containment=mode)
        key = f"{mode}/{entry.scenario}"

        def run_once() -> float:
            done: list[CliAttemptResult] = []
            before = len(pilot.server.requests)

            def attempt() -> None:
                done.append(run_cli_attempt(
                    settings,
                    agent=agent_cli(settings.agent),
                    scenario=entry.scenario,
                    tools=arm_tools(entry.scenario, settings.mcp, pilot.extra_denied),
                    root=pilot.study.roots[entry.repository],
                    pin=manifest.repositories[entry.repository],
                    prompt=study_prompt(manifest.task(entry.task_id).question),
                    reservation_usd=reservation,
                    parent_env=parent_env,
                    server=pilot.server_paths(entry),
                ))

            elapsed = timed(attempt)
            requests_per_run.setdefault(key, []).append(len(pilot.server.requests) - before)
            result = done[0]
            computed = result.computed_cost.usd if result.computed_cost else None
            status, _ = settle_attempt(result.status, reservation, result.reported_cost_usd, computed)
            statuses.setdefault(key, []).append(status)
            return elapsed

        return run_once

    methods = {f"{mode}/{entry.scenario}": method(entry, mode) for entry in pilot.schedule for mode in MODES}
    stats = interleave(methods, dict.fromkeys(methods, repeats))
    arms: dict[str, Any] = {}
    for entry in pilot.schedule:
        scenario = entry.scenario
        keys = [f"{mode}/{scenario}" for mode in MODES]
        bwrap, restricted = stats[keys[0]], stats[keys[1]]
        counts = {key: sorted(set(requests_per_run[key])) for key in keys}
        seen = {key: sorted(set(statuses[key])) for key in keys}
        arms[scenario] = {
            "task": entry.task_id,
            "repository": entry.repository,
            "bwrap": bwrap.to_json(),
            "restricted": restricted.to_json(),
            "overhead_ms_median": round((bwrap.median - restricted.median) * 1000, 1),
            "ratio_bwrap_to_restricted": ratio(bwrap, restricted),
            "statuses": seen,
            "api_requests_per_run": counts,
            "checks": {
                "all_completed": all(status == "completed" for key in keys for status in statuses[key]),
                "same_api_requests": len({n for key in keys for n in requests_per_run[key]}) == 1,
            },
        }
    return arms


def _micro(pilot: Pilot, parent_env: dict[str, str], repeats: int) -> dict[str, Any]:
    bwrap = find_bwrap()
    if bwrap is None:  # check_containment proved it a moment ago
        raise Skipped("skipped: bubblewrap (bwrap) is not installed")
    entry = next(e for e in pilot.schedule if e.scenario == DOC_BRIDGE_MCP)
    pin = pilot.loaded.manifest.repositories[entry.repository]
    export = export_pinned_corpus(pilot.study.roots[entry.repository], pin)
    scratch = Path(tempfile.mkdtemp(prefix="agentstudy-bench-true-"))
    try:
        home, tmp = scratch / "home", scratch / "tmp"
        home.mkdir()
        tmp.mkdir()
        settings = pilot.settings
        env = child_environment(parent_env, home=str(home), tmpdir=str(tmp), base_url=settings.base_url,
                                auth_token=settings.auth_token)
        view = attempt_view(settings, export.path, home, tmp, env.get("PATH"))
        sandboxed = bwrap_argv(bwrap, view, [TRUE])
        failures: list[str] = []

        def method(argv: list[str], cwd: Path) -> Timer:
            def call() -> None:
                done = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                                      check=False)
                if done.returncode != 0:
                    failures.append(f"{argv[0]} exit {done.returncode}")

            return lambda: timed(call)

        stats = interleave({"bwrap_true": method(sandboxed, scratch), "true": method([TRUE], export.path)},
                           {"bwrap_true": repeats, "true": repeats})
    finally:
        remove_export(export.path)
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        "view": f"the {entry.scenario} attempt's ({len(view.read_only)} read-only paths, "
        f"{len(view.writable)} writable)",
        "bwrap_argv_length": len(sandboxed),
        "bwrap_true": stats["bwrap_true"].to_json(),
        "true": stats["true"].to_json(),
        "overhead_ms_median": round((stats["bwrap_true"].median - stats["true"].median) * 1000, 2),
        "ratio_bwrap_true_to_true": ratio(stats["bwrap_true"], stats["true"]),
        "failures": sorted(set(failures)),
    }
