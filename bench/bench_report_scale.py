"""Scale of ``report`` (every format) and ``power`` on large generated ledgers: wall time and peak RSS.

``python -m bench.bench_report_scale [--observations 5000 --observations 50000] [--output FILE]``
writes each ledger with :mod:`bench.large_ledger` (verifying, sealed), then runs
``agentstudy report LEDGER --format text|md|html|json`` and ``agentstudy power LEDGER`` once each
under ``/usr/bin/time -v`` and records elapsed seconds, user+system CPU seconds and the maximum
resident set size (MB), with the load average before each command (the machine is shared).
Nothing here asserts a number; the goal (60 s and 2 GB at 50,000 observations) is read off the table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.large_ledger import write_large_ledger

COMMANDS: tuple[tuple[str, list[str]], ...] = (
    ("report text", ["report", "--format", "text"]), ("report md", ["report", "--format", "md"]),
    ("report html", ["report", "--format", "html"]), ("report json", ["report", "--format", "json"]),
    ("power", ["power"]),
)


def _measure(ledger: Path, name: str, args: list[str]) -> dict[str, Any]:
    """One command under ``/usr/bin/time -v``: its exit code, seconds, CPU seconds, peak RSS (MB), load."""
    agentstudy = str(Path(sys.executable).with_name("agentstudy"))
    load = os.getloadavg()[0]
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
            "outputBytes": len(done.stdout.encode("utf-8")), "loadBefore": round(load, 2)}


def main() -> None:
    """Command line: the ledgers' sizes and the results file."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--observations", type=int, action="append")
    parser.add_argument("--output", type=Path, default=Path("bench/results-report-scale.json"))
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for count in args.observations or [5_000, 50_000]:
            ledger = Path(scratch) / f"ledger-{count}.json"
            size = write_large_ledger(ledger, count)
            for name, command in COMMANDS:
                row = {"observations": count, "ledgerBytes": size, **_measure(ledger, name, command)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    document = {"cores": os.cpu_count(), "python": sys.version.split()[0], "rows": rows}
    args.output.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
