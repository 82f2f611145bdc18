"""Throughput of ``agentstudy run --concurrency N`` (issue 19, item 1): the controlled example at N = 1, 2, 4, 8.

Each run is ``agentstudy run`` on the controlled example study (12 executions, the scripted
rehearsal provider as the child) with the provider answering after ``--latency-ms`` (default 1500,
the regime of a real model), then ``adjudicate-controlled`` at the same N with the scripted
adjudicator paced alike. Measured per N: wall time of each command and the speedup over N = 1.
Each output ledger must verify and hold 12 observations, else the row says what went wrong.
Nothing is asserted.

Run: ``.venv/bin/python -m bench.bench_controlled_concurrency [--latency-ms 1500] [--levels 1,2,4,8]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentstudy.rehearsal.controlled.example import build_controlled_example


def _timed(command: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env={**os.environ}, check=False)
    return time.perf_counter() - started, done.returncode


def _observations(path: Path) -> int:
    return len(json.loads(path.read_text(encoding="utf-8")).get("observations", []))


def main(argv: list[str] | None = None) -> int:
    """Run the levels and print one JSON object (rows of N, seconds, speedup)."""
    parser = argparse.ArgumentParser(prog="bench_controlled_concurrency")
    parser.add_argument("--latency-ms", type=int, default=1500)
    parser.add_argument("--levels", default="1,2,4,8")
    options = parser.parse_args(argv)
    levels = [int(level) for level in options.levels.split(",")]
    pace = ("--latency-ms", str(options.latency_ms))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agentstudy-bench-controlled-") as scratch:
        base = Path(scratch)
        example = build_controlled_example(base / "study", provider_args=pace, adjudicator_args=pace)
        agentstudy = [sys.executable, "-m", "agentstudy"]
        for level in levels:
            ledger, judged = base / f"ledger-{level}.json", base / f"judged-{level}.json"
            run_s, run_rc = _timed([*agentstudy, "run", str(example.plan), str(example.suite), "--providers",
                                    str(example.providers), "--repositories", str(example.repositories),
                                    "--ledger", str(ledger), "--concurrency", str(level)])
            judge_s, judge_rc = _timed([*agentstudy, "adjudicate-controlled", str(ledger), str(example.suite),
                                        "--adjudicator", str(example.providers), "--output", str(judged),
                                        "--concurrency", str(level)])
            verified = all(_timed([*agentstudy, "ledger", str(path)])[1] == 0 for path in (ledger, judged))
            ok = run_rc == 0 and judge_rc == 0 and verified and _observations(judged) == 12
            rows.append({"concurrency": level, "runSeconds": round(run_s, 2), "adjudicateSeconds": round(judge_s, 2),
                         "ok": ok})
    first = rows[0]
    for row in rows:
        row["runSpeedup"] = round(first["runSeconds"] / row["runSeconds"], 2)
        row["adjudicateSpeedup"] = round(first["adjudicateSeconds"] / row["adjudicateSeconds"], 2)
    print(json.dumps({"latencyMs": options.latency_ms, "executions": 12, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
