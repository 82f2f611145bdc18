"""A large, valid minimal-study ledger for the scale benchmark: many tasks x repetitions x 2 arms.

``python -m bench.large_ledger OUT --observations N`` writes a completed CLI ledger of ``N``
observations (``N / 20`` tasks x 10 repetitions x 2 arms, counterbalanced order), sealed with the
project's own hashes (:func:`agentstudy.protocol.ledger_integrity.seal_ledger`) so
``agentstudy ledger OUT`` verifies it. Token counts, tool calls and wall times vary by task and
repetition from a seeded generator, so every metric has task and repetition variance; each
observation's charge is its list-price cost (haiku-5-5).
"""

from __future__ import annotations

import argparse
import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.pricing.cost import CacheWrites, ModelTokens, compute_cost
from agentstudy.pricing.table import price_entry
from agentstudy.protocol.ledger_integrity import seal_ledger

MODEL = "claude-haiku-5-5"
ARMS = ("repository-only", "doc-bridge-mcp")
REPETITIONS = 10


def observation(task: str, scenario: str, rep: int, input_tokens: int, output_tokens: int, tool_calls: int,
                wall_ms: int) -> dict[str, Any]:
    """One completed CLI observation as the CLI runner records it, charged its list-price cost."""
    cost = compute_cost({MODEL: ModelTokens(input_tokens, output_tokens, 0, 0)}, CacheWrites(), [input_tokens])
    computed = float(cost.usd)
    return {
        "taskId": task, "scenario": scenario, "repetition": rep, "transport": "cli",
        "cliVersion": "2.1.296 (Claude Code)", "expectedCliVersion": "2.1.296", "attemptBudgetUsd": 0.1,
        "model": MODEL, "tools": ["Glob", "Grep", "Read"], "mcp_servers": [],
        "toolCallsByName": {"Read": tool_calls} if tool_calls else {}, "toolCalls": tool_calls,
        "permissionDenials": [], "inputTokens": input_tokens, "outputTokens": output_tokens,
        "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0, "numTurns": 3,
        "cliSubtype": "success", "isError": False, "usageComplete": True, "toolErrorsByName": {},
        "cliReportedCostUsd": computed, "computedCostUsd": computed, "costBasis": cost.basis,
        "reservedUsd": 0.1, "chargedUsd": computed, "cumulativeCapExceeded": False, "exitCode": 0,
        "wallTimeMs": wall_ms, "status": "completed", "answer": f"answer to {task} #{rep}",
        "correctness": None, "adjudication": "pending",
    }


def observations(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` observations (a multiple of ``2 * REPETITIONS``): tasks x repetitions x arms, each
    pair's order alternating (counterbalanced); the treatment arm uses about 10 % fewer tokens."""
    if count <= 0 or count % (2 * REPETITIONS):
        raise ValueError(f"the observation count must be a positive multiple of {2 * REPETITIONS}")
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for t in range(count // (2 * REPETITIONS)):
        task = f"t{t + 1:05d}-discovery"
        base = rng.randint(2_000, 40_000)
        for r in range(1, REPETITIONS + 1):
            pair = []
            for a, arm in enumerate(ARMS):
                tokens = int(base * (1.0 - 0.1 * a) * rng.uniform(0.8, 1.2))
                pair.append(observation(task, arm, r, tokens, rng.randint(100, 2_000),
                                        rng.randint(1, 12) - a, rng.randint(5_000, 90_000)))
            out.extend(pair if (t + r) % 2 == 0 else pair[::-1])
    return out


def large_ledger(count: int, seed: int = 7) -> dict[str, Any]:
    """A sealed, completed (``awaiting-adjudication``) minimal-study ledger of ``count`` observations."""
    obs = observations(count, seed)
    spent = float(sum((Decimal(repr(o["chargedUsd"])) for o in obs), Decimal(0)))
    document: dict[str, Any] = {
        "version": "minimal-study-v1", "protocolHash": "a" * 64, "manifestSha256": "b" * 64,
        "runnerHash": "c" * 64, "engineRevision": "d" * 40, "engineBundleHash": "e" * 64,
        "repositories": {"repo-one": "1" * 40}, "transport": "cli", "model": MODEL,
        "mcpServer": {"name": "doc-bridge", "command": ["server"], "listedTools": ["doc.search"], "deniedTools": []},
        "rehearsal": False, "adjudication": {"method": "agent", "humanReview": False}, "mode": "full",
        "plannedAttempts": len(obs),
        "budget": {"cap": max(1.0, 2 * spent), "spent": spent, "reserved": 0.1 * len(obs), "measured": spent,
                   "cumulativeCapExceeded": False},
        "observations": obs, "startedAt": "2026-11-30T00:00:00.000Z",
        "finishedAt": "2026-11-30T01:00:00.000Z", "status": "awaiting-adjudication",
        "cli": {"cliVersion": "2.1.296 (Claude Code)", "expectedCliVersion": "2.1.296",
                "attemptBudgetUsd": 0.1, "prices": price_entry(MODEL)},
    }
    return seal_ledger(document)


def write_large_ledger(path: Path, count: int, seed: int = 7) -> int:
    """Write the ledger of :func:`large_ledger` as the ledger store does (2-space JSON + newline); bytes written."""
    data = (json.dumps(large_ledger(count, seed), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    path.write_bytes(data)
    return len(data)


def main() -> None:
    """Command line: ``python -m bench.large_ledger OUT --observations N``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--observations", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    size = write_large_ledger(args.out, args.observations, args.seed)
    print(f"{args.out}: {args.observations} observations, {size} bytes")


if __name__ == "__main__":
    main()
