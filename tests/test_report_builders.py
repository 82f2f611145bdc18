"""Hand-built minimal-study ledgers and adjudication companions for the report tests.

The builders write what the runners write: CLI observations validate against
``protocol.records.CliObservation`` (checked below), HTTP observations carry the fields the
HTTP transport records (and no ``chargedUsd`` when asked), companions validate against
``protocol.adjudication.MinimalAdjudication``. Every answer is the private marker
``ANSWER_MARKER`` so a test can prove the report never prints it.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.pricing.cost import CacheWrites, ModelTokens, compute_cost
from agentstudy.pricing.table import price_entry
from agentstudy.protocol.adjudication import RUBRIC_SCORES, MinimalAdjudication
from agentstudy.protocol.controlled.hashing import sha256_normalized_v1
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.records import MinimalLedger

ANSWER_MARKER = "PRIVATE-ANSWER-TEXT-7f3a"
MODEL = "claude-haiku-5-5"
TASKS = ("t1-discovery", "t2-architecture", "t3-discovery", "t4-architecture", "t5-documentation",
         "t6-architecture")


def cli_obs(task: str, scenario: str, rep: int, *, status: str = "completed", input_tokens: int | None = 1000,
            output_tokens: int | None = 100, tool_calls: int = 2, wall_ms: int = 1000,
            charged: float | None = None, usage_complete: bool = True, **extra: Any) -> dict[str, Any]:
    """One CLI observation; ``charged`` defaults to the list-price cost of the usage (haiku-5-5)."""
    basis: dict[str, Any] | None = None
    computed: float | None = None
    if input_tokens is not None and output_tokens is not None:
        cost = compute_cost({MODEL: ModelTokens(input_tokens, output_tokens, 0, 0)}, CacheWrites(), [input_tokens])
        basis, computed = cost.basis, float(cost.usd)
    charged_usd = charged if charged is not None else (computed if status == "completed" and computed else 0.1)
    obs: dict[str, Any] = {
        "taskId": task, "scenario": scenario, "repetition": rep, "transport": "cli",
        "cliVersion": "2.1.296 (Claude Code)", "expectedCliVersion": "2.1.296", "attemptBudgetUsd": 0.1,
        "model": MODEL, "tools": ["Glob", "Grep", "Read"], "mcp_servers": [],
        "toolCallsByName": {"Read": tool_calls} if tool_calls else {}, "toolCalls": tool_calls,
        "permissionDenials": [], "inputTokens": input_tokens, "outputTokens": output_tokens,
        "cacheCreationInputTokens": 0 if input_tokens is not None else None,
        "cacheReadInputTokens": 0 if input_tokens is not None else None, "numTurns": 3,
        "cliSubtype": "success", "isError": False, "usageComplete": usage_complete, "toolErrorsByName": {},
        "cliReportedCostUsd": computed, "computedCostUsd": computed, "costBasis": basis,
        "reservedUsd": 0.1, "chargedUsd": charged_usd, "cumulativeCapExceeded": False, "exitCode": 0,
        "wallTimeMs": wall_ms, "status": status, "answer": ANSWER_MARKER if status == "completed" else "",
        "correctness": None, "adjudication": "pending",
    }
    if scenario == "doc-bridge-mcp" and tool_calls:
        obs["treatment"] = treatment(tool_calls)
    obs.update(extra)
    return obs


def treatment(server_calls: int, errors: int = 0, *, first_request: int | None = None) -> dict[str, Any]:
    """A treatment arm's record (issue 28): the server offered and called ``server_calls`` times."""
    return {"server": "doc-bridge", "serverOffered": True, "offeredServerTools": ["doc_search", "doc_get"],
            "evidence": "init", "serverCallsByTool": {"doc_search": server_calls} if server_calls else {},
            "serverCalls": server_calls, "serverCallErrors": errors, "emptyResults": 0,
            "resultBytes": 100 * server_calls, "allCallsFailed": bool(server_calls) and errors == server_calls,
            "answeringModels": [MODEL], "firstRequestInputTokens": first_request}


def http_obs(task: str, scenario: str, rep: int, *, status: str = "completed", input_tokens: int = 1000,
             output_tokens: int = 100, tool_calls: int = 2, wall_ms: int = 1000, charged: float | None = None,
             usage_complete: bool = True) -> dict[str, Any]:
    """One HTTP observation as the HTTP transport records it (``chargedUsd`` only when given)."""
    obs: dict[str, Any] = {
        "taskId": task, "scenario": scenario, "repetition": rep, "transport": "http",
        "inputTokens": input_tokens, "outputTokens": output_tokens, "usageComplete": usage_complete,
        "toolCalls": tool_calls, "toolCallsByName": {"read_file": tool_calls}, "wallTimeMs": wall_ms,
        "status": status, "answer": ANSWER_MARKER, "correctness": None, "adjudication": "pending",
    }
    if charged is not None:
        obs["chargedUsd"] = charged
    return obs


def ledger(observations: list[dict[str, Any]], *, mode: str = "full", status: str = "awaiting-adjudication",
           planned: int | None = None, cap: float = 5.0, spent: float | None = None, transport: str = "cli",
           rehearsal: bool = False, **extra: Any) -> dict[str, Any]:
    """A minimal-study ledger around ``observations`` (``spent`` defaults to the sum of charges)."""
    charges = [Decimal(repr(o.get("chargedUsd", 0.0))) for o in observations
               if isinstance(o.get("chargedUsd", 0.0), float | int)]
    total = float(sum(charges, Decimal(0))) if spent is None else spent
    document: dict[str, Any] = {
        "version": "minimal-study-v1", "protocolHash": "a" * 64, "manifestSha256": "b" * 64,
        "runnerHash": "c" * 64, "engineRevision": "d" * 40, "engineBundleHash": "e" * 64,
        "repositories": {"repo-one": "1" * 40}, "transport": transport, "model": MODEL,
        "mcpServer": {"name": "doc-bridge", "command": ["server"], "listedTools": ["doc.search"], "deniedTools": []},
        "rehearsal": rehearsal, "adjudication": {"method": "agent", "humanReview": False}, "mode": mode,
        "plannedAttempts": planned if planned is not None else len(observations),
        "budget": {"cap": cap, "spent": total, "reserved": 0.1 * len(observations), "measured": total,
                   "cumulativeCapExceeded": False},
        "observations": observations, "startedAt": "2026-11-30T00:00:00.000Z",
        "finishedAt": "2026-11-30T01:00:00.000Z", "status": status,
    }
    if transport == "cli":
        document["cli"] = {"cliVersion": "2.1.296 (Claude Code)", "expectedCliVersion": "2.1.296",
                           "attemptBudgetUsd": 0.1, "prices": price_entry(MODEL)}
    document.update(extra)
    return document


def write(path: Path, document: dict[str, Any]) -> bytes:
    """Write ``document`` as the ledger store does (sealed with its hashes, 2-space JSON + newline); the bytes.

    A consistent hand-built ledger then verifies; tests of inconsistent ones read them with
    ``allow_unverified``.
    """
    if isinstance(document.get("observations"), list) and "type" not in document:
        document = seal_ledger(document)
    data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    path.write_bytes(data)
    return data


def companion(ledger_bytes: bytes, outcomes: dict[int, str | None], **extra: Any) -> dict[str, Any]:
    """A companion scoring observation ``index`` with a rubric (``None``: pending); others are missing."""
    observations = json.loads(ledger_bytes)["observations"]
    items = []
    for index, rubric in outcomes.items():
        obs = observations[index]
        item: dict[str, Any] = {
            "itemId": f"item-{index:03d}", "observationIndex": index, "taskId": obs["taskId"],
            "repetition": obs["repetition"], "status": "pending" if rubric is None else "scored",
            "citations": {"total": 0, "valid": 0, "failures": []}, "adjudicatorModel": MODEL,
            "attemptStatus": "completed", "chargedUsd": 0.001, "reason": "quotes " + ANSWER_MARKER,
        }
        if rubric is None:
            item["pendingReason"] = "the adjudicator's reply was not valid JSON"
        else:
            item.update(rubric=rubric, score=RUBRIC_SCORES[rubric])
        items.append(item)
    missing = [{"observationIndex": i, "taskId": o["taskId"], "repetition": o["repetition"], "status": o["status"]}
               for i, o in enumerate(observations) if o["status"] != "completed"]
    document: dict[str, Any] = {
        "type": "minimal-study-adjudication", "version": 1,
        "ledgerSha256": hashlib.sha256(ledger_bytes).hexdigest(), "method": "agent", "humanReview": False,
        "adjudicator": {"model": MODEL}, "blinding": {"scenario": "hidden"},
        "budget": {"cap": 1.0, "spent": 0.001 * len(items), "reserved": 0.0, "measured": 0.001 * len(items),
                   "cumulativeCapExceeded": False},
        "items": items, "missing": missing, "status": "adjudicated", "startedAt": "2026-11-30T02:00:00.000Z",
        "finishedAt": "2026-11-30T02:10:00.000Z",
    }
    document.update(extra)
    return sealed(document)


def sealed(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its ``adjudicationHash`` recomputed, as the adjudicator writes a companion: the
    ``sha256-normalized-v1`` hash of everything but the hash itself."""
    document["adjudicationHash"] = sha256_normalized_v1({k: v for k, v in document.items()
                                                         if k != "adjudicationHash"})
    return document


def full_study(rows: list[tuple[int, int, int, int, float, float]] | None = None) -> list[dict[str, Any]]:
    """36 CLI observations in the protocol's counterbalanced order; ``rows[k]`` gives pair k's
    ``(R input, D input, R tools, D tools, R charged, D charged)``."""
    observations = []
    for t, task in enumerate(TASKS):
        for r in range(3):
            k = 3 * t + r
            ri, di, rt, dt, rc, dc = rows[k] if rows else (1000 + 10 * k, 900 + 10 * k, 4, 2, 0.002, 0.001)
            pair = [cli_obs(task, "repository-only", r + 1, input_tokens=ri, tool_calls=rt, charged=rc,
                            wall_ms=2000 + k),
                    cli_obs(task, "doc-bridge-mcp", r + 1, input_tokens=di, tool_calls=dt, charged=dc,
                            wall_ms=1500 + k)]
            observations.extend(pair if (t + r) % 2 == 0 else pair[::-1])
    return observations


def test_cli_observations_and_ledgers_are_what_the_runner_writes() -> None:
    document = ledger(full_study())
    parsed = MinimalLedger.model_validate(document)
    assert len(parsed.observations) == 36
    blocked = cli_obs("t1", "repository-only", 1, status="invalid-setup", setupProblem="tool Bash outside the set")
    MinimalLedger.model_validate(ledger([blocked], status="blocked", stopReason="attempt 1 ended invalid-setup"))


def test_companions_are_valid_adjudication_records(tmp_path: Path) -> None:
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    record = MinimalAdjudication.model_validate(companion(data, {0: "correct", 1: None}))
    assert record.ledger_sha256 == hashlib.sha256(data).hexdigest()
    assert [item.status for item in record.items] == ["scored", "pending"]


def markdown_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """The Markdown report's tables by caption: each row as ``{header: cell}`` (escapes undone)."""
    lines = text.splitlines()
    tables: dict[str, list[dict[str, str]]] = {}
    for number, line in enumerate(lines):
        if line.startswith("**") and number + 2 < len(lines) and lines[number + 2].startswith("| "):
            caption = unescape_md(line[2:-2])
            header = split_md_row(lines[number + 2])
            rows = []
            for row in lines[number + 4:]:
                if not row.startswith("| "):
                    break
                rows.append(dict(zip(header, split_md_row(row), strict=True)))
            tables[caption] = rows
    return tables


def split_md_row(line: str) -> list[str]:
    """The cells of one Markdown table row (``\\|`` is a literal bar)."""
    cells, current, escaped = [], "", False
    for ch in line.strip()[1:-1]:
        if escaped:
            current += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "|":
            cells.append(current.strip())
            current = ""
        else:
            current += ch
    cells.append(current.strip())
    return cells


def unescape_md(text: str) -> str:
    """Undo the report's backslash escapes."""
    out, escaped = "", False
    for ch in text:
        if escaped or ch != "\\":
            out += ch
            escaped = False
        else:
            escaped = True
    return out
