"""Benchmark: evaluate a ~4 MiB stream-json transcript (the stdout bound) end to end.

Run: ``.venv/bin/python bench/bench_stream.py``. Builds the transcript by repeating the middle
events of a real Claude Code 2.1.296 transcript (fresh message and tool ids each round), then
times ``transports.cli_evaluation.evaluate_cli_attempt`` — the code path shared by the runner
and ``agentstudy transcript``: decode, parse, setup checks, pricing, outcome. Prints the size
and the best and median of 7 timings; no assertion, speed is tracked here and never in tests.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from agentstudy.stream.outcome import ProcessFacts
from agentstudy.transports.cli_args import ArmTools
from agentstudy.transports.cli_evaluation import evaluate_cli_attempt

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
TRANSCRIPT = TRANSCRIPTS / "15-mcp-calls-dontAsk.stdout.jsonl"
LIMIT = 4 * 1024 * 1024
MCP_NAMES = ("mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get", "mcp__doc-bridge__handoff_resolve")
POLICY = ArmTools(("Read", "Grep", "Glob", *MCP_NAMES), ("Read", "Grep", "Glob", *MCP_NAMES), (), "doc-bridge")


def _renumber(event: dict[str, object], round_number: int) -> dict[str, object]:
    text = json.dumps(event)
    text = text.replace('"msg_fake_', f'"msg_{round_number}_').replace('"toolu_', f'"toolu_{round_number}_')
    value: dict[str, object] = json.loads(text)
    return value


def build_stdout(limit: int = LIMIT) -> bytes:
    """Repeat the middle events of a real transcript until the bytes just fit under ``limit``."""
    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines()
    init, middle, result = lines[0], [json.loads(line) for line in lines[1:-1]], lines[-1]
    body: list[str] = []
    size = len(init) + len(result) + 2
    round_number = 0
    while True:
        batch = [json.dumps(_renumber(event, round_number)) for event in middle]
        extra = sum(len(text.encode("utf-8")) + 1 for text in batch)
        if size + extra > limit:
            break
        body.extend(batch)
        size += extra
        round_number += 1
    return ("\n".join([init, *body, result]) + "\n").encode("utf-8")


def main() -> None:
    """Time the shared evaluation over the synthetic transcript."""
    stdout = build_stdout()
    process = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)
    timings = []
    evaluation = None
    for _ in range(7):
        start = time.perf_counter()
        evaluation = evaluate_cli_attempt(stdout, process, model="claude-haiku-4-5", tools=POLICY)
        timings.append(time.perf_counter() - start)
    assert evaluation is not None
    lines = stdout.count(b"\n")
    print(
        f"{len(stdout) / 1048576:.2f} MiB, {lines} lines, {evaluation.fields['tool_calls']} tool calls, "
        f"status {evaluation.status}: best {min(timings) * 1000:.1f} ms, "
        f"median {statistics.median(timings) * 1000:.1f} ms of 7"
    )


if __name__ == "__main__":
    main()
