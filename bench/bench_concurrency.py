"""Throughput of ``--concurrency N`` (issue 19): the bundled full study in rehearsal at N = 1, 2, 4, 8.

Each run is ``agentstudy minimal --run --rehearsal --transport cli`` on the example study (36
attempts, the pinned Claude Code, containment on: bubblewrap) with ``--rehearsal-latency-ms``
(default 1500: the scripted server answers every request after 1.5 s, the regime of a real
model). Measured per N: wall time of the whole command (preflight included), the speedup over
N = 1, and the peak resident memory of the command's whole process tree (the sum of every
process's RSS, sampled from ``/proc`` every 0.25 s); beside them the CPU floor of the run (CPU-seconds
of every process it started, over the cores), the efficiency (floor / wall) and the CPU per attempt
by role — ours (driver, containment, export) beside the agent's (``bench.cpu_accounting``). Each
run's ledger must verify and hold 36 completed observations, else the row says what went wrong.
Nothing is asserted.

Run: ``.venv/bin/python -m bench.bench_concurrency [--latency-ms 1500] [--levels 1,2,4,8] [--output F]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.rehearsal.example_study import build_example_study
from bench.cpu_accounting import TreeSampler, become_subreaper, children_cpu_seconds, reap_orphans

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def _tree_rss_bytes(root: int) -> int:
    """The summed RSS (bytes) of ``root`` and every descendant, from ``/proc``."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            statm = Path(f"/proc/{entry}/statm").read_text().split()
        except OSError:
            continue
        parents[int(entry)] = int(stat[1])
        rss[int(entry)] = int(statm[1]) * PAGE_BYTES
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid and child not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(rss.get(pid, 0) for pid in tree)


def run_level(level: int, latency_ms: int, scratch: Path) -> dict[str, Any]:
    """One full rehearsal at concurrency ``level``: wall seconds, peak tree RSS (MB), the ledger's verdict."""
    study = build_example_study(scratch / f"study-{level}")
    ledger = scratch / f"ledger-{level}.json"
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    command = [sys.executable, "-m", "agentstudy", "minimal", "--manifest", str(study.manifest_path), "--run",
               "--rehearsal", "--transport", "cli", *roots, "--output", str(ledger), "--model", "claude-haiku-5-5",
               "--budget-usd", "10", "--concurrency", str(level), "--rehearsal-latency-ms", str(latency_ms)]
    peak = 0
    load_before = os.getloadavg()[0]
    become_subreaper()
    cpu_before = children_cpu_seconds()
    started = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree = TreeSampler(child.pid)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_bytes(child.pid))
            tree.sample()
            done.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = child.communicate()
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    reap_orphans()
    cpu = children_cpu_seconds() - cpu_before
    floor = cpu / (os.cpu_count() or 1)
    row: dict[str, Any] = {"concurrency": level, "wallSeconds": round(wall, 2), "peakRssMb": round(peak / 2**20, 1),
                           "cpuSeconds": round(cpu, 2), "cpuFloorSeconds": round(floor, 2),
                           "efficiency": round(floor / wall, 3) if wall > 0 else None,
                           "cpuSecondsByRole": {role: round(s, 2) for role, s in sorted(tree.by_role().items())},
                           "exitCode": child.returncode, "loadAverage1mBefore": round(load_before, 2),
                           "loadAverage1mAfter": round(os.getloadavg()[0], 2)}
    if not ledger.exists():
        row["problem"] = stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no ledger"]
        return row
    data = ledger.read_bytes()
    document = json.loads(data)
    row["completed"] = sum(o["status"] == "completed" for o in document["observations"])
    attempts = len(document["observations"]) or 1
    row["cpuSecondsPerAttempt"] = {role: round(s / attempts, 3) for role, s in row["cpuSecondsByRole"].items()}
    row["problems"] = list(verify_ledger_bytes(data).problems)
    return row


def main(argv: list[str] | None = None) -> int:
    """Run every level in turn, print a Markdown table, optionally write the rows as JSON; exit 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--latency-ms", type=int, default=1500)
    parser.add_argument("--levels", default="1,2,4,8")
    parser.add_argument("--output", type=Path)
    options = parser.parse_args(argv)
    levels = [int(level) for level in options.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as scratch:
        rows = [run_level(level, options.latency_ms, Path(scratch)) for level in levels]
    base = next((row["wallSeconds"] for row in rows if row["concurrency"] == 1), None)
    print(f"| N | wall (s) | speedup over N = 1 | CPU floor (s) | efficiency | CPU s per attempt: ours "
          f"(driver / containment / export) / agent | peak RSS (MB) | completed | ledger problems |   "
          f"(latency {options.latency_ms} ms, {os.cpu_count()} cores)")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        speedup = f"{base / row['wallSeconds']:.2f}x" if base else "n/a"
        row["speedup"] = speedup
        verdict = len(row["problems"]) if "problems" in row else row.get("problem")
        per = row.get("cpuSecondsPerAttempt", {})
        split = " / ".join(f"{per.get(role, 0.0):.3f}" for role in ("driver", "containment", "export", "agent"))
        print(f"| {row['concurrency']} | {row['wallSeconds']} | {speedup} | {row['cpuFloorSeconds']} | "
              f"{row['efficiency']} | {split} | {row['peakRssMb']} | {row.get('completed', '-')} | {verdict} |")
    if options.output is not None:
        options.output.write_text(json.dumps({"latencyMs": options.latency_ms, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
