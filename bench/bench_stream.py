"""Benchmark: validate a ~4 MiB stream-json transcript (the stdout bound) end to end.

Run: ``.venv/bin/python bench/bench_stream.py``. Prints the size and the best of 5 timings;
no assertion, speed is tracked here and never in tests.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from agentstudy.stream.setup import SetupExpectations, check_setup
from agentstudy.stream.transcript import parse_transcript

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
TRANSCRIPT = TRANSCRIPTS / "15-mcp-calls-dontAsk.stdout.jsonl"
LIMIT = 4 * 1024 * 1024


def build_lines() -> list[str]:
    """Repeat the middle events of a real transcript until the text reaches ~4 MiB."""
    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines()
    init, middle, result = lines[0], lines[1:-1], lines[-1]
    body: list[str] = []
    size = len(init) + len(result)
    counter = 0
    while size < LIMIT:
        for line in middle:
            event = json.loads(line)
            if event.get("type") == "assistant":
                event["message"]["id"] = f"msg_{counter}"
            counter += 1
            text = json.dumps(event)
            body.append(text)
            size += len(text) + 1
    return [init, *body, result]


def main() -> None:
    """Time parse + setup checks over the synthetic transcript."""
    lines = build_lines()
    expected = SetupExpectations("claude-haiku-4-5", ("Glob", "Grep", "Read"), None)
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        transcript = parse_transcript(lines)
        check_setup(transcript, expected, ("Read", "Grep", "Glob"))
        timings.append(time.perf_counter() - start)
    size = sum(len(line) + 1 for line in lines)
    print(f"{size / 1048576:.2f} MiB, {len(lines)} lines: best {min(timings) * 1000:.1f} ms of 5")


if __name__ == "__main__":
    main()
