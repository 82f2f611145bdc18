"""What a 429 schedule costs a run (issue 33): the full example study over http at N = 4, with and without faults.

Each run is the bundled study's 36 attempts in rehearsal (``runners.minimal_http.run_http_study``,
the Messages API loop against the scripted server on 127.0.0.1, ``--concurrency 4``,
``--rehearsal-latency-ms`` default 300) once with no faults and once with ``--rehearsal-faults``
(default ``10%:429,seed=1``: one request in ten refused with ``retry-after: 1``). Measured per run:
wall time of the study (preflight included), requests the server saw and how many it refused,
the retries and retry wait the ledger counts, the run-wide back-off pauses, and the ledger's
status. The claim to read off: the extra wall time is about the back-off pauses (not more), and
the extra requests are exactly the retries. Nothing is asserted.

Run: ``.venv/bin/python -m bench.bench_backoff [--faults SPEC] [--latency-ms 300] [--output F]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.io.ledger_journal import read_ledger
from agentstudy.pricing.http import rehearsal_prices
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.http_request import REHEARSAL_KEY, HttpRunRequest
from agentstudy.runners.minimal_http import run_http_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER

MODEL = "claude-haiku-5-5"


def _run(faults: str | None, latency_ms: int, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-backoff-") as tmp:
        study = build_example_study(Path(tmp) / "study")
        output = Path(tmp) / "ledger.json"
        schedule = None if faults is None else parse_fault_schedule(faults)
        with RehearsalServer(latency_ms=latency_ms, faults=schedule) as server:
            request = HttpRunRequest(
                loaded=load_manifest(study.manifest_path), mode="full", roots=study.roots, output=output,
                model=MODEL, prices=rehearsal_prices(MODEL), cap_usd=Decimal("10"), api_key=REHEARSAL_KEY,
                base_url=server.base_url, mcp=DEFAULT_MCP_SERVER, rehearsal=True, nominal_prices=True,
                concurrency=concurrency, attempt_budget_usd=Decimal("0.10"))
            started = time.monotonic()
            summary = run_http_study(request)
            wall_s = time.monotonic() - started
            log = server.requests
        ledger = json.loads(read_ledger(output, output.read_bytes()).data)
    observations = ledger["observations"]
    pauses = ledger.get("backoffPauses", [])
    return {
        "faults": faults, "concurrency": concurrency, "latencyMs": latency_ms, "status": summary.status,
        "attempts": len(observations), "completed": sum(o["status"] == "completed" for o in observations),
        "wallS": round(wall_s, 2), "requestsSeen": len(log), "requestsRefused": sum(r.fault is not None for r in log),
        "apiRetries": sum(o.get("apiRetries", 0) for o in observations),
        "apiRetryWaitS": round(sum(o.get("apiRetryWaitMs", 0) for o in observations) / 1000, 2),
        "backoffPauses": len(pauses),
    }


def main() -> None:
    """Run both configurations and print (and optionally write) the rows as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--faults", default="10%:429,seed=1")
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    rows = [_run(None, args.latency_ms, args.concurrency), _run(args.faults, args.latency_ms, args.concurrency)]
    text = json.dumps(rows, indent=2) + "\n"
    print(text, end="")
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
