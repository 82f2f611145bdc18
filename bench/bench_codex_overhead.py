"""Codex attempt overhead (issue 21): our contained Codex attempt against a bare ``codex exec`` with the same arguments.

Both run the real pinned Codex CLI (0.171.0) against the same scripted Responses API server
(``rehearsal.responses_server``, 127.0.0.1) on the example study's pilot (one attempt per scenario),
interleaved round by round, N repetitions each (``--repeats``).

- ours, timed as a whole: ``transports.cli.run_cli_attempt`` with the settings of
  ``agentstudy minimal --agent codex --rehearsal`` (fresh read-only export of the pinned corpus,
  private HOME, TMPDIR and CODEX_HOME outside any temp dir with the generated ``config.toml``,
  the child under bubblewrap — the default containment — as uid 65534 with Codex's own sandbox
  nested, bounded, the running-usage watcher, then ``evaluate_codex_attempt``: the strict stream
  checks and the OpenAI price; private directories removed), then ``pricing.budget.settle_attempt``;
- bare: ``subprocess.run`` of the same argv (``transports.codex_args.codex_arguments``, ``-C`` the
  corpus checkout itself) with the same ``config.toml`` (``transports.codex.codex_config``) in a
  fresh CODEX_HOME and the same environment (``codex_environment``), all made and removed untimed,
  no bubblewrap, stdin closed, stdout and stderr captured.

In the MCP arm both hand the server the same read-only snapshot of the pinned corpus (made once,
untimed). The ledger checkpoints around an attempt are not included (``bench_checkpoint`` measures
them). Each run's model requests to the server are counted, to show both sides did the same work.
Load averages are recorded before and after: the machine is shared. Run it with
``.venv/bin/python -m bench.bench_codex_overhead [--repeats N]``; it writes
``bench/results-codex-overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentstudy.agents.codex import CODEX_LOOKUP
from agentstudy.agents.registry import agent_cli
from agentstudy.io.agent_binary import AgentBinaryError, find_agent_binary
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.pricing.budget import reservation_for, settle_attempt
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, LoadedManifest, load_manifest
from agentstudy.protocol.prompt import study_prompt
from agentstudy.protocol.schedule import ScheduleEntry, build_schedule
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.responses_server import REHEARSAL_KEY, REHEARSAL_KEY_ENV, ResponsesRehearsalServer
from agentstudy.runners.demo import DEMO_ATTEMPT_BUDGET_USD
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER, check_mcp_servers, mcp_corpora
from agentstudy.transports.cli import CliAttemptBody, CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import arm_tools
from agentstudy.transports.codex import codex_config
from agentstudy.transports.codex_args import REHEARSAL_MODEL, codex_arguments, codex_environment
from bench.common import PROJECT_ROOT, Skipped, Timer, interleave, load_average, machine, ratio, timed

DEFAULT_OUTPUT = PROJECT_ROOT / "bench" / "results-codex-overhead.json"
HOME_ROOT = PROJECT_ROOT / ".codex-scratch" / "bench"
"""Where both sides' private homes are made: inside the checkout (git-ignored), never a temp dir."""
TARGET_RATIO = 1.15


@dataclass(frozen=True)
class CodexPilot:
    """The example study, the running scripted Responses server, the Codex settings of a rehearsal, the
    pilot's two entries and the MCP server's corpus snapshots (open until exit)."""

    study: ExampleStudy
    loaded: LoadedManifest
    schedule: tuple[ScheduleEntry, ...]
    server: ResponsesRehearsalServer
    settings: CliSettings
    extra_denied: tuple[str, ...]
    corpora: ServerCorpora


def codex_binary() -> Path:
    """The pinned Codex CLI (``.tools/codex``, as ``--agent codex`` finds it); ``Skipped`` when there is none."""
    try:
        return find_agent_binary(CODEX_LOOKUP, None, os.environ)
    except AgentBinaryError as error:
        raise Skipped(f"skipped: {error}") from None


@contextmanager
def codex_pilot() -> Iterator[CodexPilot]:
    """Build the example study, start the Responses server, verify the MCP server once; clean up on exit."""
    binary = codex_binary()
    HOME_ROOT.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agentstudy-bench-codex-") as name, \
            ResponsesRehearsalServer() as server:
        study = build_example_study(Path(name) / "study")
        loaded = load_manifest(study.manifest_path)
        settings = CliSettings(binary=binary, model=REHEARSAL_MODEL, mcp=DEFAULT_MCP_SERVER,
                               rehearsal_base_url=server.provider_base_url, agent="codex",
                               agent_home_root=HOME_ROOT)
        schedule = build_schedule(loaded.manifest, "pilot")
        with mcp_corpora(DEFAULT_MCP_SERVER, loaded.manifest, schedule, study.roots) as corpora:
            mcp = check_mcp_servers(DEFAULT_MCP_SERVER, corpora, settings.containment, dict(os.environ))
            yield CodexPilot(study, loaded, schedule, server, settings, tuple(mcp.extra_denied), corpora)


def _methods(pilot: CodexPilot, entry: ScheduleEntry, statuses: dict[str, set[str]],
             requests: dict[str, list[int]]) -> dict[str, Timer]:
    """``ours`` and ``bare_codex`` for ``entry``, each recording its status and its model requests per run."""
    manifest, parent_env = pilot.loaded.manifest, dict(os.environ)
    reservation = reservation_for(DEMO_ATTEMPT_BUDGET_USD)
    tools = arm_tools(entry.scenario, pilot.settings.mcp, pilot.extra_denied)
    prompt = study_prompt(manifest.task(entry.task_id).question)
    server_paths = pilot.corpora.paths(entry.repository) if entry.scenario == DOC_BRIDGE_MCP else None
    root = pilot.study.roots[entry.repository]

    def counted(key: str, timer: Timer) -> Timer:
        def run_once() -> float:
            before = len(pilot.server.requests)
            elapsed = timer()
            requests.setdefault(key, []).append(len(pilot.server.requests) - before)
            return elapsed
        return run_once

    def ours() -> float:
        def attempt() -> None:
            result = run_cli_attempt(pilot.settings, agent=agent_cli(pilot.settings.agent), scenario=entry.scenario,
                                     tools=tools, root=root, pin=manifest.repositories[entry.repository], prompt=prompt,
                                     reservation_usd=reservation, parent_env=parent_env, server=server_paths)
            computed = result.computed_cost.usd if result.computed_cost else None
            status, _ = settle_attempt(result.status, reservation, result.reported_cost_usd, computed)
            statuses.setdefault(f"ours/{entry.scenario}", set()).add(status)
        return timed(attempt)

    config = codex_config(CliAttemptBody(pilot.settings, entry.scenario, tools, prompt, reservation, server_paths,
                                         parent_env, agent=agent_cli(pilot.settings.agent)))
    argv = [str(pilot.settings.binary), *codex_arguments(export_dir=str(root), prompt=prompt)]

    def bare() -> float:
        scratch = Path(tempfile.mkdtemp(prefix="bare-", dir=HOME_ROOT))
        home, tmp, codex_home = scratch / "home", scratch / "tmp", scratch / "codex-home"
        for directory in (home, tmp, codex_home):
            directory.mkdir(mode=0o700)
        (codex_home / "config.toml").write_text(config, encoding="utf-8")
        env = codex_environment(parent_env, home=str(home), tmpdir=str(tmp), codex_home=str(codex_home),
                                provider_key=(REHEARSAL_KEY_ENV, REHEARSAL_KEY))
        done: list[subprocess.CompletedProcess[bytes]] = []

        def call() -> None:
            done.append(subprocess.run(argv, env=env, cwd=root, stdin=subprocess.DEVNULL, capture_output=True,
                                       check=False))

        elapsed = timed(call, lambda: shutil.rmtree(scratch, ignore_errors=True))
        last = done[0].stdout.rstrip(b"\n").rsplit(b"\n", 1)[-1]
        ok = done[0].returncode == 0 and b'"type":"turn.completed"' in last
        statuses.setdefault(f"bare_codex/{entry.scenario}", set()).add("turn.completed" if ok else
                                                                       f"exit {done[0].returncode}")
        return elapsed

    return {"ours": counted(f"ours/{entry.scenario}", ours),
            "bare_codex": counted(f"bare_codex/{entry.scenario}", bare)}


def run(pilot: CodexPilot, repeats: int) -> dict[str, Any]:
    """One untimed warm-up run of each method, then ``repeats`` interleaved runs each, per pilot attempt."""
    section: dict[str, Any] = {}
    for entry in pilot.schedule:
        statuses: dict[str, set[str]] = {}
        requests: dict[str, list[int]] = {}
        methods = _methods(pilot, entry, statuses, requests)
        for method in methods.values():
            method()  # warm-up: page cache, the MCP server's first start, Codex's helper binaries
        statuses.clear()
        requests.clear()
        stats = interleave(methods, {"ours": repeats, "bare_codex": repeats})
        section[entry.scenario] = {
            "task": entry.task_id,
            "repository": entry.repository,
            "ours": stats["ours"].to_json(),
            "bare_codex": stats["bare_codex"].to_json(),
            "overhead_ms_median": round((stats["ours"].median - stats["bare_codex"].median) * 1000, 1),
            "ratio_ours_to_bare_codex": ratio(stats["ours"], stats["bare_codex"]),
            "target_ratio_ours_to_bare_codex_max": TARGET_RATIO,
            "met": ratio(stats["ours"], stats["bare_codex"]) <= TARGET_RATIO,
            "statuses": {key: sorted(value) for key, value in statuses.items()},
            "model_requests_per_run": {key: sorted(set(value)) for key, value in requests.items()},
        }
    return section


def _first_line(argv: list[str]) -> str | None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else None


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Run the benchmark and write its JSON (``--output``); 0, or 2 when Codex is not installed."""
    parser = argparse.ArgumentParser(prog="bench.bench_codex_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="timed runs of each method per scenario")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    try:
        binary = codex_binary()
    except Skipped as skipped:
        out(str(skipped))
        return 2
    started = datetime.now(UTC).isoformat(timespec="seconds")
    facts = machine()
    with codex_pilot() as pilot:
        results = run(pilot, args.repeats)
    document = {
        "benchmark": "codex attempt overhead (issue 21)",
        "started_at": started,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "repeats": args.repeats,
        "machine": {**facts, "load_average_at_end": load_average()},
        "versions": {"codex": _first_line([str(binary), "--version"]), "python": sys.version.split()[0],
                     "bubblewrap": _first_line(["bwrap", "--version"])},
        "results": results,
    }
    args.output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    for scenario, section in results.items():
        out(f"{scenario}: ours {section['ours']['median_s']:.3f} s, bare codex exec "
            f"{section['bare_codex']['median_s']:.3f} s (median of {args.repeats}), ratio "
            f"{section['ratio_ours_to_bare_codex']:.3f} (target <= {TARGET_RATIO}), statuses {section['statuses']}")
    out(f"load average at start {facts['load_average_at_start']}, at end {document['machine']['load_average_at_end']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
