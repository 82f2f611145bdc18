"""Scale of ``report`` (every format) and ``power`` on large generated ledgers: CPU seconds and peak RSS.

``python -m bench.bench_report_scale [--observations 5000 --observations 50000] [--only NAME ...]
[--label TEXT] [--append] [--output FILE]`` writes each ledger with :mod:`bench.large_ledger` (verifying,
sealed), then runs ``agentstudy report LEDGER --format text|md|html|json``, ``agentstudy power LEDGER``
(every metric) and ``agentstudy power LEDGER --metric inputTokens --effect 0.9x`` once each under
``/usr/bin/time -v`` and records the child's user+system CPU seconds, its maximum resident set size
(MB), elapsed seconds, the output's size and the load average before and after each command (the
machine is shared, so wall seconds are noisy and CPU seconds are the steadier figure). ``--append``
adds this run (with ``--label``, the git revision and the machine) to the runs already in the results
file. Nothing here asserts a number; the goal (60 CPU-s and 2 GB at 50,000 observations, time linear
in observations) is read off the table in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import PROJECT_ROOT, load_average, machine
from bench.large_ledger import write_large_ledger

COMMANDS: tuple[tuple[str, list[str]], ...] = (
    ("report text", ["report", "--format", "text"]), ("report md", ["report", "--format", "md"]),
    ("report html", ["report", "--format", "html"]), ("report json", ["report", "--format", "json"]),
    ("power", ["power"]), ("power --metric --effect", ["power", "--metric", "inputTokens", "--effect", "0.9x"]),
)


def _measure(ledger: Path, name: str, args: list[str]) -> dict[str, Any]:
    """One command under ``/usr/bin/time -v``: exit code, seconds, CPU seconds, peak RSS (MB), load before/after."""
    agentstudy = str(Path(sys.executable).with_name("agentstudy"))
    before = load_average()
    done = subprocess.run(["/usr/bin/time", "-v", agentstudy, args[0], str(ledger), *args[1:]],
                          capture_output=True, text=True, check=False)

    def field(label: str) -> str:
        match = re.search(rf"{re.escape(label)}: (.+)", done.stderr)
        return match.group(1).strip() if match else "0"

    clock = [float(part) for part in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")]
    seconds = sum(part * 60 ** power for power, part in enumerate(reversed(clock)))
    return {"command": name, "exitCode": done.returncode, "seconds": round(seconds, 2),
            "cpuSeconds": round(float(field("User time (seconds)")) + float(field("System time (seconds)")), 2),
            "peakRssMb": round(int(field("Maximum resident set size (kbytes)")) / 1024, 1),
            "outputBytes": len(done.stdout.encode("utf-8")), "loadBefore": before[:1] and before[0],
            "loadAfter": load_average()[:1] and load_average()[0]}


def _revision() -> str | None:
    done = subprocess.run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "-C", str(PROJECT_ROOT), "status", "--porcelain", "--", "src"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return f"{done.stdout.strip()}{' (src modified)' if dirty else ''}" if done.returncode == 0 else None


def main() -> None:
    """Command line: the ledgers' sizes, which commands, the run's label and the results file."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--observations", type=int, action="append")
    parser.add_argument("--only", action="append", choices=[name for name, _ in COMMANDS])
    parser.add_argument("--label", default="")
    parser.add_argument("--append", action="store_true", help="add this run to the runs in --output")
    parser.add_argument("--output", type=Path, default=Path("bench/results-report-scale.json"))
    args = parser.parse_args()
    run: dict[str, Any] = {"label": args.label, "revision": _revision(),
                           "startedAt": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                           "machine": machine(), "python": sys.version.split()[0], "rows": []}
    with tempfile.TemporaryDirectory() as scratch:
        for count in args.observations or [5_000, 50_000]:
            ledger = Path(scratch) / f"ledger-{count}.json"
            size = write_large_ledger(ledger, count)
            for name, command in COMMANDS:
                if args.only and name not in args.only:
                    continue
                row = {"observations": count, "ledgerBytes": size, **_measure(ledger, name, command)}
                print(json.dumps(row), flush=True)
                run["rows"].append(row)
    run["finishedAt"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    runs: list[dict[str, Any]] = []
    if args.append and args.output.exists():
        runs = json.loads(args.output.read_text()).get("runs", [])
    document = {"description": "report and power on generated ledgers; see bench/bench_report_scale.py",
                "cores": os.cpu_count(), "runs": [*runs, run]}
    args.output.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
