"""How fast ``agentstudy view`` serves the study page of a large ledger (issue 43: ≤ 2 s at 5,000 observations).

``python -m bench.bench_view [--observations 5000] [--rounds 5]`` writes a sealed ledger with
:mod:`bench.large_ledger`, starts ``agentstudy view LEDGER`` and times, over HTTP on 127.0.0.1:

- *cold*: the study page right after the ledger's modification time changed (the view reads, verifies and
  analyses the whole ledger again, then renders: what a page costs while a run is writing its ledger);
- *warm*: the study page with nothing changed (rendered from the study as last read);
- *state*: the live state the page's script polls, with nothing changed.

and, in this process, the CPU seconds of one cold study page (read, verify, render; without the first screen,
which the view computes in the background): the steadier figure on a shared machine.

Prints one JSON line per measure (min / median / max seconds); nothing here asserts a number.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.common import load_average
from bench.large_ledger import write_large_ledger


def _get(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as answer:
        size = len(answer.read())
    return time.perf_counter() - started, size


def _in_process(ledger: Path, rounds: int) -> None:
    from agentstudy.report.observed import load_observed
    from agentstudy.web.study_page import ViewOptions, study_page

    cpu, wall = [], []
    for _ in range(rounds):
        started, ticks = time.perf_counter(), time.process_time()
        study_page(load_observed([ledger], allow_unverified=True), ViewOptions("bench"), "")
        cpu.append(time.process_time() - ticks)
        wall.append(time.perf_counter() - started)
    print(json.dumps({"measure": "cold study page in process (read, verify, render)",
                      "cpuSeconds": [round(min(cpu), 3), round(statistics.median(cpu), 3), round(max(cpu), 3)],
                      "seconds": [round(min(wall), 3), round(statistics.median(wall), 3), round(max(wall), 3)],
                      "load": load_average()[:1]}))


def main() -> None:
    """Command line: the ledger's size and the rounds per measure."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--observations", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        ledger = Path(scratch) / "ledger.json"
        size = write_large_ledger(ledger, args.observations)
        _in_process(ledger, args.rounds)
        agentstudy = str(Path(sys.executable).with_name("agentstudy"))
        started = time.perf_counter()
        view = subprocess.Popen([agentstudy, "view", str(ledger)], stdout=subprocess.PIPE, text=True)
        try:
            assert view.stdout is not None
            url = view.stdout.readline().strip()
            ready = time.perf_counter() - started
            base, token = url.split("?", 1)
            print(json.dumps({"measure": "start (first read, analysis, URL printed)", "seconds": round(ready, 3)}))
            measures: dict[str, list[float]] = {"cold study page": [], "warm study page": [], "live state": []}
            page_bytes = 0
            for round_number in range(args.rounds):
                os.utime(ledger, ns=(time.time_ns(), time.time_ns() + round_number))
                seconds, page_bytes = _get(url)
                measures["cold study page"].append(seconds)
                measures["warm study page"].append(_get(url)[0])
                measures["live state"].append(_get(f"{base}state?{token}")[0])
            for name, values in measures.items():
                print(json.dumps({"measure": name, "observations": args.observations, "ledgerBytes": size,
                                  "pageBytes": page_bytes, "min": round(min(values), 3),
                                  "median": round(statistics.median(values), 3), "max": round(max(values), 3),
                                  "load": load_average()[:1]}))
        finally:
            view.terminate()
            view.wait(timeout=30)


if __name__ == "__main__":
    main()
