"""Attempt overhead: our full ``cli`` attempt against a bare ``claude -p`` with the same arguments.

Both run the real Claude Code binary against the same scripted Messages API server, on the
example study's pilot (one attempt per scenario), interleaved round by round.

- ours, timed as a whole: the reservation checkpoint (``LedgerFile.checkpoint`` of the run's
  ledger), ``transports.cli.run_cli_attempt`` with the pilot's settings (fresh read-only export
  of the pinned corpus, private HOME and TMPDIR, the child under bubblewrap — the default
  containment — bounded, in its own process group, stream-json evaluation: parse, setup checks,
  costs, outcome; export and private directories removed), then
  ``pricing.budget.settle_attempt``, the observation appended and the second checkpoint;
- bare: ``subprocess.run`` of the same argv (built by the same ``cli_arguments``, ``--restricted``
  included) with the same environment (``child_environment``, a fresh private HOME and TMPDIR
  made and removed untimed), no bwrap, stdin closed, stdout and stderr captured, in the corpus
  checkout itself.

In the MCP arm both hand the server the same read-only snapshot of the pinned corpus (the
pilot's ``ServerCorpora``, made once, untimed). What bubblewrap alone costs is measured by
``bench_containment``.

Each run's API requests to the server are counted, to show both sides did the same work.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from agentstudy.agents.registry import agent_cli
from agentstudy.io.ledger_store import LedgerFile
from agentstudy.pricing.budget import format_max_budget, reservation_for, settle_attempt
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.records import CliObservation, MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.demo import DEMO_ATTEMPT_BUDGET_USD
from agentstudy.transports.cli import run_cli_attempt
from agentstudy.transports.cli_args import arm_tools, child_environment, cli_arguments, mcp_config
from bench.common import Timer, interleave, ratio, timed
from bench.pilot import Pilot


def run(pilot: Pilot, repeats: int) -> dict[str, Any]:
    """Time ours and the bare CLI, interleaved, for each pilot attempt; return the JSON section."""
    manifest = pilot.loaded.manifest
    parent_env = dict(os.environ)
    reservation = reservation_for(DEMO_ATTEMPT_BUDGET_USD)
    ledger = MinimalLedger.model_validate(pilot.ledger)
    templates: dict[str, CliObservation] = {}
    for observation in ledger.observations:
        if isinstance(observation, CliObservation):
            templates[observation.scenario] = observation
    ledger.observations.clear()
    store = LedgerFile(pilot.scratch / "attempt-bench-ledger.json", ledger.to_json())
    requests_per_run: dict[str, list[int]] = {}
    statuses: dict[str, set[str]] = {}

    def counted(name: str, timer: Timer) -> Timer:
        def run_once() -> float:
            before = len(pilot.server.requests)
            elapsed = timer()
            requests_per_run.setdefault(name, []).append(len(pilot.server.requests) - before)
            return elapsed

        return run_once

    def ours(entry: ScheduleEntry) -> Timer:
        settings = pilot.settings
        server = pilot.server_paths(entry)
        key = f"ours/{entry.scenario}"

        def attempt() -> None:
            store.checkpoint(ledger.to_json())
            result = run_cli_attempt(
                settings,
                agent=agent_cli(settings.agent),
                scenario=entry.scenario,
                tools=arm_tools(entry.scenario, pilot.settings.mcp, pilot.extra_denied),
                root=pilot.study.roots[entry.repository],
                pin=manifest.repositories[entry.repository],
                prompt=study_prompt(manifest.task(entry.task_id).question),
                reservation_usd=reservation,
                parent_env=parent_env,
                server=server,
            )
            computed = result.computed_cost.usd if result.computed_cost else None
            status, charged = settle_attempt(result.status, reservation, result.reported_cost_usd, computed)
            ledger.observations.append(
                templates[entry.scenario].model_copy(
                    update={
                        "status": status,
                        "charged_usd": float(charged),
                        "exit_code": result.exit_code,
                        "wall_time_ms": result.wall_time_ms,
                    }
                )
            )
            store.checkpoint(ledger.to_json())
            statuses.setdefault(key, set()).add(status)

        return counted(key, lambda: timed(attempt, ledger.observations.clear))

    def bare(entry: ScheduleEntry) -> Timer:
        root = pilot.study.roots[entry.repository]
        tools = arm_tools(entry.scenario, pilot.settings.mcp, pilot.extra_denied)
        argv = [
            str(pilot.settings.binary),
            *cli_arguments(
                model=pilot.settings.model,
                max_budget_usd=format_max_budget(reservation),
                tools=tools,
                mcp_config_json=mcp_config(entry.scenario, pilot.settings.mcp, pilot.server_paths(entry)),
                prompt=study_prompt(manifest.task(entry.task_id).question),
            ),
        ]
        key = f"bare/{entry.scenario}"

        def run_once() -> float:
            scratch = Path(tempfile.mkdtemp(prefix="agentstudy-bench-bare-"))
            (scratch / "home").mkdir()
            (scratch / "tmp").mkdir()
            env = child_environment(
                parent_env, home=str(scratch / "home"), tmpdir=str(scratch / "tmp"),
                base_url=pilot.settings.base_url, auth_token=pilot.settings.auth_token,
            )
            done: list[subprocess.CompletedProcess[bytes]] = []

            def call() -> None:
                done.append(subprocess.run(argv, env=env, cwd=root, stdin=subprocess.DEVNULL,
                                           capture_output=True, check=False))

            elapsed = timed(call, lambda: shutil.rmtree(scratch, ignore_errors=True))
            last = done[0].stdout.rstrip(b"\n").rsplit(b"\n", 1)[-1]
            ok = done[0].returncode == 0 and b'"type":"result"' in last and b'"is_error":false' in last
            statuses.setdefault(key, set()).add("success" if ok else f"exit {done[0].returncode}")
            return elapsed

        return counted(key, run_once)

    section: dict[str, Any] = {}
    for entry in pilot.schedule:
        stats = interleave({"ours": ours(entry), "bare_cli": bare(entry)}, {"ours": repeats, "bare_cli": repeats})
        section[entry.scenario] = {
            "task": entry.task_id,
            "repository": entry.repository,
            "ours": stats["ours"].to_json(),
            "bare_cli": stats["bare_cli"].to_json(),
            "overhead_ms_median": round((stats["ours"].median - stats["bare_cli"].median) * 1000, 1),
            "ratio_ours_to_bare_cli": ratio(stats["ours"], stats["bare_cli"]),
            "target_ratio_ours_to_bare_cli_max": 1.15,
            "statuses": {key: sorted(value) for key, value in statuses.items() if key.endswith(entry.scenario)},
            "api_requests_per_run": {
                key: sorted(set(value)) for key, value in requests_per_run.items() if key.endswith(entry.scenario)
            },
        }
    return section
